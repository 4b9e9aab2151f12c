"""Run many independent jobs here (threads over one sandbox) or on a Ray cluster.

:func:`make_pool` gives a :class:`JobPool`; its :meth:`~JobPool.map` runs a module-level
function on every job and yields ``(job, result)`` pairs as they finish (any order). The
function receives a :class:`WorkerContext`: the sandbox of the process it runs in and a slot
per model endpoint.

- **Local** (``address=None``): a thread pool in this process over one shared
  :class:`~utdebug.sandbox.Sandbox` (started on first use, closed with the pool). Nothing to
  install or start.
- **Ray** (``"auto"``, ``"local-cluster"``, ``"host:port"``, ``"ray://host:port"``): every job is
  a Ray task (one CPU each). Each Ray worker process builds its own ``Sandbox`` from
  :attr:`PoolOptions.sandbox` on first use and keeps it for the next tasks; it is closed
  when the process ends. Results travel back to the driver, the process that called
  :meth:`~JobPool.map`, which alone writes anything (run records are never written by
  workers). A task whose worker process or node died is run again by Ray
  (``max_retries``); it is still yielded once.

Jobs are identified by their **position** in the sequence given to ``map``: each position is
yielded exactly once, whatever Ray retried. Callers that resume runs key their jobs
themselves (``benchmarks.evaluator.EvalJob.key``) and skip keys already recorded before they
call ``map``. An exception raised by the function is yielded, not raised; a job whose worker
was lost more often than the retries allow yields a :class:`WorkerLost`.

**Model endpoints.** :meth:`WorkerContext.endpoint_slot` bounds the model calls in flight per
endpoint across the whole run (:attr:`PoolOptions.endpoint_limit`): a semaphore per endpoint
locally; on Ray, one async actor per pool that hands out leases. A lease is renewed by its
holder's process every few seconds, so a slot held by a process that died is free again after
:attr:`PoolOptions.lease_seconds`.

``ray`` is imported only when a Ray pool is made: importing this module (or ``utdebug``,
``utdebug.engine``, ``utdebug.sandbox``) never loads it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import importlib
import logging
import os
import pickle
import secrets
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from utdebug.sandbox import Sandbox, SandboxConfig
from utdebug.sandbox.executor import UID_SLOTS

__all__ = [
    "JobPool",
    "LocalPool",
    "PoolOptions",
    "PoolUnavailable",
    "RayPool",
    "RemoteJobError",
    "WorkerContext",
    "WorkerLost",
    "make_pool",
]

J = TypeVar("J")
R = TypeVar("R")
H = TypeVar("H")
"""A job in flight: a future (local) or an object reference (Ray)."""

RAY_HINT = "pip install 'utdebug[ray]'"
LOCAL_CLUSTER = "local-cluster"
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


class PoolUnavailable(RuntimeError):
    """The pool cannot be made: Ray is not installed, or the cluster cannot be reached. The
    message is one line."""


class WorkerLost(RuntimeError):
    """A job's worker process (or its node) died more often than the retries allow."""

    node_died: bool = False
    """The node (its raylet) died, not just a worker process: retries on it cannot run."""


@dataclass(frozen=True)
class PoolOptions:
    sandbox: SandboxConfig
    """Each worker process builds its own Sandbox from this (locally: the one shared sandbox)."""
    concurrency: int = 0
    """Jobs in flight at once (0: the cores of this machine, or the cluster's CPUs)."""
    endpoint_limit: int = 4
    """Model calls in flight per model endpoint, across the whole run."""
    max_retries: int = 3
    """Ray: how often a job whose worker process or node died is run again."""
    lease_seconds: float = 30.0
    """Ray: an endpoint slot whose holder stopped renewing it (a dead process) is free again
    after this long."""


class WorkerContext(Protocol):
    def sandbox(self) -> Sandbox:
        """This worker process's own Sandbox: started on first use, reused, closed when the
        process (or the local pool) ends."""
        ...

    def endpoint_slot(self, endpoint: str) -> AbstractContextManager[None]:
        """Hold while calling a model at ``endpoint``; bounds the calls per endpoint run-wide."""
        ...


