"""Job pools: local threads over one sandbox, and a real Ray cluster on this machine.

The cluster is started once for the module, as an operator would: ``ray start --head`` and a
second node (a separate raylet and its worker processes) joined to it with ``ray start
--address``, one CPU each, a token of its own (``RAY_AUTH_MODE=token``; nothing is written to
``~/.ray``), this folder on the nodes' ``PYTHONPATH`` so that the workers import
``testkit.distributed_jobs``. Ray announces a node under the machine's own network address even when
given ``--node-ip-address=127.0.0.1``, so this module runs only inside a network namespace of
its own in which loopback is the only interface (``tests/test_ray_netns.py``): all traffic
stays on loopback. The processes are ended by
their session ids (those two ``ray start`` commands' sessions), never by name.

Without Ray installed, the cluster tests are skipped (``pip install 'utdebug[ray]'``); the
tests of the local pool and of the error lines run anyway.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testkit.distributed_jobs import (
    dies_holding_slot,
    dies_once,
    fails_on_odd,
    holds_slot,
    max_overlap,
    primes_in_sandbox,
)

from utdebug.benchmarks.evaluator import SplitData, evaluate_split
from utdebug.data.datasets import Split
from utdebug.data.private_tests import EvalSettings, WhichCode
from utdebug.data.splits import load_split
from utdebug.distributed import (
    LocalPool,
    PoolOptions,
    PoolUnavailable,
    RayPool,
    WorkerLost,
    make_pool,
)
from utdebug.runs.records import SAMPLES, SUMMARY, read_samples
from utdebug.sandbox import Sandbox, SandboxConfig

TESTS = Path(__file__).resolve().parent
HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(
    not HAS_RAY, reason="Ray is not installed (pip install 'utdebug[ray]')"
)

pytestmark = pytest.mark.ray  # every test here runs in its own network namespace

# Measured, not part of a verdict: what a record may differ in between two runs.
MEASURED = {"seconds", "cpu_seconds", "peak_child_rss_kb"}
# Quick problems of MBPP+Fix (Hard) with no input near the time limit.
PROBLEMS = "6,7,9,11,12,16,58,63"
# Problems taking 0.1-1.5 s each (none near the limit): long enough to be killed mid-job.
SLOWER = ["hard/84", "hard/589", "hard/162", "hard/247", "hard/61", "hard/256", "hard/301"]


# --- the cluster -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _session_of(pid: int) -> tuple[int, str] | None:
    """(session id, command line) of a live process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    if fields[0] == "Z":
        return None
    return int(fields[3]), cmd.replace(b"\0", b" ").decode(errors="replace").strip()


@dataclass
class Cluster:
    address: str
    head: subprocess.Popen[bytes]
    worker: subprocess.Popen[bytes]
    temp: Path

    def processes(self) -> dict[int, str]:
        """Every live process of the two nodes (their ``ray start`` sessions): pid -> command."""
        sessions = {self.head.pid, self.worker.pid}
        out: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (found := _session_of(int(entry))) and found[0] in sessions:
                out[int(entry)] = found[1]
        return out

    def running_tasks(self) -> list[int]:
        """Worker processes executing a job right now (Ray titles them ``ray::<function>``)."""
        return [p for p, cmd in self.processes().items() if cmd.startswith("ray::_run_in_worker")]

    def stop(self) -> None:
        for _ in range(3):
            procs = self.processes()
            if not procs:
                break
            for pid in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        for proc in (self.worker, self.head):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        shutil.rmtree(self.temp, ignore_errors=True)

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {f.name}\n{f.read_text(errors='replace')[-1500:]}"
            for f in sorted(self.temp.glob("*.log"))
        )


def _wait(what: str, cond: Any, timeout: float, cluster: Cluster) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            tail = cluster.log_tail()
            cluster.stop()
            pytest.fail(f"the test cluster did not come up ({what}) in {timeout:.0f} s\n{tail}")
        time.sleep(0.2)


