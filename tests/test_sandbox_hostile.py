"""Hostile programs against the sandbox (docs/sandbox-research.md §5 and §6).

Every test asserts two things: what the parent decided for the hostile input (its outcome,
and that no forged value can pass the parent's comparison), and that the host was not
touched. The host checks run after every test (the autouse ``host`` fixture):

- canary files planted in /tmp, /var/tmp and /dev/shm (world-writable, so only the mount
  layer protects them) and a root-only one are intact;
- none of the paths hostile programs try to create exists on the host;
- nothing in the shared writable folders, the repository or / is owned by a sandbox uid;
- no process of the sandbox's uid range is alive (each sandbox of this suite gets a private
  uid range, so other sandboxes running on the machine cannot make the check flaky);
- the sandbox still runs a normal program correctly.

A representative subset (secrets, file-system writes, network, killing the parent, forking)
also runs under the root fallback (``use_bwrap=False``), which has every layer but the PID
namespace.

Parent-side robustness is covered too: malformed, deeply nested, oversized, mis-ordered and
hash-colliding frames, and dtype tricks, each cost the hostile input its own verdict only.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from testkit import sandbox as H

from utdebug.sandbox import Layer, Limits, Opaque, Sandbox, Status, Structured
from utdebug.sandbox.compare import CheckSpec, Semantics, outputs_match

MODES = ["bwrap", "root"]


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------

_LIVE: list[Sandbox] = []
_EVER: list[Sandbox] = []


def _start(mode: str, **kw: Any) -> Sandbox:
    sb = H.make_sandbox(mode, **kw)
    _LIVE.append(sb)
    _EVER.append(sb)
    return sb


def _stop(sb: Sandbox) -> None:
    sb.close()
    if sb in _LIVE:
        _LIVE.remove(sb)


def _watched(box: Sandbox) -> Iterator[Sandbox]:
    """``box`` among the live sandboxes the host guard checks while the fixture holds it."""
    added = box not in _LIVE
    if added:
        _LIVE.append(box)
        _EVER.append(box)
    yield box
    if added and box in _LIVE:
        _LIVE.remove(box)


@pytest.fixture(scope="module")
def sb(sb: Sandbox) -> Iterator[Sandbox]:
    """The module's sandbox (conftest.py), watched by the host guard."""
    yield from _watched(sb)


@pytest.fixture(scope="module")
def any_sb(any_sb: Sandbox) -> Iterator[Sandbox]:
    """The module's sandbox and the root fallback (conftest.py; for the representative
    subset), watched by the host guard."""
    yield from _watched(any_sb)


@pytest.fixture(autouse=True)
def host():
    guard = H.HostGuard.plant()
    started = list(_LIVE)
    first_new = len(_EVER)
    try:
        yield guard
        # Every sandbox alive now or started during the test (even if already closed).
        for s in {id(x): x for x in [*started, *_LIVE, *_EVER[first_new:]]}.values():
            H.assert_no_sandbox_processes(s)
            guard.check(uid_lo=s.config.uid_base)
        guard.check()
        for s in list(_LIVE):
            H.assert_sandbox_works(s)
    finally:
        guard.remove()


def secret(tag: str = "") -> str:
    """An expected value the child never sees (the parent keeps it)."""
    return f"expected-{uuid.uuid4().hex}{tag}"


def never_passes(value: Any, expected: Any) -> None:
    for sem in (Semantics.DATASET, Semantics.REFERENCE):
        assert not outputs_match(value, expected, CheckSpec(), sem), (value, expected, sem)


def zygote_pid(s: Sandbox) -> int:
    proc = getattr(s, "_proc", None)
    assert proc is not None and proc.poll() is None, "the zygote is not running"
    return int(proc.pid)


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


# Hostile helpers put in front of some programs: find the result pipe, build raw frames.
FRAMES = prog(
    """
    import fcntl, json, os, stat

    def _pipes():
        out = []
        for fd in range(3, 64):
            try:
                writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
                if stat.S_ISFIFO(os.fstat(fd).st_mode) and writable:
                    out.append(fd)
            except OSError:
                pass
        return out

    def _frame(obj=None, raw=None):
        b = raw if raw is not None else json.dumps(obj).encode()
        return len(b).to_bytes(4, "big") + b

    def _send(data):
        for fd in _pipes():
            os.write(fd, data)
    """
)

FAST = H.FAST
SHORT = Limits(per_input=0.3, load=5.0, memory_mb=1024, slack=0.5)


# ---------------------------------------------------------------------------------------------
# Forging: the child only reports values; the parent rebuilds plain data and compares
# ---------------------------------------------------------------------------------------------


def test_eq_always_true_object_comes_back_opaque(sb):
    code = prog(
        """
        class Cheat:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            def __hash__(self): return 0
            def __bool__(self): return True
            def __len__(self): return 1
            def __repr__(self): return "42"
        def f(x):
            return Cheat()
        """
    )
    res = sb.run(code, "f", [[1], [2]], FAST)
    for o in res.outcomes:
        assert o.status is Status.OK
        # An object of a Python class comes back as its class name and fields: its own
        # __eq__, __hash__, __bool__ and __repr__ play no part.
        assert type(o.value) is Structured and o.value.name == "Cheat", o
        assert o.value.fields == () and o.value.module == "solution"
        for exp in (42, "42", [1, 2], None, True, secret()):
            never_passes(o.value, exp)


SUBCLASS_CASES = {
    # name: (program body, the plain value that must come back)
    "int": (
        """
        class L(int):
            def __eq__(self, o): return True
            def __ne__(self, o): return False
            def __hash__(self): return hash(42)
            def __int__(self): return 42
            def __index__(self): return 42
            def __repr__(self): return "42"
            __str__ = __repr__
        def f():
            return L(7)
        """,
        7,
    ),
    "big_int": (
        """
        class L(int):
            def __eq__(self, o): return True
            def __int__(self): return 1
        def f():
            return L(3 ** 200)
        """,
        3**200,
    ),
    "str": (
        """
        class S(str):
            def __eq__(self, o): return True
            def __ne__(self, o): return False
            def __hash__(self): return hash("expected")
            def __str__(self): return "expected"
            def __repr__(self): return "'expected'"
        def f():
            return S("wrong")
        """,
        "wrong",
    ),
    "float": (
        """
        class F(float):
            def __eq__(self, o): return True
            def __float__(self): return 42.0
        def f():
            return F(0.5)
        """,
        0.5,
    ),
    "list": (
        """
        class L(list):
            def __eq__(self, o): return True
            def __iter__(self): return iter(["expected"])
            def __len__(self): return 1
        def f():
            return L([1, 2])
        """,
        [1, 2],
    ),
    "tuple": (
        """
        class T(tuple):
            def __eq__(self, o): return True
            def __iter__(self): return iter(("expected",))
        def f():
            return T((1, 2))
        """,
        (1, 2),
    ),
    "dict": (
        """
        class D(dict):
            def __eq__(self, o): return True
            def items(self): return [("expected", 1)]
            def __iter__(self): return iter(["expected"])
        def f():
            return D(a=1)
        """,
        {"a": 1},
    ),
    "set": (
        """
        class S(set):
            def __eq__(self, o): return True
            def __iter__(self): return iter({"expected"})
        def f():
            return S({1, 2})
        """,
        {1, 2},
    ),
    "nested": (
        """
        class L(int):
            def __eq__(self, o): return True
            __hash__ = int.__hash__
        def f():
            return [L(1), (L(2), {L(3): L(4)})]
        """,
        [1, (2, {3: 4})],
    ),
}


