"""Shared test setup: no network model ever, and the offline dataset folder when present."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit import classeval
from testkit import sandbox as H

from utdebug.engine import Executor
from utdebug.sandbox import Sandbox
from utdebug.sandbox.config import ModuleContext

# Importing litellm (later issues) must never reach the network in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

REPO = Path(__file__).resolve().parents[1]


def shared_datasets() -> Path | None:
    """The offline dataset folder: $UTDEBUG_DATA_DIR, else ../shared/datasets beside the repo."""
    env = os.environ.get("UTDEBUG_DATA_DIR")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "datasets"]:
        if (cand / "MBPP+Fix_hard_test.jsonl").exists():
            return cand
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = shared_datasets()
    if d is None:
        pytest.skip("dataset files not found (set UTDEBUG_DATA_DIR or place ../shared/datasets)")
    return d


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep tests out of the user's cache folder."""
    monkeypatch.setenv("UTDEBUG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _fresh_model_servers() -> None:
    """Each test starts with no known model server (limits and traffic are per process)."""
    from utdebug.agents.limiter import reset_limiters
    from utdebug.agents.traffic import reset_registry

    reset_limiters()
    reset_registry()


# --- the sandbox: one per test module ------------------------------------------------------


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    """The test module's sandbox: the default plan (every layer required) with a uid range of
    its own, so that a scan for its processes sees no other sandbox on the machine; a skip
    where the full sandbox cannot start here."""
    box = H.make_sandbox("bwrap")
    try:
        yield box
    finally:
        box.close()


@pytest.fixture(scope="module", params=["bwrap", "root"])
def any_sb(request: pytest.FixtureRequest, sb: Sandbox) -> Iterator[Sandbox]:
    """The module's sandbox, then the root-only fallback (``use_bwrap=False``: no PID
    namespace, every other layer); the fallback is skipped where it cannot exist."""
    if request.param == "bwrap":
        yield sb
        return
    fallback = H.make_sandbox("root")
    try:
        yield fallback
    finally:
        fallback.close()


@pytest.fixture(scope="module")
def executor(sb: Sandbox) -> Iterator[Executor]:
    """The module's sandbox behind an executor (engine, candidate, app tests)."""
    ex = Executor(sb, workers=2)
    yield ex
    ex.close()


@pytest.fixture
def module_executor(executor: Executor) -> Iterator[Executor]:
    """The module's sandbox, running programs as the module ``cart`` (registered in
    ``sys.modules``, as ``debug`` and ``check`` run a file: dataclasses need it)."""
    ex = Executor(executor.sandbox, workers=2, context=ModuleContext(name="cart"))
    yield ex
    ex.close()


@pytest.fixture
def small_dir(tmp_path: Path) -> Path:
    """A folder with a small ClassEval file of three classes (testkit.classeval)."""
    return classeval.small_dir(tmp_path)


# --- tests that start Ray ------------------------------------------------------------------
# Ray announces its nodes under the machine's own network address, even when told
# 127.0.0.1. Tests that start Ray therefore run only inside a network namespace of their own
# in which loopback is the only interface (tests/test_ray_netns.py starts one with `unshare
# --net` and runs them there), so none of their traffic leaves loopback.

IN_RAY_NETNS = os.environ.get("UTDEBUG_TEST_NETNS") == "1"


def only_loopback() -> list[str]:
    """The network interfaces of this process's network namespace other than ``lo`` (none in
    the test's own). ``/proc/self/net`` follows the namespace; ``/sys/class/net`` would show
    the one sysfs was mounted in."""
    with open("/proc/self/net/dev", encoding="ascii") as f:
        names = [line.split(":", 1)[0].strip() for line in f.readlines()[2:]]
    return sorted(n for n in names if n and n != "lo")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (the default addopts): a test process per core this process may use, at most
    4 (each runs sandboxes of its own; the tests hold on a loaded machine, so more buys little)."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(
        reason="starts Ray: runs inside its own network namespace (tests/test_ray_netns.py)"
    )
    for item in items:
        if item.get_closest_marker("ray") is not None and not IN_RAY_NETNS:
            item.add_marker(skip)


def pytest_sessionstart(session: pytest.Session) -> None:
    if IN_RAY_NETNS:
        others = only_loopback()
        if others:
            raise pytest.UsageError(
                f"UTDEBUG_TEST_NETNS=1 but this network namespace has {', '.join(others)}: "
                "run the Ray tests through tests/test_ray_netns.py"
            )


@pytest.fixture
def calc(tmp_path: Path) -> Any:
    """calc.py's buggy ``add`` (testkit.scripted_add's SOURCE), loaded (app tests)."""
    from testkit.scripted_add import SOURCE

    from utdebug.workspace import load_function

    path = tmp_path / "calc.py"
    path.write_text(SOURCE, encoding="utf-8")
    return load_function(path, "add")