def _gcs_answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _alive_nodes(address: str) -> int:
    import ray

    ray.init(address=address, logging_level="error", log_to_driver=False)
    try:
        return sum(1 for n in ray.nodes() if n["Alive"])
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    if not HAS_RAY:
        pytest.skip("Ray is not installed (pip install 'utdebug[ray]')")
    ray_cli = str(Path(sys.executable).parent / "ray")
    port = _free_port()
    # A short folder: Ray's socket paths under it must fit in 107 bytes.
    temp = Path(tempfile.mkdtemp(prefix="utr-", dir="/tmp"))
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    env = os.environ | auth | {"RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": path}
    common = ["--block", "--num-cpus=1", "--disable-usage-stats", f"--temp-dir={temp}"]

    def start(name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (temp / f"{name}.log").open("wb")
        return subprocess.Popen(
            [ray_cli, "start", *args, *common],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    head = start(
        "head",
        "--head",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
    )
    address = f"127.0.0.1:{port}"
    c = Cluster(address, head, head, temp)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in auth.items():  # this process is the driver of the in-process tests
            mp.setenv(k, v)
        _wait("head", lambda: _gcs_answers(port), 60, c)
        c.worker = start("worker", f"--address={address}")
        _wait("second node", lambda: _alive_nodes(address) >= 2, 90, c)
        try:
            yield c
        finally:
            c.stop()


def _options(**kw: Any) -> PoolOptions:
    return PoolOptions(SandboxConfig(), **kw)


# --- map: the same results here and on the cluster ----------------------------------------------


@needs_ray
def test_map_on_ray_gives_the_results_of_a_local_run_each_worker_with_its_own_sandbox(
    cluster: Cluster,
) -> None:
    jobs = list(range(1, 13))
    with make_pool(None, _options(concurrency=2)) as local:
        here = dict(local.map(primes_in_sandbox, jobs))
        raised_here = dict(local.map(fails_on_odd, [2, 3]))
    with make_pool(cluster.address, _options()) as runner:
        assert isinstance(runner, RayPool)
        assert runner.nodes == 2 and runner.cpus == 2 and runner.concurrency == 2
        pairs = list(runner.map(primes_in_sandbox, jobs))
        raised = dict(runner.map(fails_on_odd, [2, 3]))
    assert sorted(j for j, _ in pairs) == jobs  # each job exactly once
    there = dict(pairs)
    assert all(not isinstance(r, BaseException) for r in [*here.values(), *there.values()])
    for n in jobs:
        assert there[n]["outcomes"] == here[n]["outcomes"], n
    assert here[5]["outcomes"] == [
        ("ok", 2, None),
        ("ok", 15, None),
        ("error", None, "ValueError"),
    ]
    # Local: one sandbox shared by the threads of this process.
    assert {r["pid"] for r in here.values()} == {os.getpid()}
    assert len({r["sandbox"] for r in here.values()}) == 1
    # Ray: worker processes of both nodes, each reusing its own sandbox for its jobs.
    pids = {r["pid"] for r in there.values()}
    assert os.getpid() not in pids and len(pids) >= 2
    for pid in pids:
        assert len({r["sandbox"] for r in there.values() if r["pid"] == pid}) == 1
    if os.geteuid() == 0:  # as root, each worker's children run in a uid block of their own
        blocks = {pid: {r["uid_base"] for r in there.values() if r["pid"] == pid} for pid in pids}
        assert all(len(b) == 1 for b in blocks.values())
        bases = [b.pop() for b in blocks.values()]
        assert len(set(bases)) == len(bases) and SandboxConfig().uid_base not in bases
    # An exception raised by the job comes back as itself, yielded, not raised.
    for got in (raised_here, raised):
        assert got[2] == 1
        assert isinstance(got[3], ValueError) and str(got[3]) == "odd: 3"


# --- utdebug bench --ray: the records of a local run --------------------------------------------


def _bench(data_dir: Path, out: Path, *extra: str, problems: str = PROBLEMS) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable, "-m", "utdebug", "bench", "--split", "hard", "--problems", problems,
            "--data-dir", str(data_dir), "--out", str(out), "--json", *extra,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)["splits"]["hard"]
    result["stderr"] = proc.stderr
    return result


def _records(folder: Path) -> dict[str, dict[str, Any]]:
    recs = read_samples(folder / SAMPLES)
    keys = [r["key"] for r in recs]
    assert len(keys) == len(set(keys)), "a key was written twice"
    return {r["key"]: {k: v for k, v in r.items() if k not in MEASURED} for r in recs}


@needs_ray
def test_bench_on_ray_writes_the_records_of_a_local_run_and_resumes_across_them(
    cluster: Cluster, data_dir: Path, tmp_path: Path
) -> None:
    local = _bench(data_dir, tmp_path / "local")
    on_ray = _bench(data_dir, tmp_path / "ray", "--ray", cluster.address)
    assert "Ray at 127.0.0.1" in on_ray["stderr"] and "2 node(s), 2 CPUs" in on_ray["stderr"]
    assert "sandbox (on a Ray worker): " in on_ray["stderr"]
    want = _records(tmp_path / "local")
    assert len(want) == 8 and local["evaluated_now"] == 8 and on_ray["evaluated_now"] == 8
    assert _records(tmp_path / "ray") == want  # key for key, verdicts and details included
    assert on_ray["summary"] == local["summary"]
    summary = json.loads((tmp_path / "ray" / SUMMARY).read_text())
    assert summary == json.loads((tmp_path / "local" / SUMMARY).read_text())

    # Resume across the two: three problems here, the rest on the cluster, then nothing left.
    mixed = tmp_path / "mixed"
    _bench(data_dir, mixed, problems="6,7,9")
    rest = _bench(data_dir, mixed, "--ray", cluster.address)
    assert (rest["resumed"], rest["evaluated_now"]) == (3, 5)
    again = _bench(data_dir, mixed)
    assert (again["resumed"], again["evaluated_now"]) == (8, 0)
    assert _records(mixed) == want


# --- workers killed mid-run ---------------------------------------------------------------------


@needs_ray
def test_a_job_whose_worker_dies_is_retried_and_yielded_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    jobs = [(n, str(tmp_path)) for n in range(1, 9)]
    with make_pool(cluster.address, _options()) as runner:
        pairs = list(runner.map(dies_once, jobs))
    died = tmp_path / "died-3"
    assert died.exists()  # job 3 killed its worker process once
    assert sorted(j for j, _ in pairs) == jobs  # every job exactly once, none lost
    results = {j[0]: r for j, r in pairs}
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    assert results[3]["pid"] != int(died.read_text())  # the retry ran in another process
    with make_pool(None, _options(concurrency=2)) as local:
        here = {n: r["outcomes"] for n, r in local.map(primes_in_sandbox, range(1, 9))}
    assert {n: r["outcomes"] for n, r in results.items()} == here


@needs_ray
def test_a_job_whose_worker_dies_past_its_retries_yields_worker_lost(
    cluster: Cluster, tmp_path: Path
) -> None:
    jobs = [(n, str(tmp_path)) for n in range(1, 5)]
    with make_pool(cluster.address, _options(max_retries=0)) as runner:
        results = {j[0]: r for j, r in runner.map(dies_once, jobs)}
    assert sorted(results) == [1, 2, 3, 4]
    assert isinstance(results[3], WorkerLost)
    assert "job 2: its worker was lost and the 0 retries did not finish it" in str(results[3])
    assert all(isinstance(results[n], dict) for n in (1, 2, 4))


@needs_ray
def test_evaluation_loses_nothing_when_a_worker_is_killed_mid_problem(
    cluster: Cluster, data_dir: Path, tmp_path: Path
) -> None:
    loaded = load_split(Split.HARD, data_dir=data_dir, download=False)
    problems = [p for p in loaded.problems if p.task_id in SLOWER]
    assert len(problems) == len(SLOWER)
    settings = EvalSettings()
    killed: list[tuple[int, str]] = []
    done = threading.Event()

    def kill_a_busy_worker() -> None:
        """Once one worker process has been running a job for 0.2 s, SIGKILL it."""
        seen: dict[int, float] = {}
        while not done.is_set() and not killed:
            now = time.monotonic()
            busy = cluster.running_tasks()
            for pid in busy:
                if now - seen.setdefault(pid, now) >= 0.2:
                    cmd = cluster.processes().get(pid, "")
                    os.kill(pid, signal.SIGKILL)
                    killed.append((pid, cmd))
                    break
            seen = {p: t for p, t in seen.items() if p in busy}
            time.sleep(0.02)

    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    with make_pool(cluster.address, _options()) as runner:
        killer.start()
        try:
            run = evaluate_split(
                runner, SplitData(Split.HARD, problems, loaded.sources), WhichCode.CODE, settings,
                tmp_path / "ray",
            )  # fmt: skip
        finally:
            done.set()
            killer.join(10)
    assert killed, "no worker process was seen running a job"
    assert killed[0][1].startswith("ray::_run_in_worker")
    with Sandbox() as sb:
        evaluate_split(
            sb, SplitData(Split.HARD, problems, loaded.sources), WhichCode.CODE, settings,
            tmp_path / "local", workers=2,
        )  # fmt: skip
    assert run.evaluated == len(SLOWER)
    assert _records(tmp_path / "ray") == _records(tmp_path / "local")
    summary = json.loads((tmp_path / "ray" / SUMMARY).read_text())["hard:code"]
    assert summary["complete"] is True and summary["problems"] == len(SLOWER)


# --- per-endpoint bound -------------------------------------------------------------------------


@needs_ray
@pytest.mark.parametrize("limit", [1, 2])
def test_endpoint_slot_bounds_model_calls_across_worker_processes(
    cluster: Cluster, limit: int
) -> None:
    jobs = [("http://model-a:8000/v1", 0.3)] * 6
    with make_pool(cluster.address, _options(endpoint_limit=limit)) as runner:
        assert isinstance(runner, RayPool)
        results = [r for _, r in runner.map(holds_slot, jobs)]
        stats = runner.endpoint_stats()
    assert not any(isinstance(r, BaseException) for r in results), results
    intervals = [(a, b) for a, b, _ in results]
    assert len({pid for *_, pid in results}) >= 2
    # Two worker processes run jobs at once; the slots let exactly `limit` hold one at a time.
    assert max_overlap(intervals) == limit
    assert stats["peak"] == {"http://model-a:8000/v1": limit}
    assert stats["held"] == 0


@needs_ray
def test_a_slot_held_by_a_dead_worker_is_free_again_after_its_lease(
    cluster: Cluster, tmp_path: Path
) -> None:
    endpoint = "http://model-b:8000/v1"
    # The first job dies holding the only slot; the other three wait for it.
    jobs = [(endpoint, 0.2, str(tmp_path))] + [(endpoint, 0.2, "")] * 3
    with make_pool(cluster.address, _options(endpoint_limit=1, lease_seconds=2.0)) as runner:
        assert isinstance(runner, RayPool)
        t0 = time.monotonic()
        results = [r for _, r in runner.map(dies_holding_slot, jobs)]
        elapsed = time.monotonic() - t0
        stats = runner.endpoint_stats()
    assert (tmp_path / "died-holding").exists()
    assert len(results) == 4 and not any(isinstance(r, BaseException) for r in results), results
    # The dead process's lease expired (nobody renewed it); nothing waited forever.
    assert stats["expired"] == 1 and stats["held"] == 0
    assert 2.0 <= elapsed < 30
    assert max_overlap([r[:2] for r in results]) == 1


@needs_ray
def test_local_cluster_starts_and_stops_a_ray_instance_with_a_token_of_its_own(
    tmp_path: Path,
) -> None:
    code = (
        "import os\n"
        "from utdebug.benchmarks.evaluator import worker_sandbox_layers\n"
        "from utdebug.distributed import PoolOptions, make_pool\n"
        "from utdebug.sandbox import SandboxConfig\n"
        "with make_pool('local-cluster', PoolOptions(SandboxConfig(), concurrency=1)) as r:\n"
        "    print(r.describe())\n"
        "    print(os.environ.get('RAY_AUTH_MODE'), len(os.environ.get('RAY_AUTH_TOKEN', '')))\n"
        "    ((_, layers),) = r.map(worker_sandbox_layers, [None])\n"
        "    print(layers[0], len(layers[1]))\n"
        "print(os.environ.get('RAY_AUTH_MODE'), os.environ.get('RAY_AUTH_TOKEN'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    described, during, layers, after = proc.stdout.splitlines()
    assert described == (
        "Ray at local-cluster: 1 node(s), 1 CPUs, 1 jobs in flight, a sandbox per worker process"
    )
    assert during == "token 32"  # a token of its own while it runs
    with Sandbox() as sb:
        assert layers == f"{sb.layers.mode} {len(sb.layers.active())}"
    assert after == "None None"  # gone with the instance
    assert not (tmp_path / ".ray").exists()  # nothing written to the home folder


def test_local_endpoint_slot_bounds_threads_of_this_process() -> None:
    jobs = [("http://model-c/v1", 0.15)] * 6 + [("http://model-d/v1", 0.15)] * 2
    with LocalPool(_options(concurrency=8, endpoint_limit=2)) as runner:
        results = list(runner.map(holds_slot, jobs))
    assert len(results) == 8
    c = [r[:2] for job, r in results if job[0].endswith("c/v1")]
    d = [r[:2] for job, r in results if job[0].endswith("d/v1")]
    assert max_overlap(c) == 2  # six jobs on eight threads: two at a time
    assert max_overlap(d) == 2  # another endpoint has slots of its own


def test_local_map_yields_each_job_once_and_stops_starting_jobs_when_asked() -> None:
    stop = threading.Event()
    seen: list[int] = []
    with LocalPool(_options(concurrency=2)) as runner:
        for job, result in runner.map(fails_on_odd, list(range(20)), stop=stop):
            seen.append(job)
            if job % 2:
                assert isinstance(result, ValueError) and str(result) == f"odd: {job}"
            else:
                assert result == job // 2
            if len(seen) == 3:
                stop.set()
    # The jobs in flight when stop was set still come back; no new one starts.
    assert 3 <= len(seen) <= 5 and len(set(seen)) == len(seen)


# --- errors: one line ---------------------------------------------------------------------------


def test_an_address_nobody_answers_is_one_line(tmp_path: Path, data_dir: Path) -> None:
    port = _free_port()  # nothing listens there
    if HAS_RAY:
        with pytest.raises(
            PoolUnavailable, match=rf"cannot reach the Ray cluster at 127\.0\.0\.1:{port}: "
        ):
            make_pool(f"127.0.0.1:{port}", _options())
    proc = subprocess.run(
        [
            sys.executable, "-m", "utdebug", "bench", "--split", "hard", "--problems", "6",
            "--data-dir", str(data_dir), "--out", str(tmp_path), "--ray", f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    want = (
        "Ray is not installed"
        if not HAS_RAY
        else f"cannot reach the Ray cluster at 127.0.0.1:{port}"
    )
    assert lines[0].startswith("utdebug bench:") and want in lines[0]
    assert not (tmp_path / SAMPLES).exists()


@needs_ray
def test_a_driver_without_the_clusters_token_gets_one_line_saying_so(
    cluster: Cluster, data_dir: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["HOME"] = str(tmp_path)  # and no ~/.ray/auth_token either
    env["RAY_gcs_server_port_wait_time_s"] = "2"  # Ray's attempts to connect: 2, not 20
    proc = subprocess.run(
        [
            sys.executable, "-m", "utdebug", "bench", "--split", "hard", "--problems", "6",
            "--data-dir", str(data_dir), "--out", str(tmp_path / "out"), "--ray", cluster.address,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        f"utdebug bench: the Ray cluster at {cluster.address} refused this process's "
        "authentication token: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or put the "
        "cluster's token in ~/.ray/auth_token)"
    )
    assert not (tmp_path / "out" / SAMPLES).exists()


def test_without_ray_the_error_names_the_extra_to_install(tmp_path: Path, data_dir: Path) -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from utdebug.distributed import PoolOptions, PoolUnavailable, make_pool\n"
        "from utdebug.sandbox import SandboxConfig\n"
        "try:\n"
        "    make_pool('auto', PoolOptions(SandboxConfig()))\n"
        "except PoolUnavailable as e:\n"
        "    print(e)\n"
        "from utdebug.cli import main\n"
        "sys.exit(main(['bench', '--split', 'hard', '--ray', 'auto', '--out', "
        f"{str(tmp_path)!r}, '--data-dir', {str(data_dir)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith("Ray is not installed") and "pip install 'utdebug[ray]'" in (
        proc.stdout
    )
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("utdebug bench: Ray is not installed")
    assert "pip install 'utdebug[ray]'" in line


def test_ray_with_a_model_run_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "utdebug", "bench", "--model", "sim", "--ray", "auto"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--ray runs the plain evaluation" in proc.stderr