@pytest.mark.parametrize("kind", sorted(SUBCLASS_CASES))
def test_lying_subclass_comes_back_as_its_plain_base_value(sb, kind):
    body, plain = SUBCLASS_CASES[kind]
    o = H.run1(sb, prog(body), [])
    assert o.status is Status.OK, o
    assert o.value == plain and type(o.value) is type(plain), o
    # The lie does not survive: the decoded value compares like the plain value does.
    never_passes(o.value, secret())
    never_passes(o.value, "expected")
    never_passes(o.value, 42 if kind != "float" else 42.0)


def test_spoofed_dunder_class_is_not_taken_for_an_int(sb):
    code = prog(
        """
        class Fake:
            @property
            def __class__(self): return int
            def __eq__(self, o): return True
            def __int__(self): return 42
        def f():
            assert isinstance(Fake(), int)  # the spoof works on isinstance...
            return Fake()
        """
    )
    o = H.run1(sb, code, [])
    # ...but the encoder reads the real type: an error or an opaque value, never 42.
    assert o.status in (Status.ERROR, Status.OK), o
    if o.status is Status.OK:
        assert type(o.value) in (Opaque, Structured), o
    never_passes(o.value, 42)


def test_patched_builtins_and_json_before_returning(sb):
    code = prog(
        """
        import builtins, json, os, sys
        class Cheat:
            def __eq__(self, o): return True
            def __repr__(self): return "42"
        _fake = '{"k":"r","i":0,"s":"ok","t":0,"v":42}'
        def f(x):
            builtins.type = lambda *a: int
            builtins.isinstance = lambda *a: True
            builtins.repr = lambda *a: "42"
            builtins.str = lambda *a: "42"
            builtins.len = lambda *a: 2
            json.dumps = lambda *a, **k: _fake
            json.JSONEncoder.encode = lambda *a, **k: _fake
            os.write = lambda fd, data: len(data)
            return Cheat()
        """
    )
    res = sb.run(code, "f", [[0], [1], [2]], FAST)
    # The reporter holds references taken before the program loaded: the patches change
    # nothing of its frames (tests/test_sandbox_isolation.py checks the values come back).
    assert len(res.outcomes) == 3 and res.children == 1, res
    for o in res.outcomes:
        assert o.status in (Status.OK, Status.ERROR, Status.CRASH), o
        if o.status is Status.OK:
            assert type(o.value) in (Opaque, Structured), o
        never_passes(o.value, 42)


def test_numpy_subclass_with_lying_eq(sb):
    code = prog(
        """
        import numpy as np
        class A(np.ndarray):
            def __eq__(self, o): return True
            def __ne__(self, o): return False
        def f():
            return np.arange(3).view(A)
        """
    )
    o = H.run1(sb, code, [])
    assert o.status is Status.OK, o
    import numpy as np

    assert type(o.value) is np.ndarray
    assert o.value.tolist() == [0, 1, 2]
    never_passes(o.value, [5, 6, 7])


def test_fake_frames_sprayed_on_every_fd(sb):
    """At input 1 the program writes fake passes to fds 3..20; the count stays right."""
    code = FRAMES + prog(
        """
        def f(x):
            if x == 1:
                sent = 0
                fakes = [
                    {"k": "r", "i": 1, "s": "ok", "t": 0, "v": True},
                    {"k": "r", "i": 1, "s": "pass", "t": 0, "passed": True},
                    {"k": "verdict", "i": 1, "pass": True},
                    {"k": "r", "i": 2, "s": "ok", "t": 0, "v": "pass"},
                ]
                for fd in range(3, 21):
                    for fake in fakes:
                        try:
                            os.write(fd, _frame(fake))
                            sent += 1
                        except OSError:
                            pass
                return sent
            return -x
        """
    )
    expected = [secret(str(i)) for i in range(4)]
    res = sb.run(code, "f", [[0], [1], [2], [3]], FAST)
    assert len(res.outcomes) == 4, res
    for o, exp in zip(res.outcomes, expected, strict=True):
        never_passes(o.value, exp)
    assert res.outcomes[0].value == 0
    # The duplicate/unknown frames are caught: some input after the spray is a protocol crash.
    assert any(o.error_type == "ProtocolViolation" for o in res.outcomes[1:3]), res
    # ...and the run resumed: the last input ran for real.
    assert res.outcomes[3].status is Status.OK and res.outcomes[3].value == -3, res


BAD_FRAMES = {
    "wrong_index": 'os.write(_pipes()[0], _frame({"k": "r", "i": 7, "s": "ok", "t": 0, "v": 1}))',
    "duplicate": 'os.write(_pipes()[0], _frame({"k": "r", "i": 0, "s": "ok", "t": 0, "v": 0}))',
    "not_json": 'os.write(_pipes()[0], _frame(raw=b"\\x80not json{"))',
    "not_an_object": "os.write(_pipes()[0], _frame([1, 2, 3]))",
    "huge_length": 'os.write(_pipes()[0], b"\\xff\\xff\\xff\\xff" + b"{}")',
    "unknown_kind": 'os.write(_pipes()[0], _frame({"k": "verdict", "i": 1, "pass": True}))',
    "early_end": 'os.write(_pipes()[0], _frame({"k": "end", "out": 0}))',
    "second_load": 'os.write(_pipes()[0], _frame({"k": "load", "ok": True, "t": 0}))',
    "bad_status": 'os.write(_pipes()[0], _frame({"k": "r", "i": 1, "s": "pass", "t": 0}))',
    "undecodable_value": (
        'os.write(_pipes()[0], _frame({"k": "r", "i": 1, "s": "ok", "t": 0, "v": {"$eval": "1"}}))'
    ),
    "truncated": 'os.write(_pipes()[0], (200).to_bytes(4, "big") + b"{\\"k\\": \\"r\\"")',
}


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_forged_raw_frame_crashes_only_that_input(sb, kind):
    code = FRAMES + prog(
        f"""
        def f(x):
            if x == 1:
                {BAD_FRAMES[kind]}
                return "expected"
            return x * 10
        """
    )
    t0 = time.monotonic()
    res = sb.run(code, "f", [[0], [1], [2]], SHORT)
    took = time.monotonic() - t0
    assert res.outcomes[0].status is Status.OK and res.outcomes[0].value == 0, res
    bad = res.outcomes[1]
    if kind == "truncated":  # the real frame is swallowed as the fake body: crash or deadline
        assert bad.status in (Status.CRASH, Status.TIMEOUT), res
    else:
        assert bad.status is Status.CRASH and bad.error_type == "ProtocolViolation", res
    never_passes(bad.value, "expected")
    # The next input still runs, in a new child.
    assert res.outcomes[2].status is Status.OK and res.outcomes[2].value == 20, res
    assert len(res.outcomes) == 3 and res.children == 2, res
    assert took < H.roomy(SHORT.per_input + SHORT.slack + 2.0), took


