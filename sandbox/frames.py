"""Frames between the parent and the zygote or a child: encoding inputs, reading and decoding
result frames within a budget, and the pipe and socket plumbing (see ``docs/sandbox.md``)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import utdebug.sandbox._runner as _runner
from utdebug.sandbox.config import ModuleContext, StagedTest
from utdebug.sandbox.outcomes import (
    BatchResult,
    Outcome,
    Raised,
    Status,
    _error_pair,
    _short,
    _violation,
)
from utdebug.sandbox.values import EnumMember, IterOf, SourceFunction, stand_in


class EncodedInputs(tuple[str, ...]):
    """Inputs encoded once (JSON text per input); decoded afresh in the child for every call."""

    __slots__ = ()


def _enum_form(v: EnumMember, depth: int, enc: Callable[[Any, int], Any]) -> Any:
    return {"$enum": [v.module, v.name, v.member]}


def _function_form(v: SourceFunction, depth: int, enc: Callable[[Any, int], Any]) -> Any:
    return {"$fn": [v.source, v.name, v.module]}


def _iterator_form(v: IterOf, depth: int, enc: Callable[[Any, int], Any]) -> Any:
    return {"$iter": [v.form, [enc(x, depth) for x in v.items]]}


# inputs the child re-creates: an enum member from its module, a function from its source,
# an iterator from a list
_runner.INPUT_FORMS.update(
    {EnumMember: _enum_form, SourceFunction: _function_form, IterOf: _iterator_form}
)


def encode_inputs(inputs: Sequence[Sequence[Any]]) -> EncodedInputs:
    if isinstance(inputs, EncodedInputs):
        return inputs
    dump, enc = _runner.dumps, _runner.encode  # compact, ASCII, no NaN: as json.dumps would
    return EncodedInputs(dump(enc(list(args))) for args in inputs)


def decode_value(data: object, budget: _runner.Budget | None = None) -> Any:
    """Decode a tagged value; ``budget`` bounds what a result from a child may cost."""
    return _runner.decode(data, stand_in, budget)


DECODE_FACTOR = 32
"""Decoding a result frame may allocate at most this many times its bytes (plus
DECODE_FLOOR) in the parent; parsing its JSON costs at most about as much again."""


DECODE_FLOOR = 1 << 20


BATCH_DECODE = DECODE_FACTOR * (16 << 20) + DECODE_FLOOR
"""What the decoded results of one batch may hold in the parent, in all: as much as one
result of the largest frame (16 MiB) may. Each ``ok`` result books what its decoding
charged (containers, arrays, big ints: their sizes) plus LEAF_FACTOR x its frame's bytes
(the numbers and strings of the parsed JSON); once the batch's is spent, later values are
``OutputTooLarge`` errors, and are not kept."""


LEAF_FACTOR = 8


_gc_lock = threading.Lock()


_gc_pauses = [0, False]  # decoders in flight; whether the collector was on before the first


def _gc_pause() -> None:
    """No cyclic garbage collection while a frame is parsed and decoded (until the matching
    :func:`_gc_resume`).

    A frame of millions of small containers otherwise triggers collection after collection
    (each scanning everything the process holds), making the parse many times slower while
    it holds the GIL. Threads share the pause; the last one out restores the collector.
    """
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1


def _gc_resume() -> None:
    with _gc_lock:
        _gc_pauses[0] -= 1
        if _gc_pauses[0] == 0 and _gc_pauses[1]:
            gc.enable()


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """:func:`_gc_pause` for the ``with`` block."""
    _gc_pause()
    try:
        yield
    finally:
        _gc_resume()


def read_frame(frame: bytes) -> dict[str, Any]:
    """The JSON object of one result frame; ValueError (or RecursionError) for anything else."""
    # strict UTF-8 (a UnicodeDecodeError is a ValueError), one JSON value, nothing around it
    msg = _runner.loads(frame.decode("utf-8"))
    if not isinstance(msg, dict):
        raise ValueError("a frame that is not a JSON object")
    return msg


def decode_frame(frame: bytes, deadline: float | None = None) -> Outcome:
    """What one forged or real ``r`` frame turns into in the parent (parse, then decode under
    the frame's budget and the input's ``deadline``), as :meth:`Sandbox.run` does it."""
    with _gc_paused():
        try:
            msg = read_frame(frame)
        except (ValueError, RecursionError, MemoryError) as e:
            return _violation(f"unreadable frame ({type(e).__name__})")
        return _outcome(msg, len(frame), deadline)


_RECV_CAP = 1 << 20


_READ_SMALL = 1 << 16


_FACTS = frozenset(("f", "x"))
"""Frame kinds a test with setup sends while an input runs: an assertion's facts (``f``),
a stage that raised (``x``)."""


MAX_FACTS = 100_000
"""Assertion facts one input may send."""


_GC_SMALL = 4096
"""Frames up to this size are parsed without pausing the garbage collector (too few
containers to set it off more than once)."""


def _program_frame(
    code: str, entry: str, context: ModuleContext | None, test: StagedTest | None
) -> bytes:
    """The program, its entry point, its module context and its test with setup: the first
    frame on the child's input pipe, read by the child alone after the fork (never by the
    zygote)."""
    doc: dict[str, Any] = {"code": code, "entry_point": entry}
    if context is not None:
        doc["context"] = context.to_json()
    if test is not None:
        doc["test"] = test.to_json()
    return json.dumps(doc).encode("ascii")


class _Feed:
    """The child's inputs, sent one at a time on its input pipe (non-blocking: a child that
    does not read cannot stall the parent)."""

    __slots__ = ("enc", "fd", "pending")

    def __init__(self, fd: int, enc: EncodedInputs) -> None:
        self.fd, self.enc, self.pending = fd, enc, memoryview(b"")
        os.set_blocking(fd, False)

    def send(self, i: int) -> bool:
        """Queue input ``i`` and write what the pipe takes now; True when all is written."""
        return self.queue(self.enc[i].encode("utf-8"))

    def queue(self, data: bytes) -> bool:
        """Queue one frame (4-byte length + ``data``) and write what the pipe takes now."""
        self.pending = memoryview(len(data).to_bytes(4, "big") + data)
        return self.flush()

    def flush(self) -> bool:
        try:
            while self.pending:
                self.pending = self.pending[os.write(self.fd, self.pending) :]
        except BlockingIOError:
            return False
        except OSError:  # the child is gone: its result pipe says so
            self.pending = memoryview(b"")
        return True


def _outcome(
    msg: dict[str, Any],
    nbytes: int = 0,
    deadline: float | None = None,
    batch: BatchResult | None = None,
    clock: Callable[[], float] = time.monotonic,
    cost_end: float | None = None,
) -> Outcome:
    """The Outcome of a result frame's object; its value is decoded within a budget of
    DECODE_FACTOR x ``nbytes`` (the frame's size) + DECODE_FLOOR bytes, until ``deadline``
    on ``clock`` and ``cost_end`` on this thread's CPU clock (the parent's share).
    The decoded values of one ``batch`` stay in its result: together they may hold at most
    :data:`BATCH_DECODE` bytes (each booked at its frame's budget)."""
    t = msg.get("t", 0.0)
    if type(t) not in (int, float) or not 0 <= t < 1e9:
        return _violation("malformed time in a result")
    s = msg.get("s")
    if s == "ok":
        leaves = LEAF_FACTOR * nbytes  # the numbers and strings a parsed frame holds, at most
        if batch is not None and batch.decoded_bytes + leaves > BATCH_DECODE:
            return _batch_full(nbytes, t)
        budget = _runner.Budget(DECODE_FACTOR * nbytes + DECODE_FLOOR, deadline, clock, cost_end)
        try:
            value = decode_value(msg.get("v"), budget)
            if batch is not None:
                held = leaves + budget.total - budget.left
                if batch.decoded_bytes + held > BATCH_DECODE:
                    return _batch_full(nbytes, t)
                batch.decoded_bytes += held
            return Outcome(Status.OK, value, seconds=t)
        except _runner.OverBudget as e:
            return Outcome(
                Status.ERROR, None, "OutputTooLarge", f"{e} (its frame: {nbytes} bytes)", t
            )
        except _runner.DecodeTimeout:
            why = "decoding the result passed the input's deadline (decoding counts in its time)"
            return Outcome(Status.TIMEOUT, None, "Timeout", why, t)
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError, OverflowError) as e:
            return _violation(f"undecodable result ({type(e).__name__}: {str(e)[:200]})")
    if s == "timeout":
        why = (
            "timed out at the reduced limit (after earlier timeouts)"
            if msg.get("c")
            else ("timed out")
        )
        return Outcome(Status.TIMEOUT, None, "Timeout", why, t)
    if s == "exc" and isinstance(msg.get("e"), list) and len(msg["e"]) == 2:
        etype, emsg = _error_pair(msg["e"])
        return Outcome(Status.ERROR, None, etype, emsg, t, Raised.of(msg.get("x")))
    return _violation(f"malformed result status {_short(s, 50)}")