class JobPool(Protocol):
    concurrency: int

    def map(
        self,
        fn: Callable[[J, WorkerContext], R],
        jobs: Sequence[J],
        *,
        stop: threading.Event | None = None,
        started: Callable[[J], None] | None = None,
    ) -> Generator[tuple[J, R | BaseException], None, None]:
        """Yield each job exactly once, with ``fn``'s result or the exception it raised, as it
        finishes. Once ``stop`` is set, no further job starts; those in flight are still
        yielded. Closing the iterator early abandons (cancels) the jobs in flight.
        ``started(job)`` is called in this thread as each job is handed to a worker."""
        ...

    def describe(self) -> str:
        """One line: where the jobs run."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> JobPool: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def make_pool(address: str | None, options: PoolOptions) -> JobPool:
    """``None``: a :class:`LocalPool`. ``"auto"`` (the cluster this machine belongs to),
    ``"local-cluster"`` (start a Ray instance on this machine for the pool's lifetime),
    ``"host:port"`` or ``"ray://host:port"``: a :class:`RayPool`. Raises
    :class:`PoolUnavailable` (one line) when Ray is not installed or the cluster cannot be
    reached."""
    if address is None:
        return LocalPool(options)
    return RayPool(address, options)


def _check_options(options: PoolOptions) -> None:
    if options.concurrency < 0:
        raise ValueError("concurrency must be 0 (automatic) or positive")
    if options.endpoint_limit < 1:
        raise ValueError("endpoint_limit must be at least 1")
    if options.max_retries < 0:
        raise ValueError("max_retries must be 0 or more")
    if not options.lease_seconds > 0:
        raise ValueError("lease_seconds must be positive")


def _keep_busy(
    jobs: Sequence[J],
    width: int,
    stop: threading.Event | None,
    *,
    start: Callable[[J], H],
    finished: Callable[[list[H]], Iterable[H]],
    outcome: Callable[[H, int], R | BaseException],
    abandon: Callable[[Collection[H]], None],
    started: Callable[[J], None] | None = None,
) -> Generator[tuple[J, R | BaseException], None, None]:
    """:meth:`JobPool.map`'s loop for either pool: up to ``width`` jobs in flight (none
    started once ``stop`` is set), each yielded once with its outcome as it finishes.

    ``start`` runs a job and gives its handle; ``finished`` waits for some of the handles in
    flight and gives those that are done (it may give none); ``outcome`` reads a finished
    handle's result (``i``: the job's position); ``abandon`` gets the handles still in flight
    when the loop ends, also when it is closed early; ``started`` hears of each job started.
    """
    inflight: dict[H, int] = {}
    todo = iter(range(len(jobs)))
    try:
        while True:
            while len(inflight) < width and not (stop is not None and stop.is_set()):
                i = next(todo, None)
                if i is None:
                    break
                inflight[start(jobs[i])] = i
                if started is not None:
                    started(jobs[i])
            if not inflight:
                break
            for handle in finished(list(inflight)):
                i = inflight.pop(handle)
                yield jobs[i], outcome(handle, i)
    finally:
        abandon(inflight)


# --- local ------------------------------------------------------------------------------------


class _Closing:
    """A pool as a context manager: leaving the ``with`` block closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class LocalPool(_Closing):
    """Threads in this process over one shared sandbox; it is its own :class:`WorkerContext`."""

    def __init__(self, options: PoolOptions, sandbox: Sandbox | None = None) -> None:
        _check_options(options)
        self.options = options
        self.concurrency = options.concurrency or os.cpu_count() or 2
        self._sandbox = sandbox
        self._owns_sandbox = sandbox is None
        self._lock = threading.Lock()
        self._slots: dict[str, threading.BoundedSemaphore] = {}

    # WorkerContext
    def sandbox(self) -> Sandbox:
        with self._lock:
            if self._sandbox is None:
                sb = Sandbox(self.options.sandbox)
                sb.start()
                self._sandbox = sb
            return self._sandbox

    @contextlib.contextmanager
    def endpoint_slot(self, endpoint: str) -> Iterator[None]:
        with self._lock:
            sem = self._slots.get(endpoint)
            if sem is None:
                sem = self._slots[endpoint] = threading.BoundedSemaphore(
                    self.options.endpoint_limit
                )
        with sem:
            yield

    # JobPool
    def map(
        self,
        fn: Callable[[J, WorkerContext], R],
        jobs: Sequence[J],
        *,
        stop: threading.Event | None = None,
        started: Callable[[J], None] | None = None,
    ) -> Generator[tuple[J, R | BaseException], None, None]:
        width = max(1, self.concurrency)
        pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="utdebug-job")

        def outcome(fut: Future[R], i: int) -> R | BaseException:
            exc = fut.exception()
            return exc if exc is not None else fut.result()

        yield from _keep_busy(
            jobs,
            width,
            stop,
            start=lambda job: pool.submit(fn, job, self),
            finished=lambda futs: wait(futs, return_when=FIRST_COMPLETED)[0],
            outcome=outcome,
            # Closed early (Ctrl-C, a record that cannot be written): do not wait for the jobs
            # in flight.
            abandon=lambda left: pool.shutdown(wait=not left, cancel_futures=True),
            started=started,
        )

    def describe(self) -> str:
        return f"local: {self.concurrency} threads over one sandbox in this process"

    def close(self) -> None:
        with self._lock:
            sb, self._sandbox = self._sandbox, None
        if sb is not None and self._owns_sandbox:
            sb.close()