def test_frame_walk_finds_no_expected_outputs(sb):
    code = prog(
        r"""
        import gc, re, sys
        PAT = re.compile(r"expected-[0-9a-f]{32}")
        NAMES = ("expected", "expected_output", "results", "outputs", "answers", "gold")
        def _scan_str(s, hits):
            if PAT.search(s):
                hits.append(s[:200])
        def f(x):
            hits, names, frames = [], [], 0
            fr = sys._getframe()
            while fr is not None:
                frames += 1
                for scope in (fr.f_locals, fr.f_globals):
                    for k, v in list(scope.items()):
                        if isinstance(v, str):
                            _scan_str(v, hits)
                        if isinstance(k, str) and k.lower() in NAMES:
                            names.append(k)
                fr = fr.f_back
            objs = gc.get_objects()
            for o in objs:
                if isinstance(o, dict):
                    for k, v in list(o.items()):
                        if isinstance(k, str) and k.lower() in NAMES:
                            names.append(k)
                        if isinstance(v, str):
                            _scan_str(v, hits)
                elif isinstance(o, (list, tuple)):
                    for v in o:
                        if isinstance(v, str):
                            _scan_str(v, hits)
            return {"frames": frames, "objects": len(objs), "hits": hits, "names": names,
                    "answer": hits[0] if hits else None}
        """
    )
    expected = secret()
    o = H.run1(sb, code, [5])
    assert o.status is Status.OK, o
    v = o.value
    assert v["frames"] >= 3 and v["objects"] > 1000, v  # the walk really happened
    assert v["hits"] == [] and v["answer"] is None, v
    assert expected not in json.dumps(v, default=str)
    never_passes(v["answer"], expected)
    never_passes(v, expected)


# ---------------------------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def planted_secrets(monkeypatch):
    """API keys and a data path in the evaluator's environment, set before a fresh sandbox."""
    tok = uuid.uuid4().hex
    env = {
        "OPENAI_API_KEY": f"sk-canary-{tok}",
        "ANTHROPIC_API_KEY": f"sk-ant-canary-{tok}",
        "HF_TOKEN": f"hf_canary{tok}",
        "UTDEBUG_DATASET_CANARY": f"{H.DATASET_DIR}/{tok}",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return tok


@pytest.fixture(params=MODES)
def fresh_sb(request, planted_secrets):
    """A sandbox started after the secrets were planted (hides the data dir, as bench does)."""
    s = _start(request.param)
    try:
        yield s
    finally:
        _stop(s)


def test_environment_has_no_secrets(fresh_sb, planted_secrets):
    code = prog(
        """
        import os
        def f():
            env = dict(os.environ)
            try:
                raw = open("/proc/self/environ", "rb").read().decode("latin-1")
            except OSError as e:
                raw = type(e).__name__
            return [env, raw]
        """
    )
    o = H.run1(fresh_sb, code, [])
    assert o.status is Status.OK, o
    env, raw = o.value
    from utdebug.sandbox.layers import CHILD_ENV

    # Only the sandbox's fixed variables (bubblewrap adds PWD for its --chdir).
    assert set(env) <= set(CHILD_ENV) | {"PWD"}, env
    assert env.get("PWD", "/tmp") in ("/", "/tmp"), env
    assert planted_secrets not in repr(o.value)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "UTDEBUG_DATASET_CANARY"):
        assert key not in env and key not in raw


def test_proc_environ_scan_finds_no_secrets(fresh_sb, planted_secrets):
    code = prog(
        """
        import os
        def f(host_pids):
            seen = {}
            visible = sorted(p for p in os.listdir("/proc") if p.isdigit())
            for p in visible + [str(x) for x in host_pids]:
                try:
                    with open(f"/proc/{p}/environ", "rb") as fh:
                        seen[p] = fh.read(1 << 16).decode("latin-1")
                except OSError as e:
                    seen[p] = "error: " + type(e).__name__
            return [visible, seen]
        """
    )
    me = os.getpid()
    o = H.run1(fresh_sb, code, [[me, os.getppid(), zygote_pid(fresh_sb), 1]])
    assert o.status is Status.OK, o
    visible, seen = o.value
    leaked = [pid for pid, text in seen.items() if planted_secrets in text]
    assert not leaked, f"the planted key was read from /proc/{leaked}/environ"
    # This process's own entry gives nothing away.
    assert seen[str(me)].startswith("error: "), seen[str(me)][:80]
    if fresh_sb.layers.mode == "bwrap":
        # A private PID namespace: only the sandbox's own few processes are visible.
        assert len(visible) <= 4, visible
    # Whatever else is visible is unreadable, or a sandbox process of the child's own uid.
    readable = [p for p, text in seen.items() if not text.startswith("error: ")]
    assert len(readable) <= 2, readable


@pytest.mark.parametrize(
    "mode",
    ["bwrap", "root"],
)
def test_host_command_lines_are_invisible(mode, host):
    """A secret passed on some host process's command line does not reach the child."""
    canary = f"sk-canary-argv-{host.token}"
    witness = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", f"--api-key={canary}"],
        start_new_session=True,
    )
    s = _start(mode)
    try:
        code = prog(
            """
            import os
            def f(marker):
                hits = []
                for p in os.listdir("/proc"):
                    if not p.isdigit():
                        continue
                    try:
                        with open(f"/proc/{p}/cmdline", "rb") as fh:
                            text = fh.read(1 << 16).decode("latin-1")
                    except OSError:
                        continue
                    if marker in text:
                        hits.append(p)
                return hits
            """
        )
        # The child is told only the public prefix; the token stays in the parent.
        o = H.run1(s, code, ["sk-canary-argv-"])
        assert o.status is Status.OK, o
        assert o.value == [], f"host command lines with the key are visible: pids {o.value}"
    finally:
        witness.kill()
        witness.wait()
        _stop(s)


