"""How a Ray job's failure is read (no Ray instance is started: only the reading)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from utdebug.distributed import PoolOptions, RayPool, WorkerLost
from utdebug.sandbox import SandboxConfig


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")
def test_a_node_that_died_is_said_to_have_died_not_to_have_run_out_of_retries() -> None:
    # Killing a node's dashboard agent kills its raylet: every job in flight there ends with
    # LocalRayletDiedError. No Ray instance is started here; only the result's reading is.
    from types import SimpleNamespace

    import ray
    from ray.exceptions import LocalRayletDiedError, NodeDiedError, WorkerCrashedError

    runner = RayPool.__new__(RayPool)
    runner.options = PoolOptions(SandboxConfig(), max_retries=3)

    def outcome(error: Exception) -> Any:
        def get(ref: object) -> None:
            raise error

        runner._ray = SimpleNamespace(get=get, exceptions=ray.exceptions)
        return runner._outcome(object(), 7)

    for error in (LocalRayletDiedError(), NodeDiedError("node 1 is dead")):
        lost = outcome(error)
        assert isinstance(lost, WorkerLost) and lost.node_died
        assert str(lost).startswith("job 7: the Ray node running it died")
        assert "retries did not finish" not in str(lost)
    lost = outcome(WorkerCrashedError())
    assert isinstance(lost, WorkerLost) and not lost.node_died
    assert "its worker was lost and the 3 retries did not finish it" in str(lost)