# --- Ray ---------------------------------------------------------------------------------------


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError as e:
        raise PoolUnavailable(f"Ray is not installed ({e}): {RAY_HINT}") from None


def _probe_gcs(address: str, timeout: float = 5.0) -> None:
    """A ``host:port`` address answers a TCP connection, or a one-line PoolUnavailable."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise PoolUnavailable(
            f"not a Ray address: {address!r} (use host:port, ray://host:port, auto or "
            f"{LOCAL_CLUSTER})"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as e:
        why = e.strerror or str(e) or type(e).__name__
        raise PoolUnavailable(f"cannot reach the Ray cluster at {address}: {why}") from None


def _connect_error(address: str, e: BaseException) -> str:
    """One line for a failed ``ray.init``: a refused authentication token is named as such."""
    chain: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    text = " ".join(str(x) for x in chain)
    if any(type(x).__name__ == "AuthenticationError" for x in chain) or "InvalidAuthToken" in text:
        return (
            f"the Ray cluster at {address} refused this process's authentication token: set "
            "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or put the cluster's token in "
            "~/.ray/auth_token)"
        )
    first = " ".join(str(e).split()) or type(e).__name__
    return f"cannot reach the Ray cluster at {address}: {first[:300]}"


class RayPool(_Closing):
    """Jobs as Ray tasks; a sandbox per Ray worker process; the driver collects the results."""

    def __init__(self, address: str, options: PoolOptions) -> None:
        _check_options(options)
        self.options = options
        self.address = address
        self._saved_env: dict[str, str | None] = {}
        if address == LOCAL_CLUSTER and "ray" not in sys.modules:
            self._token_of_its_own()  # read by Ray when it is imported
        try:
            ray = _import_ray()
        except BaseException:
            self._restore_env()
            raise
        self._ray = ray
        self._owns_init = False
        if not ray.is_initialized():
            try:
                self._connect(address, options)
            except BaseException:
                self._restore_env()
                raise
            self._owns_init = True
        try:
            cpus = int(ray.cluster_resources().get("CPU", 0))
            self.nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
            self.cpus = cpus
            self.concurrency = options.concurrency or max(1, cpus)
            leases = ray.remote(num_cpus=0, max_restarts=0)(_EndpointLeases)
            self._leases = leases.options(name=f"utdebug-endpoints-{uuid.uuid4().hex[:12]}").remote(
                options.endpoint_limit, options.lease_seconds
            )
            self._spec = _RaySpec(options.sandbox, self._leases, options.lease_seconds)
            # SPREAD: jobs go to every node rather than filling the driver's node first.
            self._task = ray.remote(_run_in_worker).options(
                num_cpus=1,
                max_retries=options.max_retries,
                retry_exceptions=False,
                scheduling_strategy="SPREAD",
            )
        except BaseException:
            self.close()
            raise

    def _connect(self, address: str, options: PoolOptions) -> None:
        ray = self._ray
        # No usage report from a fresh local instance (and none from this process).
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        quiet: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
        try:
            if address == LOCAL_CLUSTER:
                # "local": always a new instance, never a cluster `ray start` left running here.
                ray.init(
                    address="local",
                    num_cpus=options.concurrency or None,
                    include_dashboard=False,
                    **quiet,
                )
            elif address == "auto" or address.startswith("ray://"):
                ray.init(address=address, **quiet)
            else:
                _probe_gcs(address)
                ray.init(address=address, **quiet)
        except PoolUnavailable:
            raise
        except (ConnectionError, TimeoutError, RuntimeError, ValueError, OSError) as e:
            raise PoolUnavailable(_connect_error(address, e)) from None

    def _token_of_its_own(self) -> None:
        """A local instance gets a token of its own for its lifetime (through this process's
        environment, which its processes inherit), unless the user chose one or this process
        imported Ray already (Ray reads the mode when it is imported). Without it Ray writes a
        token to ``~/.ray/auth_token``, and clusters started later on this machine with ``ray
        start`` then demand it from every driver."""
        if any(os.environ.get(k) for k in AUTH_VARS) or (Path.home() / ".ray/auth_token").exists():
            return
        for key, value in (("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN", secrets.token_hex(16))):
            self._saved_env[key] = os.environ.get(key)
            os.environ[key] = value

    def _restore_env(self) -> None:
        saved, self._saved_env = self._saved_env, {}
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def map(
        self,
        fn: Callable[[J, WorkerContext], R],
        jobs: Sequence[J],
        *,
        stop: threading.Event | None = None,
        started: Callable[[J], None] | None = None,
    ) -> Generator[tuple[J, R | BaseException], None, None]:
        ray = self._ray

        def abandon(refs: Collection[Any]) -> None:
            for ref in refs:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

        yield from _keep_busy(
            jobs,
            max(1, self.concurrency),
            stop,
            start=lambda job: self._task.remote(fn, self._spec, job),
            finished=lambda refs: ray.wait(refs, num_returns=1, timeout=1.0)[0],
            outcome=self._outcome,
            abandon=abandon,
            started=started,
        )

    def _outcome(self, ref: Any, i: int) -> Any:
        ray = self._ray
        try:
            value = ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            # Something outside the job's function failed in the worker (e.g. unpickling it).
            return e.as_instanceof_cause()
        except ray.exceptions.RayError as e:
            text = " ".join(str(e).split())[:300]
            node_died = isinstance(
                e, ray.exceptions.LocalRayletDiedError | ray.exceptions.NodeDiedError
            )
            if node_died:
                # A raylet dies with its node's processes (its dashboard agent among them).
                lost = WorkerLost(
                    f"job {i}: the Ray node running it died, so neither it nor its retries "
                    f"could finish ({type(e).__name__}: {text})"
                )
            else:
                lost = WorkerLost(
                    f"job {i}: its worker was lost and the {self.options.max_retries} retries "
                    f"did not finish it ({type(e).__name__}: {text})"
                )
            lost.node_died = node_died
            lost.__cause__ = e
            return lost
        return value

    def describe(self) -> str:
        return (
            f"Ray at {self.address}: {self.nodes} node(s), {self.cpus} CPUs, {self.concurrency} "
            "jobs in flight, a sandbox per worker process"
        )

    def endpoint_stats(self) -> dict[str, Any]:
        """From the lease actor: ``peak`` (the most slots held at once, per endpoint), ``held``
        (slots held now) and ``expired`` (leases freed because their holder stopped renewing
        them: a process that died holding one)."""
        stats: dict[str, Any] = self._ray.get(self._leases.stats.remote())
        return stats

    def close(self) -> None:
        ray = self._ray
        leases = getattr(self, "_leases", None)
        if leases is not None:
            with contextlib.suppress(Exception):
                ray.kill(leases)
            self._leases = None
        if self._owns_init:
            self._owns_init = False
            with contextlib.suppress(Exception):
                ray.shutdown()
        self._restore_env()


# --- what runs in a Ray worker process ---------------------------------------------------------


@dataclass(frozen=True)
class _RaySpec:
    """What every task carries besides its job: the sandbox to build, the lease actor."""

    sandbox: SandboxConfig
    leases: Any
    lease_seconds: float


class RemoteJobError(RuntimeError):
    """A job's exception that could not be sent back as itself (it does not pickle)."""