def _host_head(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(256)
    except OSError:
        return None


SECRET_FILES = [
    str(H.DATASET_FILE),
    str(H.DATASET_DIR / "README.md"),
    "/root/.bashrc",
    "/etc/shadow",
    "/etc/gshadow",
]
REPO_FILES = [
    str(H.REPO / "pyproject.toml"),
    str(H.REPO / "sandbox" / "executor.py"),
    str(H.REPO.parent / "shared" / "docs" / "sandbox-research.md"),
]


WALK = replace(H.FAST, per_input=10.0)
"""Walking the visible file tree takes over 1 s on a loaded machine; what is checked here is
what the child can read, not how fast."""


def _read_files_code() -> str:
    return prog(
        """
        import os
        def f(paths, roots):
            out = {}
            for p in paths:
                try:
                    with open(p, "rb") as fh:
                        out[p] = fh.read(4096).decode("latin-1")
                except OSError as e:
                    out[p] = "error: " + type(e).__name__
            found, n = [], 0
            for root in roots:
                for d, dirs, files in os.walk(root):
                    dirs[:] = [x for x in dirs if x not in (".venv", ".git", "node_modules")]
                    for name in files:
                        n += 1
                        if name.endswith((".jsonl", ".jsonl.gz")) or "test" in name.lower():
                            found.append(os.path.join(d, name))
                    if n > 20000:
                        break
            return [out, found[:200]]
        """
    )


def test_secret_files_cannot_be_read(fresh_sb):
    me = os.getpid()
    paths = [
        *SECRET_FILES,
        f"/proc/{me}/environ",
        f"/proc/{me}/root/etc/shadow",
        f"/proc/{me}/root{H.DATASET_FILE}",
        f"/proc/{zygote_pid(fresh_sb)}/root/root/.bashrc",
        "/proc/1/root/etc/shadow",
        f"/proc/1/root{H.DATASET_FILE}",
    ]
    roots = ["/work", "/root", "/home", "/srv", "/mnt", "/data"]
    o = H.run1(fresh_sb, _read_files_code(), [paths, roots], WALK)
    assert o.status is Status.OK, o
    out, found = o.value
    for p in SECRET_FILES:
        assert out[p].startswith("error: "), (p, out[p][:100])
    dumped = json.dumps(o.value).encode("latin-1", "replace")
    for p in [*SECRET_FILES, *REPO_FILES]:
        head = _host_head(p)
        if head and len(head) >= 32:
            assert head[:64] not in dumped, f"the content of {p} reached the child"
    assert not [x for x in found if x.startswith(str(H.DATASET_DIR))], found


def test_repo_files_cannot_be_read(sb):
    o = H.run1(sb, _read_files_code(), [REPO_FILES, [str(H.REPO)]], WALK)
    assert o.status is Status.OK, o
    out, found = o.value
    for p in REPO_FILES:
        assert out[p].startswith("error: "), (p, out[p][:100])
        head = _host_head(p)
        assert head is None or head[:64].decode("latin-1") not in out[p]
    # The interpreter's virtual env is visible read-only (it is the interpreter), nothing else.
    assert not [x for x in found if "/tests/" in x or x.endswith(".jsonl")], found


def test_fallback_default_config_hides_the_dataset_and_repo(host):
    """A world-readable data file outside the default hide list (/var/lib here) stays hidden."""
    data_dir = f"/var/lib/utdebug-canary-{host.token}"
    data_file = f"{data_dir}/MBPP+Fix_hard_test.jsonl"
    os.makedirs(data_dir, mode=0o755)
    try:
        with open(data_file, "w") as fh:
            fh.write('{"task_id": 1, "results": ["secret-' + host.token + '"]}\n')
        os.chmod(data_file, 0o644)
        s = _start("root")
        try:
            paths = [data_file, str(H.DATASET_FILE), *REPO_FILES]
            o = H.run1(s, _read_files_code(), [paths, ["/var/lib", "/work"]])
            assert o.status is Status.OK, o
            out, found = o.value
            readable = [p for p in paths if not out[p].startswith("error: ")]
            assert not readable, f"readable with the default fallback config: {readable}"
            assert data_file not in found, found
        finally:
            _stop(s)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# File system
# ---------------------------------------------------------------------------------------------

WRITE_CODE = prog(
    """
    import os
    def f(paths):
        out = {}
        for p in paths:
            try:
                with open(p, "xb") as fh:
                    fh.write(b"pwned")
                out[p] = "written"
            except OSError as e:
                out[p] = type(e).__name__
            try:
                os.mkdir(p + ".d")
                out[p + ".d"] = "made"
            except OSError as e:
                out[p + ".d"] = type(e).__name__
        return out
    """
)


def test_writes_outside_land_nowhere_on_the_host(any_sb, host):
    paths = [*host.forbidden, "../utdebug-pwn-" + host.token]
    o = H.run1(any_sb, WRITE_CODE, [paths])
    assert o.status is Status.OK, o
    assert set(o.value) >= set(paths)
    # Read-only or absent places refuse outright, whatever the mode.
    for p in (f"{H.REPO}/utdebug-pwn-{host.token}", f"{H.REPO}/.venv/utdebug-pwn-{host.token}"):
        assert o.value[p] != "written", o.value
    host.check(uid_lo=any_sb.config.uid_base)
    for p in host.forbidden:
        assert not os.path.lexists(p + ".d"), p


def test_host_canaries_cannot_be_deleted_or_changed(any_sb, host):
    code = prog(
        """
        import os
        def f(paths, d):
            out = []
            for p in paths:
                for name, op in [
                    ("remove", lambda: os.remove(p)),
                    ("truncate", lambda: os.truncate(p, 0)),
                    ("overwrite", lambda: open(p, "wb").write(b"pwned")),
                    ("chmod", lambda: os.chmod(p, 0o777)),
                    ("rename", lambda: os.rename(p, p + ".moved")),
                    ("symlink", lambda: os.symlink("/etc/passwd", p)),
                ]:
                    try:
                        op()
                        out.append([p, name, "done"])
                    except OSError as e:
                        out.append([p, name, type(e).__name__])
            for name, op in [("rmdir", lambda: os.rmdir(d)), ("drop", lambda: open(d + "/x", "w"))]:
                try:
                    op()
                    out.append([d, name, "done"])
                except OSError as e:
                    out.append([d, name, type(e).__name__])
            return out
        """
    )
    o = H.run1(any_sb, code, [sorted(host.canaries), host.canary_dir])
    assert o.status is Status.OK, o
    assert len(o.value) == 6 * len(host.canaries) + 2
    host.check(uid_lo=any_sb.config.uid_base)


def test_fill_the_disk_hits_the_file_size_limit(any_sb, host):
    code = prog(
        """
        import os
        def f(name):
            if name is None:
                return "fine"
            for d in ("/tmp", "/dev/shm", "/var/tmp", os.getcwd()):
                if os.path.isdir(d) and os.access(d, os.W_OK):
                    break
            else:  # nowhere to write at all (bubblewrap's /tmp is root's): the disk is safe
                d = "/tmp"
            chunk = b"\\0" * (1 << 20)
            with open(os.path.join(d, name), "wb") as fh:
                for _ in range(64):
                    fh.write(chunk)
                    fh.flush()
            return os.path.getsize(os.path.join(d, name))
        """
    )
    lim = Limits(per_input=2.0, load=5.0, memory_mb=1024, fsize_mb=1)
    name = f"utdebug-pwn-{host.token}"
    res = any_sb.run(code, "f", [[name], [None]], lim)
    o = res.outcomes[0]
    assert o.status is Status.ERROR, res
    if o.error_type == "PermissionError":
        assert any_sb.layers.mode == "bwrap", o  # only bubblewrap's /tmp is not writable
    else:
        assert o.error_type == "OSError" and "too large" in (o.error or "").lower(), o
    assert res.outcomes[1].value == "fine" and res.children == 1, res
    for d in ("/tmp", "/dev/shm", "/var/tmp"):
        assert not os.path.exists(os.path.join(d, name))


# ---------------------------------------------------------------------------------------------
# Network
# ---------------------------------------------------------------------------------------------

CONNECT_CODE = prog(
    """
    import socket
    def f(family, address):
        if isinstance(address, list):
            address = tuple(address)
        try:
            s = socket.socket(getattr(socket, family), socket.SOCK_STREAM)
        except OSError as e:
            return ["socket", type(e).__name__, e.errno]
        try:
            s.settimeout(1.0)
            s.connect(address)
            s.sendall(b"pwned")
            return ["connected"]
        except OSError as e:
            return ["connect", type(e).__name__, e.errno]
    """
)


def _assert_nothing_accepted(srv: socket.socket) -> None:
    srv.setblocking(False)
    try:
        conn, addr = srv.accept()
    except BlockingIOError:
        return
    conn.close()
    pytest.fail(f"the listener accepted a connection from the sandbox ({addr!r})")


def test_tcp_to_a_host_listener_is_refused(any_sb):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        port = srv.getsockname()[1]
        o = H.run1(any_sb, CONNECT_CODE, ["AF_INET", ["127.0.0.1", port]])
        assert o.status is Status.OK, o
        assert o.value[0] in ("socket", "connect") and o.value[0:2] != ["connected"], o
        if Layer.SECCOMP in any_sb.layers.active():
            assert o.value == ["socket", "PermissionError", 1], o
        # the child has ended: a connection it made would be in the backlog already
        _assert_nothing_accepted(srv)


def test_unix_socket_by_path_is_refused(any_sb, host):
    path = f"/tmp/utdebug-sock-{host.token}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(path)
        os.chmod(path, 0o777)
        srv.listen(8)
        try:
            o = H.run1(any_sb, CONNECT_CODE, ["AF_UNIX", path])
            assert o.status is Status.OK, o
            assert o.value[0] != "connected", o
            if Layer.SECCOMP in any_sb.layers.active():
                assert o.value == ["socket", "PermissionError", 1], o
            _assert_nothing_accepted(srv)
        finally:
            os.unlink(path)


def test_abstract_unix_socket_is_refused(sb, host):
    name = f"\0utdebug-{host.token}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(name)
        srv.listen(8)
        o = H.run1(sb, CONNECT_CODE, ["AF_UNIX", name])
        assert o.status is Status.OK, o
        assert o.value == ["socket", "PermissionError", 1], o
        _assert_nothing_accepted(srv)


def test_every_way_to_get_a_socket_is_denied(sb):
    code = prog(
        """
        import ctypes, socket, _socket
        def f():
            out = {}
            for name, op in [
                ("socket()", lambda: socket.socket()),
                ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
                ("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)),
                ("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)),
                ("socketpair", lambda: socket.socketpair()),
                ("_socket", lambda: _socket.socket(_socket.AF_INET6, _socket.SOCK_STREAM)),
            ]:
                try:
                    op()
                    out[name] = "created"
                except OSError as e:
                    out[name] = [type(e).__name__, e.errno]
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.socket(2, 1, 0)
            out["libc.socket"] = [fd, ctypes.get_errno()]
            return out
        """
    )
    o = H.run1(sb, code, [])
    assert o.status is Status.OK, o
    for name, v in o.value.items():
        if name == "libc.socket":
            assert v == [-1, 1], o.value
        else:
            assert v == ["PermissionError", 1], (name, o.value)


SYSCALL_CODE = prog(
    """
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    def call(nr, *args):
        ctypes.set_errno(0)
        r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
        return [r, ctypes.get_errno()]
    def f():
        ppid = os.getppid()
        params = ctypes.create_string_buffer(120)
        buf = ctypes.create_string_buffer(64)
        iov = ctypes.addressof(buf)
        out = {
            "io_uring_setup": call(425, 8, ctypes.addressof(params)),
            "ptrace_attach_parent": call(101, 16, ppid, 0, 0),
            "ptrace_traceme": call(101, 0, 0, 0, 0),
            "process_vm_readv_parent": call(310, ppid, iov, 1, iov, 1, 0),
            "unshare_user": call(272, 0x10000000),
            "unshare_mount": call(272, 0x00020000),
            "mount": call(165, 0, 0, 0, 0, 0),
            "bpf": call(321, 0, ctypes.addressof(buf), 64),
            "perf_event_open": call(298, ctypes.addressof(buf), 0, -1, -1, 0),
            "userfaultfd": call(323, 0),
            "keyctl": call(250, 0, 0, 0, 0, 0),
            "pidfd_open_parent": call(434, ppid, 0),
            "setsid": call(112),
            "kill_parent": call(62, ppid, 9),
            "tgkill_parent": call(234, ppid, ppid, 9),
            "personality": call(135, 0x0040000),
            "clone3": call(435, ctypes.addressof(buf), 64),
            "chroot": call(161, ctypes.addressof(ctypes.create_string_buffer(b"/tmp"))),
        }
        return out
    """
)


def test_dangerous_syscalls_fail(sb):
    """io_uring, ptrace, namespaces, mounts, bpf, signals... all fail with an errno."""
    if os.uname().machine != "x86_64":
        pytest.skip("the raw syscall numbers of this test are x86_64 ones")
    o = H.run1(sb, SYSCALL_CODE, [])
    assert o.status is Status.OK, o
    for name, (ret, err) in o.value.items():
        assert ret == -1 and err != 0, (name, ret, err, o.value)
    assert o.value["io_uring_setup"][1] in (1, 38), o.value  # EPERM (seccomp) or ENOSYS
    assert o.value["clone3"][1] == 38, o.value  # ENOSYS: glibc falls back to clone


# ---------------------------------------------------------------------------------------------
# Signals and processes
# ---------------------------------------------------------------------------------------------

KILL_CODE = prog(
    """
    import os, signal
    def f(what, pids):
        if what is None:
            return "still here"
        out = []
        targets = {"ppid": [os.getppid()], "host": pids, "all": [-1]}[what]
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
                out.append([pid, "sent"])
            except OSError as e:
                out.append([pid, type(e).__name__])
        return out
    """
)


def test_kill_the_parent(any_sb):
    zpid = zygote_pid(any_sb)
    res = any_sb.run(
        KILL_CODE, "f", [["ppid", []], ["host", [os.getpid(), zpid, 1]], [None, []]], FAST
    )
    ppid_try, host_try, after = res.outcomes
    assert ppid_try.status is Status.OK and ppid_try.value[0][1] == "PermissionError", res
    assert host_try.status is Status.OK, res
    assert all(r[1] in ("PermissionError", "ProcessLookupError") for r in host_try.value), res
    if Layer.SECCOMP in any_sb.layers.active():
        assert all(r[1] == "PermissionError" for r in host_try.value), res
    assert after.value == "still here" and res.children == 1, res
    # The zygote is the same process, and this process (the evaluator) is alive.
    assert zygote_pid(any_sb) == zpid


def test_zygote_fds_and_memory_are_unreachable(any_sb):
    """The zygote's control socket would let a child spawn unconfined jobs: out of reach."""
    code = prog(
        """
        import os
        def f():
            ppid = os.getppid()
            out = {}
            try:
                out["fd list"] = os.listdir(f"/proc/{ppid}/fd")
            except OSError as e:
                out["fd list"] = type(e).__name__
            for fd in range(16):
                try:
                    os.close(os.open(f"/proc/{ppid}/fd/{fd}", os.O_RDWR))
                    out[f"fd {fd}"] = "opened"
                except OSError as e:
                    out[f"fd {fd}"] = type(e).__name__
            for what in ("mem", "environ", "root/", "cwd/", "map_files/"):
                try:
                    if what.endswith("/"):
                        os.listdir(f"/proc/{ppid}/{what}")
                    else:
                        open(f"/proc/{ppid}/{what}", "rb").read(16)
                    out[what] = "read"
                except OSError as e:
                    out[what] = type(e).__name__
            return out
        """
    )
    o = H.run1(any_sb, code, [])
    assert o.status is Status.OK, o
    # Denied (bwrap: another uid) or not even visible (fallback: /proc with hidepid=2).
    assert o.value["fd list"] in ("PermissionError", "FileNotFoundError"), o.value
    opened = [k for k, v in o.value.items() if v in ("opened", "read")]
    assert not opened, o.value


def test_kill_every_process(sb):
    if Layer.SECCOMP not in sb.layers.active():
        pytest.skip("kill(-1, SIGKILL) is only tried with the seccomp layer active")
    witness = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        zpid = zygote_pid(sb)
        res = sb.run(KILL_CODE, "f", [["all", []], [None, []]], FAST)
        assert res.outcomes[0].status is Status.OK, res
        assert res.outcomes[0].value == [[-1, "PermissionError"]], res
        assert res.outcomes[1].value == "still here"
        assert witness.poll() is None, "kill(-1) reached a host process"
        assert zygote_pid(sb) == zpid
    finally:
        witness.kill()
        witness.wait()


def test_killpg_of_own_group(sb):
    code = prog(
        """
        import os, signal
        def f(x):
            if x == 0:
                return x
            try:
                os.killpg(0 if x == 1 else os.getpgid(0), signal.SIGKILL)
                return "sent"
            except OSError as e:
                return type(e).__name__
        """
    )
    zpid = zygote_pid(sb)
    res = sb.run(code, "f", [[1], [2], [0]], FAST)
    assert [o.value for o in res.outcomes] == ["PermissionError", "PermissionError", 0], res
    assert res.children == 1 and zygote_pid(sb) == zpid


def test_signals_to_self_and_handler_tampering(sb):
    code = prog(
        """
        import os, signal, threading
        def f(x):
            if x == 0:
                return os.kill(os.getpid(), signal.SIGKILL)
            if x == 1:
                return signal.pthread_kill(threading.main_thread().ident, signal.SIGKILL)
            if x == 2:
                for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGXCPU):
                    signal.signal(s, signal.SIG_IGN)
                return "ignored"
            return "after"
        """
    )
    res = sb.run(code, "f", [[0], [1], [2], [3]], FAST)
    assert len(res.outcomes) == 4, res
    for o in res.outcomes[:2]:  # denied by seccomp (or the child died): that input only
        assert o.status in (Status.ERROR, Status.CRASH), res
    assert res.outcomes[2].value == "ignored"
    assert res.outcomes[3].value == "after"


FORK_BOMB = prog(
    """
    import os, time
    def f(x):
        n = 0
        try:
            while n < 200:  # bounded on purpose, should the sandbox fail
                pid = os.fork()
                if pid == 0:
                    time.sleep(20)  # a leftover the host scan would catch
                    os._exit(0)
                n += 1
        except OSError as e:
            return [n, type(e).__name__]
        return [n, None]
    """
)


def test_fork_bomb_fails_at_the_first_fork(any_sb):
    t0 = time.monotonic()
    res = any_sb.run(FORK_BOMB, "f", [[0], [1]], FAST)
    for o in res.outcomes:
        assert o.status is Status.OK and o.value == [0, "PermissionError"], res
    assert time.monotonic() - t0 < 5
    H.assert_no_sandbox_processes(any_sb, grace=0.5)


def test_every_way_to_spawn_a_process_is_denied(sb):
    code = prog(
        """
        import ctypes, os, subprocess
        def f():
            out = {}
            libc = ctypes.CDLL(None, use_errno=True)
            def raw_clone():
                r = libc.syscall(ctypes.c_long(56), ctypes.c_long(17), 0, 0, 0, 0)
                if r == 0:
                    libc._exit(0)
                if r < 0:
                    raise OSError(ctypes.get_errno(), "clone")
                return r
            def libc_fork():
                r = libc.fork()
                if r == 0:
                    libc._exit(0)
                if r < 0:
                    raise OSError(ctypes.get_errno(), "fork")
                return r
            for name, op in [
                ("subprocess", lambda: subprocess.Popen(["sleep", "30"], start_new_session=True)),
                ("posix_spawn", lambda: os.posix_spawn("/bin/sleep", ["sleep", "30"], {})),
                ("system", lambda: os.system("sleep 30 &")),
                ("forkpty", lambda: os.forkpty()),
                ("libc.fork", libc_fork),
                ("raw clone", raw_clone),
                ("setsid", lambda: os.setsid()),
                ("setpgid", lambda: os.setpgid(0, 0)),
            ]:
                try:
                    r = op()
                    out[name] = ["ran", repr(r)]
                except OSError as e:
                    out[name] = [type(e).__name__, e.errno]
            return out
        """
    )
    o = H.run1(sb, code, [])
    assert o.status is Status.OK, o
    for name, v in o.value.items():
        if name == "system":  # os.system reports failure as a status, not an exception
            assert v[0] == "ran" and v[1] != "0", o.value
        else:
            assert v[0] != "ran", (name, o.value)
    H.assert_no_sandbox_processes(sb, grace=0.5)


def test_daemon_does_not_outlive_the_batch(any_sb):
    code = prog(
        """
        import os, subprocess
        def f(how):
            try:
                if how == "fork":
                    pid = os.fork()
                    if pid == 0:
                        try:
                            os.setsid()
                            os.execv("/bin/sleep", ["sleep", "30"])
                        finally:
                            os._exit(0)
                    return ["forked", pid]
                p = subprocess.Popen(["sleep", "30"], start_new_session=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
                return ["spawned", p.pid]
            except OSError as e:
                return [type(e).__name__, e.errno]
        """
    )
    res = any_sb.run(code, "f", [["fork"], ["popen"]], FAST)
    for o in res.outcomes:
        assert o.status is Status.OK and o.value[0] == "PermissionError", res
    H.assert_no_sandbox_processes(any_sb, grace=1.0)


def test_thread_bomb_is_bounded(sb):
    code = prog(
        """
        import threading, time
        def f(x):
            n = 0
            try:
                while n < 5000:
                    threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
                    n += 1
            except BaseException as e:
                return [n, type(e).__name__]
            return [n, None]
        """
    )
    lim = Limits(per_input=3.0, load=5.0, memory_mb=512)
    t0 = time.monotonic()
    res = sb.run(code, "f", [[0]], lim)
    took = time.monotonic() - t0
    o = res.outcomes[0]
    assert o.status in (Status.OK, Status.ERROR, Status.TIMEOUT), o
    if o.status is Status.OK:
        n, err = o.value
        assert n < 5000 and err in ("RuntimeError", "MemoryError"), o
    H.cpu_stopped(res, lim, lim.per_input)
    assert took < H.roomy(lim.per_input + lim.slack + 1.0), took
    H.assert_no_sandbox_processes(sb, grace=1.0)


# ---------------------------------------------------------------------------------------------
# Resources and timeouts
# ---------------------------------------------------------------------------------------------


def _run_timed(s: Sandbox, code: str, inputs: list[list[Any]], lim: Limits = SHORT):
    t0 = time.monotonic()
    res = s.run(code, "f", inputs, lim)
    return res, time.monotonic() - t0


def test_infinite_loop_times_out_that_input_only(sb):
    code = "def f(x):\n    while x == 1:\n        pass\n    return x\n"
    res, took = _run_timed(sb, code, [[0], [1], [2]])
    assert [o.status for o in res.outcomes] == [Status.OK, Status.TIMEOUT, Status.OK], res
    assert res.outcomes[2].value == 2
    H.cpu_stopped(res, SHORT, SHORT.per_input)
    assert took < H.roomy(SHORT.per_input + SHORT.slack + 1.0), took


HARD_DEADLINE_CASES = {
    "timer_signals_ignored": """
        import signal
        def f(x):
            if x == 1:
                signal.signal(signal.SIGALRM, signal.SIG_IGN)
                signal.signal(signal.SIGPROF, signal.SIG_IGN)
                while True:
                    pass
            return x
        """,
    "timers_cancelled_then_spin": """
        import signal
        def f(x):
            if x == 1:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.setitimer(signal.ITIMER_PROF, 0)
                while True:
                    pass
            return x
        """,
    "timer_cancelled_then_sleep": """
        import signal, time
        def f(x):
            if x == 1:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.alarm(0)
                time.sleep(60)
            return x
        """,
    "except_baseexception_loop": """
        def g():
            return 1
        def f(x):
            while x == 1:
                try:
                    while True:
                        g()
                except BaseException:
                    pass
            return x
        """,
    "handler_replaced": """
        import signal
        def f(x):
            if x == 1:
                signal.signal(signal.SIGALRM, lambda *a: None)
                signal.signal(signal.SIGPROF, lambda *a: None)
                while True:
                    pass
            return x
        """,
    "c_level_sum": """
        def f(x):
            if x == 1:
                return sum(range(10 ** 13))
            return x
        """,
}


@pytest.mark.parametrize("limit_kind", ["cpu", "wall"])
@pytest.mark.parametrize("kind", sorted(HARD_DEADLINE_CASES))
def test_parent_hard_deadline(sb, kind, limit_kind):
    lim = replace(SHORT, kind=limit_kind)
    res, took = _run_timed(sb, prog(HARD_DEADLINE_CASES[kind]), [[0], [1], [2]], lim)
    assert [o.status for o in res.outcomes] == [Status.OK, Status.TIMEOUT, Status.OK], res
    if kind == "timers_cancelled_then_spin" and limit_kind == "cpu":
        # setitimer cannot cancel the child's POSIX timer on its CPU clock: the input times
        # out in the child, at its limit, and the child goes on.
        assert res.outcomes[1].error == f"timed out: {SHORT.per_input:g} s of CPU time", res
        assert res.outcomes[1].seconds >= SHORT.per_input and res.children == 1, res
        return
    assert "hard deadline" in (res.outcomes[1].error or ""), res.outcomes[1]
    assert res.outcomes[2].value == 2 and res.children == 2, res
    # Under CPU-time limits a sleeping program is stopped by the wall-clock backstop.
    wall = lim.backstop(lim.per_input)
    assert res.outcomes[1].seconds < SHORT.per_input + SHORT.slack + 1.0, res.outcomes[1]
    H.cpu_stopped(res, lim, SHORT.per_input)
    assert took < H.roomy(wall + SHORT.slack + 1.0), took


CPU_CLAIMS = {"zero": "0.0", "negative": "-5.0", "huge": "1e300", "text": "'cheap'"}


@pytest.mark.parametrize("claim", sorted(CPU_CLAIMS))
def test_a_forged_cpu_reading_cannot_hide_cpu_time(sb, claim):
    """Input 1 spins past its CPU limit with its timers silenced, then reports itself as a
    quick pass with a forged CPU reading: the parent's own readings of the child's CPU clock
    bound the claim, and the input is a timeout."""
    code = FRAMES + prog(
        f"""
        import signal, time
        def f(x):
            if x == 1:
                signal.signal(signal.SIGALRM, signal.SIG_IGN)
                signal.signal(signal.SIGPROF, signal.SIG_IGN)
                t = time.process_time()
                while time.process_time() - t < 0.65:
                    pass
                claim = {{"k": "r", "i": 1, "s": "ok", "t": 0.0, "v": 10, "u": {CPU_CLAIMS[claim]}}}
                _send(_frame(claim) + _frame({{"k": "end", "out": 0}}))
                os._exit(0)
            return x * 10
        """
    )
    res = sb.run(code, "f", [[0], [1]], SHORT)
    first, forged = res.outcomes
    assert first.status is Status.OK and first.value == 0, res
    assert forged.status is Status.TIMEOUT, res
    assert forged.seconds > SHORT.per_input, forged
    assert "CPU time" in (forged.error or ""), forged


@pytest.mark.parametrize("claim", sorted(CPU_CLAIMS))
def test_a_forged_cpu_reading_of_a_quick_input_changes_nothing(sb, claim):
    """A quick input that reports a wild CPU reading is still charged what the parent saw."""
    code = FRAMES + prog(
        f"""
        def f(x):
            if x == 1:
                claim = {{"k": "r", "i": 1, "s": "ok", "t": 0.0, "v": 10, "u": {CPU_CLAIMS[claim]}}}
                _send(_frame(claim) + _frame({{"k": "end", "out": 0}}))
                os._exit(0)
            return x * 10
        """
    )
    res = sb.run(code, "f", [[0], [1]], SHORT)
    assert [o.status for o in res.outcomes] == [Status.OK, Status.OK], res
    assert res.outcomes[1].value == 10 and 0 <= res.outcomes[1].seconds < SHORT.per_input, res


@pytest.mark.parametrize(
    "expr",
    ["10 ** 10 ** 7", "__import__('re').match('(a+)+$', 'a' * 40 + 'b')", "pow(3, 10 ** 8)"],
)
def test_long_c_level_operation_times_out(sb, expr):
    code = f"def f(x):\n    if x == 1:\n        return {expr}\n    return x\n"
    res, took = _run_timed(sb, code, [[0], [1], [2]])
    assert [o.status for o in res.outcomes] == [Status.OK, Status.TIMEOUT, Status.OK], res
    H.cpu_stopped(res, SHORT, SHORT.per_input)
    assert took < H.roomy(SHORT.per_input + SHORT.slack + 1.0), took


def test_deep_recursion_with_raised_limit(sb):
    code = prog(
        """
        import sys
        sys.setrecursionlimit(10 ** 8)
        def r(n):
            return r(n + 1) + 1
        def f(x):
            return r(0) if x == 1 else x
        """
    )
    lim = Limits(per_input=1.0, load=5.0, memory_mb=512)
    res, took = _run_timed(sb, code, [[0], [1], [2]], lim)
    assert res.outcomes[1].status in (Status.ERROR, Status.CRASH, Status.TIMEOUT), res
    assert [o.value for o in (res.outcomes[0], res.outcomes[2])] == [0, 2], res
    H.cpu_stopped(res, lim, lim.per_input)
    assert took < H.roomy(lim.per_input + lim.slack + 2.0), took


@pytest.mark.parametrize(
    "expr",
    [
        "bytearray(8 << 30)",
        "[0] * (1 << 30)",
        "b'x' * (8 << 30)",
        "__import__('numpy').ones(1 << 30)",
    ],
)
def test_huge_allocation_is_a_quick_memory_error(sb, expr):
    code = f"def f(x):\n    if x == 1:\n        return {expr}\n    return x\n"
    res, took = _run_timed(sb, code, [[0], [1], [2]], FAST)
    bad = res.outcomes[1]
    assert bad.status is Status.ERROR and "MemoryError" in (bad.error_type or ""), res
    assert res.outcomes[2].value == 2 and res.children == 1, res
    assert res.cpu_seconds < 1.5 and took < H.roomy(1.5), (res, took)


def test_flooding_stdout_and_stderr(sb, capfd):
    code = prog(
        """
        import os, sys
        def f(x):
            chunk = b"x" * (1 << 20)
            for _ in range(1024):  # 1 GiB to fd 1, and to fd 2
                os.write(1, chunk)
                os.write(2, chunk)
            for _ in range(50):
                print("y" * (1 << 20))
                print("z" * (1 << 20), file=sys.stderr)
            sys.__stdout__ and sys.__stdout__.write("direct\\n")
            return x + 1
        """
    )
    lim = Limits(per_input=10.0, load=5.0, memory_mb=1024)
    res = sb.run(code, "f", [[41]], lim)
    assert res.outcomes[0].status is Status.OK and res.outcomes[0].value == 42, res
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out[:200], err[:200])