def _batch_full(nbytes: int, t: float) -> Outcome:
    why = (
        f"the batch's results would hold more than {BATCH_DECODE} bytes in the parent "
        f"(this one's frame: {nbytes} bytes)"
    )
    return Outcome(Status.ERROR, None, "OutputTooLarge", why, t)


class _Oversize(Exception):
    pass


def _pump(poller: select.poll, fd: int, buf: bytearray, feed: _Feed | None, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the child's result pipe (and for room in its input
    pipe while an input is only partly written); add what arrived to ``buf``. False once the
    result pipe has ended (the child is gone)."""
    for efd, _ in poller.poll(timeout * 1000):
        if efd == fd:
            chunk = os.read(fd, _want(buf))
            if not chunk:
                return False
            buf += chunk
        elif feed is not None and feed.flush():
            poller.unregister(feed.fd)
    return True


def _want(buf: bytearray) -> int:
    """How many bytes to ask the result pipe for: 64 KiB, or the rest of a larger frame whose
    header is here (at most _RECV_CAP). Asking for more than a frame needs costs an allocation
    of that size per read, which the allocator maps and unmaps (page faults on every frame)."""
    if len(buf) >= 4:
        left = int.from_bytes(buf[:4], "big") + 4 - len(buf)
        if left > _READ_SMALL:
            return min(left, _RECV_CAP)
    return _READ_SMALL


def _take_frame(buf: bytearray, cap: int) -> bytes | None:
    if len(buf) < 4:
        return None
    size = int.from_bytes(buf[:4], "big")
    if size > cap + 4096:
        raise _Oversize(f"a result frame of {size} bytes exceeds the {cap}-byte cap")
    if len(buf) < 4 + size:
        return None
    if size <= _READ_SMALL:
        frame = bytes(buf[4 : 4 + size])
    else:
        with memoryview(buf) as view:  # one copy of a large frame, not two
            frame = bytes(view[4 : 4 + size])
    del buf[: 4 + size]
    return frame


def _send(sock: socket.socket, obj: object) -> None:
    sock.sendall(_runner.pack(obj))


def _recv(sock: socket.socket) -> dict[str, Any]:
    head = _recv_exact(sock, 4)
    return _frame_body(head, sock)


def _frame_body(head: bytes, sock: socket.socket) -> dict[str, Any]:
    if len(head) < 4:
        head += _recv_exact(sock, 4 - len(head))
    size = int.from_bytes(head[:4], "big")
    body = head[4:]
    if len(body) < size:
        body += _recv_exact(sock, size - len(body))
    out = json.loads(body)
    if not isinstance(out, dict):
        raise ValueError("bad reply from the zygote")
    return out


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = _runner._recv_exact(sock, n)
    if data is None:
        raise ValueError("the zygote closed the connection")
    return data