def _portable(e: Exception) -> Exception:
    where = f"raised in a Ray worker (pid {os.getpid()})"
    try:
        e.add_note(where)
        pickle.loads(pickle.dumps(e))
    except Exception:
        return RemoteJobError(f"{type(e).__qualname__}: {e} ({where})")
    return e


def _run_in_worker(fn: Callable[[Any, WorkerContext], Any], spec: _RaySpec, job: Any) -> Any:
    ctx = _RayWorkerContext(spec)
    try:
        return fn(job, ctx)
    except Exception as e:  # yielded by map as the job's outcome
        return _portable(e)


_WORKER_LOCK = threading.Lock()
_WORKER_SANDBOXES: dict[SandboxConfig, Sandbox] = {}


def _close_worker_sandboxes() -> None:
    with _WORKER_LOCK:
        boxes = list(_WORKER_SANDBOXES.values())
        _WORKER_SANDBOXES.clear()
    for sb in boxes:
        with contextlib.suppress(Exception):
            sb.close()


_UID_BLOCKS = 64
_HELD_UID_LOCKS: list[int] = []


def _own_uid_block(config: SandboxConfig) -> SandboxConfig:
    """As root, the sandbox of each worker process on a machine takes a block of child uids of
    its own (``uid_base + k * 4096``, k >= 1, held by a lock file for the process's life): the
    children's task cap is counted per uid where the sandbox runs without user namespaces, and
    two sandboxes with the same ``uid_base`` would share it. A machine out of blocks (or a
    lock folder that cannot be made) keeps ``uid_base``."""
    if os.geteuid() != 0:
        return config
    folder = Path(tempfile.gettempdir()) / "utdebug-uid-blocks"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        for k in range(1, _UID_BLOCKS + 1):
            fd = os.open(folder / f"{k}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            _HELD_UID_LOCKS.append(fd)
            return replace(config, uid_base=config.uid_base + k * UID_SLOTS)
    except OSError:
        pass
    return config


def _worker_sandbox(config: SandboxConfig) -> Sandbox:
    with _WORKER_LOCK:
        sb = _WORKER_SANDBOXES.get(config)
        if sb is None:
            sb = Sandbox(_own_uid_block(config))
            sb.start()  # SandboxUnavailable goes back to the driver with the job
            if not _WORKER_SANDBOXES:
                atexit.register(_close_worker_sandboxes)
            _WORKER_SANDBOXES[config] = sb
        return sb


class _RayWorkerContext:
    def __init__(self, spec: _RaySpec) -> None:
        self._spec = spec

    def sandbox(self) -> Sandbox:
        return _worker_sandbox(self._spec.sandbox)

    @contextlib.contextmanager
    def endpoint_slot(self, endpoint: str) -> Iterator[None]:
        ray = importlib.import_module("ray")
        leases = self._spec.leases
        token: str = ray.get(leases.acquire.remote(endpoint))
        _KEEPER.hold(token, leases, self._spec.lease_seconds)
        try:
            yield
        finally:
            _KEEPER.drop(token)
            ray.get(leases.release.remote(token))


class _LeaseKeeper:
    """Renews the endpoint leases this process holds, a few times per lease period."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, Any] = {}
        self._period = 10.0
        self._thread: threading.Thread | None = None

    def hold(self, token: str, leases: Any, lease_seconds: float) -> None:
        with self._lock:
            self._held[token] = leases
            self._period = min(self._period, lease_seconds / 3)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="utdebug-leases", daemon=True
                )
                self._thread.start()

    def drop(self, token: str) -> None:
        with self._lock:
            self._held.pop(token, None)

    def _loop(self) -> None:
        while True:
            time.sleep(self._period)
            with self._lock:
                held = list(self._held.items())
            for token, leases in held:
                with contextlib.suppress(Exception):
                    leases.renew.remote(token)


_KEEPER = _LeaseKeeper()


class _EndpointLeases:
    """The Ray actor (async) that bounds model calls per endpoint across a run."""

    def __init__(self, limit: int, lease_seconds: float) -> None:
        self.limit = limit
        self.lease_seconds = lease_seconds
        self.held: dict[str, tuple[str, float]] = {}
        self.counts: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.expired = 0
        self._cond: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    def _expire(self) -> bool:
        now = time.monotonic()
        gone = [t for t, (_, until) in self.held.items() if until < now]
        for token in gone:
            endpoint, _ = self.held.pop(token)
            self.counts[endpoint] -= 1
            self.expired += 1
        return bool(gone)

    async def acquire(self, endpoint: str) -> str:
        cond = self._condition()
        async with cond:
            while True:
                self._expire()
                n = self.counts.get(endpoint, 0)
                if n < self.limit:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(cond.wait(), self.lease_seconds / 4)
            token = uuid.uuid4().hex
            self.held[token] = (endpoint, time.monotonic() + self.lease_seconds)
            self.counts[endpoint] = n + 1
            self.peak[endpoint] = max(self.peak.get(endpoint, 0), n + 1)
            return token

    async def renew(self, token: str) -> None:
        held = self.held.get(token)
        if held is not None:
            self.held[token] = (held[0], time.monotonic() + self.lease_seconds)

    async def release(self, token: str) -> None:
        cond = self._condition()
        async with cond:
            held = self.held.pop(token, None)
            if held is not None:
                self.counts[held[0]] -= 1
            cond.notify_all()

    async def stats(self) -> dict[str, Any]:
        return {"peak": dict(self.peak), "held": len(self.held), "expired": self.expired}