def test_huge_return_value(sb):
    code = "def f(x):\n    return list(range(10 ** 7)) if x == 1 else x\n"
    lim = Limits(per_input=1.0, load=5.0, memory_mb=2048)
    res, took = _run_timed(sb, code, [[0], [1], [2]], lim)
    bad = res.outcomes[1]
    assert bad.status in (Status.ERROR, Status.CRASH, Status.TIMEOUT), res
    if bad.status is Status.ERROR:
        assert bad.error_type == "OutputTooLarge", bad
    assert res.outcomes[2].value == 2, res
    H.cpu_stopped(res, lim, lim.per_input)
    assert took < H.roomy(lim.per_input + lim.slack + 1.5), took


def test_result_over_the_frame_cap_is_output_too_large(sb):
    code = "def f(x):\n    return 'x' * (2 << 20) if x == 1 else x\n"
    lim = Limits(per_input=2.0, load=5.0, frame_cap=1 << 20)
    res = sb.run(code, "f", [[0], [1], [2]], lim)
    bad = res.outcomes[1]
    assert bad.status is Status.ERROR and bad.error_type == "OutputTooLarge", res
    assert res.outcomes[2].value == 2 and res.children == 1, res


EXITS = {
    # name: (statement, expected status, expected error type or None)
    "os._exit": ("os._exit(0)", Status.CRASH, None),
    "posix._exit": ("__import__('posix')._exit(3)", Status.CRASH, None),
    "os.abort": ("os.abort()", Status.CRASH, None),
    "sys.exit": ("sys.exit(0)", Status.ERROR, "SystemExit"),
    "raise SystemExit": ("raise SystemExit", Status.ERROR, "SystemExit"),
    "KeyboardInterrupt": ("raise KeyboardInterrupt", Status.ERROR, "KeyboardInterrupt"),
    "GeneratorExit": ("raise GeneratorExit", Status.ERROR, "GeneratorExit"),
}


