"""A local OpenAI-compatible chat server on loopback: a laptop's llama.cpp or Ollama, in miniature.

``LLMServer`` listens on loopback and answers ``POST /v1/chat/completions`` (plain JSON, or
server-sent events with ``"stream": true``), ``GET /v1/models``, ``GET /props`` and
``GET /slots`` (llama.cpp's, when ``expose_slots``) and ``GET /health``. Like llama.cpp's
server it accepts every connection but generates for at most ``slots`` requests at once, in
arrival order; the others wait in its queue. It ignores ``n`` (one choice per request) unless
``honour_n``. It continues a final assistant message only when ``continues_prefill``; else
it answers it as a new turn, as llama-cpp-python's server does.

Replies come from ``responder(body) -> str`` (default :func:`engine_responder`, which answers
utdebug's own prompts), are cut into tokens of about 4 characters, and are generated at
``seconds_per_token`` (plus ``seconds_per_request`` once per request, after the slot is
taken; a streamed reply pauses ``stall_seconds`` before token ``stall_at``). ``statuses``
are HTTP error codes to answer first, one per request (429/503 get a ``Retry-After: 0``).
``drops`` are token counts, one per request in arrival order (``None``: not cut): that
request's connection is cut after sending that many tokens of its reply (a streamed reply
stops without its last chunk; an unstreamed one gets no response at all), as a network or a
proxy that drops a connection while the model answers.
``stop()`` closes the listening socket and drops requests in progress (a server stopped
mid-run); ``start()`` serves again on the same port.

``owned_by`` is what ``/v1/models`` says owns the model (``"llamacpp"`` for llama.cpp's
``llama-server``, ``"me"`` for llama-cpp-python's server; ``None``: not said). With
``interrupts`` the server behaves like llama-cpp-python's (its ``interrupt_requests``, on by
default): a request that arrives while another is generating makes that stream end at once,
with ``finish_reason: "stop"`` and whatever it had sent (``interrupted`` counts them).
:func:`llama_cpp_python` and :func:`llama_server` make the two.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Responder = Callable[[dict[str, Any]], str]


def engine_responder(body: dict[str, Any]) -> str:
    """Plausible replies to utdebug's prompts: the prefill probe counted on, a test ``f(1)``
    returning 1, votes ``1``, and an edit that returns the code it was given (the first
    assistant turn's fenced code)."""
    messages = body.get("messages") or []
    first = str(messages[0].get("content", "")) if messages else ""
    last = messages[-1] if messages else {}
    if first.startswith("Count from 1 to 10"):  # the client's prefill probe
        return " 5, 6, 7, 8, 9, 10" if last.get("role") == "assistant" else "1, 2, 3, 4, 5, 6"
    m = re.search(r"Python function `([A-Za-z_]\w*)\(", first)
    entry = m.group(1) if m else "f"
    if last.get("role") == "assistant":  # a prefilled vote: continue after "### Output"
        return "The function returns 1.\nOutput: ```1```"
    if "A user calls this function with the input" in first:
        return "It returns 1.\nOutput: ```1```"
    if "Respond in the format below" in first:
        return (
            "## Hypothesis\nSmall inputs.\n\n## Unit Test\n\n### Input Arguments\n"
            f"Arguments: ```{entry}(1)```\n\n### Output\nOutput: ```1```"
        )
    if len(messages) >= 2 and messages[1].get("role") == "assistant":  # a debugging chat
        given = str(messages[1].get("content", ""))
        code = re.search(r"```(?:python)?\n(.*?)```", given, re.DOTALL)
        text = code.group(1) if code else given
        return f"```python\n{text}```"
    return "OK"


class _Dropped(Exception):
    """The connection of the request being answered is cut (``drops``)."""


def _tokens(text: str) -> list[str]:
    return [text[i : i + 4] for i in range(0, len(text), 4)] or [""]


@dataclass(eq=False, kw_only=True)
class Behaviour:
    """How a :class:`LLMServer` behaves (see the module's docstring for each knob)."""

    slots: int = 1
    seconds_per_request: float = 0.0
    seconds_per_token: float = 0.0
    responder: Responder = engine_responder
    continues_prefill: bool = True
    expose_slots: bool = True
    honour_n: bool = False
    model: str = "stub-model"
    stall_at: int | None = None
    stall_seconds: float = 0.0
    owned_by: str | None = None
    interrupts: bool = False


@dataclass(eq=False, kw_only=True)
class LLMServer(Behaviour):
    """The server: started on construction, on a free loopback port."""

    def __post_init__(self) -> None:
        self.interrupted = 0
        """Replies cut short because another request arrived (``interrupts``)."""
        self._interrupt = threading.Event()
        self.statuses: list[int] = []
        self.drops: list[int | None] = []
        self.dropped = 0
        """Connections cut mid-answer (``drops``)."""
        self.bodies: list[dict[str, Any]] = []
        """Every completion request received, in arrival order."""
        self.served = 0
        self.busy_seconds = 0.0
        """Seconds spent generating, summed over requests (with one slot: the serial bound)."""
        self.tokens_sent = 0
        """Tokens streamed to clients (a client that closes early gets fewer)."""
        self.active = 0
        self.max_active = 0
        """Most requests generating at once (never more than ``slots``)."""
        self.max_open = 0
        """Most completion requests open at once (generating or queued)."""
        self._open = 0
        self._lock = threading.Lock()
        self._queue: list[int] = []
        self._turn = threading.Condition(self._lock)
        self._ticket = 0
        self._stopped = threading.Event()
        self._conns: set[socket.socket] = set()
        self._srv: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.start()

    # --- life cycle ------------------------------------------------------------------------

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                server._get(self)

            def do_POST(self) -> None:
                server._post(self)

            def log_message(self, *args: object) -> None:
                pass

        class Srv(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._stopped.clear()
        self._srv = Srv(("127.0.0.1", self.port), Handler)
        self.port = self._srv.server_address[1]
        self._thread = threading.Thread(target=self._srv.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and drop the requests in progress (their connections are closed)."""
        self._stopped.set()
        if self._srv is not None:
            self._srv.shutdown()
            self._srv.server_close()
            self._srv = None
        with self._lock:
            conns = list(self._conns)
            self._turn.notify_all()
        for conn in conns:  # like a killed process: its connections are cut
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> LLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- handlers --------------------------------------------------------------------------

    def _send_json(self, h: http.server.BaseHTTPRequestHandler, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        if status in (429, 503):
            h.send_header("Retry-After", "0")
        h.end_headers()
        h.wfile.write(raw)

    def _get(self, h: http.server.BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            entry: dict[str, Any] = {"id": self.model, "object": "model"}
            if self.owned_by is not None:
                entry["owned_by"] = self.owned_by
            self._send_json(h, 200, {"object": "list", "data": [entry]})
        elif path == "/health":
            self._send_json(h, 200, {"status": "ok"})
        elif path == "/props" and self.expose_slots:
            self._send_json(h, 200, {"total_slots": self.slots, "model_path": self.model})
        elif path == "/slots" and self.expose_slots:
            self._send_json(h, 200, [{"id": i, "is_processing": False} for i in range(self.slots)])
        else:
            self._send_json(h, 404, {"error": {"message": "not found", "code": 404}})

    def _post(self, h: http.server.BaseHTTPRequestHandler) -> None:
        with self._lock:
            self._conns.add(h.connection)
        try:
            self._post_one(h)
        finally:
            with self._lock:
                self._conns.discard(h.connection)
            if self._stopped.is_set():
                h.close_connection = True

    def _post_one(self, h: http.server.BaseHTTPRequestHandler) -> None:
        size = int(h.headers.get("Content-Length") or 0)
        try:
            body = json.loads(h.rfile.read(size) or b"{}")
        except ValueError:
            self._send_json(h, 400, {"error": {"message": "bad json", "code": 400}})
            return
        if not h.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(h, 404, {"error": {"message": "not found", "code": 404}})
            return
        with self._lock:
            self.bodies.append(body)
            status = self.statuses.pop(0) if self.statuses else 200
            drop = self.drops.pop(0) if self.drops and status == 200 else None
        if status != 200:
            self._send_json(h, status, {"error": {"message": f"status {status}", "code": status}})
            return
        with self._lock:
            self._open += 1
            self.max_open = max(self.max_open, self._open)
        try:
            self._generate(h, body, drop)
        except _Dropped:
            with self._lock:
                self.dropped += 1
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client went away (a timeout, an early stop): stop generating
        finally:
            with self._lock:
                self._open -= 1

    def _acquire(self) -> bool:
        with self._lock:
            ticket = self._ticket
            self._ticket += 1
            self._queue.append(ticket)
            if self.interrupts and self.active >= self.slots:
                self._interrupt.set()  # the one generating stops for the newcomer
            while not self._stopped.is_set() and (
                self._queue[0] != ticket or self.active >= self.slots
            ):
                self._turn.wait(0.05)
            self._queue.remove(ticket)
            if self._stopped.is_set():
                self._turn.notify_all()
                return False
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self._interrupt.clear()
            self._turn.notify_all()
            return True

    def _release(self, since: float) -> None:
        with self._lock:
            self.busy_seconds += time.monotonic() - since
            self.active -= 1
            self.served += 1
            self._turn.notify_all()

    def _reply_text(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        text = self.responder(body)
        if messages and messages[-1].get("role") == "assistant" and not self.continues_prefill:
            # a new turn: the model restarts its answer instead of continuing the prefill
            return str(messages[-1].get("content", "")) + text
        return text

    def _generate(
        self, h: http.server.BaseHTTPRequestHandler, body: dict[str, Any], drop: int | None
    ) -> None:
        if not self._acquire():
            h.close_connection = True
            return
        since = time.monotonic()
        try:
            stream = bool(body.get("stream"))
            n = int(body.get("n") or 1) if self.honour_n else 1
            texts = [self._reply_text(body) for _ in range(n)]
            cap = body.get("max_tokens") or body.get("max_completion_tokens")
            finish = "stop"
            token_lists = [_tokens(t) for t in texts]
            if isinstance(cap, int) and any(len(t) > cap for t in token_lists):
                token_lists = [t[:cap] for t in token_lists]
                finish = "length"
            time.sleep(self.seconds_per_request)
            if self._stopped.is_set():
                return
            prompt_tokens = sum(
                len(str(m.get("content", ""))) // 4 for m in body.get("messages") or []
            )
            if stream:
                self._stream(h, token_lists, finish, prompt_tokens, drop)
            else:
                time.sleep(self.seconds_per_token * max(len(t) for t in token_lists))
                if self._stopped.is_set():
                    return
                if drop is not None:
                    raise _Dropped
                completion = sum(len(t) for t in token_lists)
                self._send_json(
                    h,
                    200,
                    {
                        "id": "cmpl-stub",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": self.model,
                        "choices": [
                            {
                                "index": i,
                                "message": {"role": "assistant", "content": "".join(toks)},
                                "finish_reason": finish,
                            }
                            for i, toks in enumerate(token_lists)
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": completion,
                            "total_tokens": prompt_tokens + completion,
                        },
                    },
                )
        finally:
            self._release(since)

    def _stream(
        self,
        h: http.server.BaseHTTPRequestHandler,
        token_lists: list[list[str]],
        finish: str,
        prompt_tokens: int,
        drop: int | None = None,
    ) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True

        def write(raw: bytes) -> None:  # one HTTP chunk; a stopped server never sends the last
            h.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            h.wfile.flush()

        def event(data: Any) -> None:
            write(f"data: {json.dumps(data)}\n\n".encode())

        def chunk(choices: list[dict[str, Any]], usage: Any = None) -> dict[str, Any]:
            out: dict[str, Any] = {
                "id": "cmpl-stub",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": self.model,
                "choices": choices,
            }
            if usage is not None:
                out["usage"] = usage
            return out

        longest = max(len(t) for t in token_lists)
        sent = [0] * len(token_lists)
        for j in range(longest):
            if self._stopped.is_set():
                raise ConnectionResetError("server stopped")
            if drop is not None and j >= drop:
                raise _Dropped
            if self._interrupt.is_set():
                with self._lock:
                    self.interrupted += 1
                finish = "stop"  # as llama-cpp-python says it: the reply just ends
                break
            time.sleep(self.seconds_per_token)
            if self.stall_at is not None and j == self.stall_at:
                time.sleep(self.stall_seconds)
            choices = []
            for i, toks in enumerate(token_lists):
                if j < len(toks):
                    sent[i] += 1
                    delta: dict[str, Any] = {"content": toks[j]}
                    if j == 0:
                        delta["role"] = "assistant"
                    choices.append({"index": i, "delta": delta, "finish_reason": None})
            event(chunk(choices))
            with self._lock:
                self.tokens_sent += len(choices)
        completion = sum(sent)
        event(
            chunk(
                [
                    {"index": i, "delta": {}, "finish_reason": finish}
                    for i in range(len(token_lists))
                ],
                {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion,
                    "total_tokens": prompt_tokens + completion,
                },
            )
        )
        write(b"data: [DONE]\n\n")
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()


def llama_cpp_python(**kw: Any) -> LLMServer:
    """A stub of llama-cpp-python's server (``python -m llama_cpp.server``) at its defaults:
    one request generated at a time, a second one interrupts it, no ``/props`` or ``/slots``,
    ``owned_by: "me"`` in ``/v1/models``, a new turn for an assistant prefill."""
    kw.setdefault("continues_prefill", False)
    return LLMServer(slots=1, expose_slots=False, owned_by="me", interrupts=True, **kw)


def llama_server(slots: int = 1, **kw: Any) -> LLMServer:
    """A stub of llama.cpp's ``llama-server``: ``slots`` in ``/props``, ``owned_by:
    "llamacpp"``."""
    return LLMServer(slots=slots, expose_slots=True, owned_by="llamacpp", **kw)


def free_port() -> int:
    """A loopback port nothing listens on (for an unreachable server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
