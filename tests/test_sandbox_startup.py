"""What the zygote prepares once for every child: the seccomp filter as its BPF program and the
compiled prelude (each child used to generate and compile them again: about 1 ms a batch)."""

from __future__ import annotations

import errno
import os
import socket
import textwrap

import pytest
from testkit import sandbox as H

from utdebug.sandbox import Status, _runner


def test_the_seccomp_filter_is_its_bpf_program_and_denies_what_it_lists() -> None:
    flt = _runner.seccomp_filter()
    if flt is None:
        pytest.skip("no libseccomp binding here")
    assert isinstance(flt, _runner._Bpf)
    assert 0 < flt.fprog.len <= 4096
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1  # the filter did not load
        try:
            _runner.prctl(_runner.PR_SET_NO_NEW_PRIVS, 1)
            flt.load()
            code = 2  # socket() was allowed
            try:
                socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            except PermissionError as e:
                code = 3 if e.errno != errno.EPERM else 4  # 4: denied as listed
            if code == 4:
                os.close(os.open("/dev/null", os.O_RDONLY))  # an unlisted call still works
                code = 0
        finally:
            os.write(w, bytes([code]))
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"\x00", f"child code {got!r}"


def test_the_prelude_is_compiled_once_and_a_bad_one_stays_text() -> None:
    text = "import math\nfrom functools import *\n"
    code = _runner._compiled_prelude(text)
    assert code is _runner._compiled_prelude(text)
    g: dict[str, object] = {}
    exec(code, g)  # type: ignore[arg-type]
    assert "reduce" in g and "math" in g
    assert _runner._compiled_prelude("import (") == "import ("


def test_a_prelude_that_does_not_compile_is_the_programs_load_error() -> None:
    sb = H.make_sandbox("bwrap", prelude="import (")
    try:
        res = sb.run("def f(x):\n    return x\n", "f", [(1,)])
    finally:
        sb.close()
    assert res.outcomes[0].status is Status.ERROR, res.outcomes
    assert res.load_error is not None and res.load_error.startswith("SyntaxError"), res


def test_a_custom_prelude_gives_the_program_its_names() -> None:
    custom = textwrap.dedent(
        """
        import math as m
        TWICE = 2
        """
    )
    sb = H.make_sandbox("bwrap", prelude=custom)
    try:
        res = sb.run("def f(x):\n    return m.floor(x) * TWICE\n", "f", [(2.5,)])
    finally:
        sb.close()
    assert res.outcomes[0].value == 4, res.outcomes
