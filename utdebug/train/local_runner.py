"""A local runner for the pipeline's per-problem function: threads over one shared sandbox.

It has the interface of the distributed runner (``map(fn, jobs)`` yields each job once with
its result or exception, as it finishes; ``fn(job, ctx)`` gets a :class:`WorkerContext` whose
``sandbox()`` is the shared :class:`~utdebug.sandbox.Sandbox` and whose
``endpoint_slot(endpoint)`` holds one of ``endpoint_limit`` slots of a model endpoint around a
model call).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, TypeVar

from utdebug.sandbox import Sandbox, SandboxConfig

__all__ = ["LocalRunner", "RunnerOptions", "WorkerContext"]

J = TypeVar("J")
R = TypeVar("R")


@dataclass(frozen=True)
class RunnerOptions:
    sandbox: SandboxConfig
    concurrency: int = 0
    """Jobs at once; 0: the number of cores."""
    endpoint_limit: int = 4
    """Model calls at once per endpoint, over all jobs."""


class WorkerContext(Protocol):
    def sandbox(self) -> Sandbox: ...

    def endpoint_slot(self, endpoint: str) -> AbstractContextManager[None]: ...


class _Context:
    def __init__(self, runner: LocalRunner) -> None:
        self._runner = runner

    def sandbox(self) -> Sandbox:
        return self._runner.shared_sandbox()

    @contextlib.contextmanager
    def endpoint_slot(self, endpoint: str) -> Iterator[None]:
        with self._runner.slot(endpoint):
            yield


class LocalRunner:
    """Runs ``fn(job, ctx)`` on a thread pool, at most ``concurrency`` jobs at once."""

    def __init__(self, options: RunnerOptions) -> None:
        self.options = options
        self.concurrency = options.concurrency or os.cpu_count() or 2
        self._lock = threading.Lock()
        self._sandbox: Sandbox | None = None
        self._slots: dict[str, threading.BoundedSemaphore] = {}
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="utdebug-train")
        self._closed = threading.Event()

    def shared_sandbox(self) -> Sandbox:
        with self._lock:
            if self._sandbox is None:
                sb = Sandbox(self.options.sandbox)
                sb.start()
                self._sandbox = sb
            return self._sandbox

    def slot(self, endpoint: str) -> threading.BoundedSemaphore:
        with self._lock:
            sem = self._slots.get(endpoint)
            if sem is None:
                sem = self._slots[endpoint] = threading.BoundedSemaphore(
                    max(1, self.options.endpoint_limit)
                )
            return sem

    def map(
        self, fn: Callable[[J, WorkerContext], R], jobs: Sequence[J]
    ) -> Iterator[tuple[J, R | BaseException]]:
        """Each job once, as it finishes; a job's exception is its result. At most twice the
        concurrency is queued at once, so a long job list costs no memory up front."""
        ctx = _Context(self)
        pending: dict[Future[R], J] = {}
        it = iter(jobs)
        window = 2 * self.concurrency
        exhausted = False
        while True:
            while not exhausted and len(pending) < window and not self._closed.is_set():
                try:
                    job = next(it)
                except StopIteration:
                    exhausted = True
                    break
                pending[self._pool.submit(fn, job, ctx)] = job
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                job = pending.pop(fut)
                if fut.cancelled():
                    continue
                exc = fut.exception()
                yield job, (exc if exc is not None else fut.result())

    def close(self) -> None:
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            sb, self._sandbox = self._sandbox, None
        if sb is not None:
            sb.close()
