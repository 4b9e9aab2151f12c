"""The tests that start Ray (marked ``ray``), run in a network namespace of their own.

Ray announces its nodes under the machine's own network address even when told 127.0.0.1, so
these tests never run in the machine's namespace: this test starts ``unshare --net`` (a new
network namespace whose only interface is loopback, brought up first) and runs exactly the
``ray``-marked tests there with ``UTDEBUG_TEST_NETNS=1``; ``conftest.py`` refuses that flag in
a namespace with any other interface. A real Ray cluster (a head and a worker node) starts in
there; nothing of it can reach, or be reached from, any address but loopback.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RAY_TESTS = ("tests/test_distributed.py", "tests/test_train_data.py", "tests/test_perf_scripts.py")


def test_the_ray_tests_pass_in_a_network_namespace_with_loopback_only() -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (pip install 'utdebug[ray]')")
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("a network namespace of its own needs root, unshare and ip")
    inner = (
        f"ip link set lo up && exec {sys.executable} -m pytest -q -rs -p no:cacheprovider -n 0 "
        "-m ray " + " ".join(RAY_TESTS)
    )
    env = dict(os.environ, UTDEBUG_TEST_NETNS="1", COLUMNS="400")  # skip reasons uncut
    done = subprocess.run(
        ["unshare", "--net", "sh", "-c", inner],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    tail = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, tail
    summary = done.stdout.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    # Every Ray test ran: the distributed module, the train data run on Ray and the distributed
    # throughput benchmark. The only skip allowed is a test that needs the datasets, in a
    # checkout that has none (no ../shared/datasets, no UTDEBUG_DATA_DIR).
    skips = re.findall(r"^SKIPPED \[(\d+)\] [^:\s]+(?::\d+)?: (.*)$", done.stdout, re.M)
    assert all("datasets" in why and "Ray" not in why for _, why in skips), skips
    ran = (int(passed.group(1)) if passed else 0) + sum(int(n) for n, _ in skips)
    assert passed is not None and ran >= 17, tail
    assert "deselected" in summary, summary