@pytest.mark.parametrize("kind", sorted(EXITS))
def test_exit_attempts_affect_that_input_only(sb, kind):
    stmt, status, etype = EXITS[kind]
    code = f"import os, sys\ndef f(x):\n    if x == 1:\n        {stmt}\n    return x\n"
    res = sb.run(code, "f", [[0], [1], [2]], FAST)
    assert [o.status for o in res.outcomes] == [Status.OK, status, Status.OK], res
    assert res.outcomes[2].value == 2
    if etype is not None:
        assert res.outcomes[1].error_type == etype, res
        assert res.children == 1
    else:
        assert res.children == 2


# ---------------------------------------------------------------------------------------------
# The parent's own robustness against hostile result frames (HOLES found by this suite)
# ---------------------------------------------------------------------------------------------


def test_deeply_nested_frame_is_a_crash_not_an_exception(sb):
    code = FRAMES + prog(
        """
        def f(x):
            if x == 1:
                body = b'{"k":"r","i":1,"s":"ok","t":0,"v":' + b"[" * 200000 + b"]" * 200000 + b"}"
                _send(_frame(raw=body))
            return x
        """
    )
    res = sb.run(code, "f", [[0], [1], [2]], FAST)
    assert [o.status for o in res.outcomes] == [Status.OK, Status.CRASH, Status.OK], res


@pytest.mark.parametrize("t", ['"abc"', "[1]", '{"a": 1}'])
def test_malformed_time_field_is_a_crash_not_an_exception(sb, t):
    code = FRAMES + prog(
        f"""
        def f(x):
            if x == 1:
                _send(_frame(raw=b'{{"k":"r","i":1,"s":"ok","v":1,"t":{t}}}'))
            return x
        """
    )
    res = sb.run(code, "f", [[0], [1], [2]], FAST)
    assert len(res.outcomes) == 3 and res.outcomes[1].status is Status.CRASH, res


@pytest.mark.parametrize("then", ["return", "exit", "hang"])
def test_claiming_every_frame_keeps_one_outcome_per_input(sb, then):
    action = {"return": "return x", "exit": "os._exit(0)", "hang": "while True: pass"}[then]
    code = FRAMES + prog(
        f"""
        import signal
        def f(x):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            for i in range(x, 3):
                _send(_frame({{"k": "r", "i": i, "s": "ok", "t": 0, "v": "claimed"}}))
            {action}
        """
    )
    res = sb.run(code, "f", [[0], [1], [2]], SHORT)
    assert len(res.outcomes) == 3, res
    for o in res.outcomes:
        never_passes(o.value, secret())


def test_tiny_frame_cannot_make_the_parent_allocate_gigabytes(sb):
    code = FRAMES + prog(
        """
        def f(x):
            if x == 1:
                v = {"$ndarray": {"dtype": "<U2500000", "shape": [20], "v": ["a"] * 20}}
                _send(_frame({"k": "r", "i": 1, "s": "ok", "t": 0, "v": v}))
            return x
        """
    )
    res = sb.run(code, "f", [[0], [1], [2]], FAST)
    assert len(res.outcomes) == 3, res
    bad = res.outcomes[1]
    nbytes = int(getattr(bad.value, "nbytes", 0) or 0)
    assert bad.status is Status.CRASH or nbytes <= 1 << 20, (bad.status, nbytes)


def test_hash_collision_frame_cannot_stall_the_parent(sb):
    code = FRAMES + prog(
        """
        def f(x):
            if x == 1:
                m = (1 << 61) - 1
                v = {"$set": [k * m for k in range(1, 25000)]}
                _send(_frame({"k": "r", "i": 1, "s": "ok", "t": 0, "v": v}))
            return x
        """
    )
    t0 = time.thread_time()  # the parent's work is this thread's CPU time
    res = sb.run(code, "f", [[0], [1], [2]], FAST)
    took = time.thread_time() - t0
    assert len(res.outcomes) == 3, res
    assert took < 1.5, f"the parent spent {took:.1f} s of CPU decoding one frame"
