"""A model that cannot be used, or stops answering mid-run, seen from the command line.

Every test talks to a real OpenAI-compatible HTTP server on loopback (``agents/loopback_server.py``)
through the config file named by ``UTDEBUG_CONFIG``, and runs the command in-process
(``utdebug.cli.main``), so litellm is imported once for the whole module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from utdebug.agents.loopback_server import (
    LLMServer,
    engine_responder,
    free_port,
    llama_cpp_python,
    llama_server,
)
from utdebug.cli import main
from utdebug.runs.records import SAMPLES, SUMMARY, read_samples

FEW = ["-n", "1", "-k", "1", "--rounds", "1", "--concurrency", "1"]
"""Small sessions, one problem at a time (so that the order of the problems is fixed)."""


class StopAt:
    """A responder that stops its server on the first request whose prompt names ``entry``
    (that request gets no answer; every later one is refused), once."""

    def __init__(self, entry: str) -> None:
        self.entry = entry
        self.server: LLMServer | None = None
        self.fired = False

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        first = str(messages[0].get("content", "")) if messages else ""
        if not self.fired and self.entry in first and self.server is not None:
            self.fired = True
            self.server.stop()
        return engine_responder(body)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        yield srv


def write_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, default: str | None = None, **bases: str
) -> None:
    """One ``[models.NAME]`` per keyword (NAME = api_base); 1 retry, 1 s to the first token."""
    lines = [f'default = "{default}"'] if default else []
    for name, base in bases.items():
        lines += [
            f"[models.{name}]",
            'model = "openai/stub"',
            f'api_base = "{base}"',
            "max_retries = 1",
            "timeout = 1",
        ]
    path = tmp_path / "utdebug.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("UTDEBUG_CONFIG", str(path))


def git_init(folder: Path) -> None:
    """Make ``folder`` a git working tree (``utdebug check`` checks only inside one)."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)


def down_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def bench(data_dir: Path, tmp_path: Path, *argv: str) -> int:
    return main(
        [
            "bench",
            "--split",
            "hard",
            "--data-dir",
            str(data_dir),
            "--cache-dir",
            str(tmp_path / "cache"),
            *argv,
        ]
    )


def lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.strip()]


# --- (a) a model that cannot answer stops the run before anything starts ----------------------


@pytest.mark.parametrize("which", ["--model", "--ut-model"])
def test_an_unreachable_model_stops_the_run_with_one_line(
    which: str,
    data_dir: Path,
    tmp_path: Path,
    server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    down = down_url()
    write_config(tmp_path, monkeypatch, local=server.base, down=down)
    models = ["--model", "down"] if which == "--model" else ["--model", "local", which, "down"]
    out = tmp_path / "run"
    code = bench(data_dir, tmp_path, "--problems", "6,7,9", *FEW, *models, "--out", str(out))
    cap = capsys.readouterr()
    assert code == 1
    failed = [x for x in lines(cap.err) if "cannot be used" in x]
    assert len(failed) == 1 and failed[0].startswith("utdebug bench: the model cannot be used:")
    assert down.split("//")[1].split("/")[0] in failed[0]  # it names the server
    # Nothing else about the model (the working model's probe says what it found), no
    # sandbox, no progress, no table, nothing written.
    assert len(lines(cap.err)) == (1 if which == "--model" else 2)
    assert "sandbox:" not in cap.err
    assert cap.out == ""
    assert not out.exists()
    # No problem started: the server saw at most the working model's probe.
    assert all("Count from 1 to 10" in b["messages"][0]["content"] for b in server.bodies)


def start_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """``debug`` as in a terminal, its app doing only its start-up work (the sandbox, the
    model, the probe), which must fail: the session never starts."""
    from utdebug import debug_cmd
    from utdebug.tui import app
    from utdebug.tui.config import StartupFailed

    def starting_only(self: Any) -> None:
        try:
            self.config.starting()
        except StartupFailed as e:
            self.startup_failure = e
            return
        raise AssertionError("the session would start with a model that cannot answer")

    monkeypatch.setattr(debug_cmd, "no_terminal", lambda: None)
    monkeypatch.setattr(app.DebugApp, "run", starting_only)


def test_an_unknown_provider_is_a_usage_error_in_every_front_end(
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code = bench(data_dir, tmp_path, "--problems", "6", "--model", "foo/bar")
    err = capsys.readouterr().err
    assert code == 2 and len(lines(err)) == 1 and "unknown provider" in err
    code = bench(data_dir, tmp_path, "intrinsic", "--problems", "6", "--model", "foo/bar")
    err = capsys.readouterr().err
    assert code == 2 and len(lines(err)) == 1 and "unknown provider" in err
    src = tmp_path / "calc.py"
    src.write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    start_only(monkeypatch)  # the app's first screen comes first; its start-up work says it
    monkeypatch.chdir(tmp_path)
    code = main(["debug", f"{src}::add", "--model", "foo/bar"])
    err = capsys.readouterr().err
    assert code == 2 and len(lines(err)) == 1 and "unknown provider" in err
    git_init(tmp_path)  # check says 'not a git repository' before it makes the model
    code = main(["check", f"{src}::add", "--model", "foo/bar", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(lines(err)) == 1 and "unknown provider" in err


def test_debug_and_check_probe_the_model_before_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    down = down_url()
    write_config(tmp_path, monkeypatch, down=down)
    src = tmp_path / "calc.py"
    src.write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    start_only(monkeypatch)  # the probe runs behind the first screen; it ends the app
    monkeypatch.chdir(tmp_path)  # the session file goes under runs/ here
    code = main(["debug", f"{src}::add", "--model", "down"])
    err = capsys.readouterr().err
    assert code == 1
    assert lines(err) == [x for x in lines(err) if x.startswith("utdebug debug: the model cannot")]
    assert len(lines(err)) == 1
    # check: an environment error (exit 2, whatever --allow-errors says), one line, no report.
    git_init(tmp_path)  # (outside git, check says so before it probes the model)
    code = main(["check", f"{src}::add", "--model", "down", "-q", "--allow-errors"])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == ""
    assert len(lines(cap.err)) == 1
    assert cap.err.startswith("utdebug check: the model cannot be used:")


def test_models_check_exits_1_when_the_default_model_is_down(
    tmp_path: Path,
    server: LLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    write_config(tmp_path, monkeypatch, default="down", local=server.base, down=down_url())
    assert main(["models", "--check"]) == 1
    err = capsys.readouterr().err
    assert "the default model down cannot be used" in err
    assert main(["models", "--check", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {m["name"]: m["ok"] for m in doc["models"]}["local"] is True
    assert main(["models"]) == 0  # without --check nothing is probed: a listing
    capsys.readouterr()
    write_config(tmp_path, monkeypatch, default="local", local=server.base, down=down_url())
    assert main(["models", "--check"]) == 0


def test_models_check_says_what_server_it_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Server kind, slots, prefill and the requests it will be sent at once."""
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    with llama_cpp_python() as one, llama_server(slots=4) as four:
        write_config(tmp_path, monkeypatch, default="pyserver", pyserver=one.base, cpp=four.base)
        assert main(["models", "--check", "--json"]) == 0
        found = {m["name"]: m for m in json.loads(capsys.readouterr().out)["models"]}
        monkeypatch.setenv("COLUMNS", "240")  # the table on one line a row
        assert main(["models", "--check"]) == 0
        table = capsys.readouterr().out
    assert found["pyserver"]["server"] == {
        "kind": "llama-cpp-python",
        "slots": 1,
        "prefill": False,
        "limit": 1,
    }
    assert found["cpp"]["server"] == {
        "kind": "llama-server",
        "slots": 4,
        "prefill": True,
        "limit": 4,
    }
    assert (
        "llama-cpp-python, 1 slot(s), does not continue a prefill; 1 request(s) at once"
        in (found["pyserver"]["verdict"])
    )
    assert "llama-cpp-python" in table and "llama-server" in table
    from utdebug.agents.limiter import known_endpoints

    assert known_endpoints() == set()  # the listing left no limit behind


# --- (c) a server that stops mid-run: finished problems kept, the others retried --------------


def test_a_server_stopped_mid_run_is_recorded_and_the_rerun_retries_only_those(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = StopAt("find_char_long")  # hard/7: the server stops at its first request
    with LLMServer(responder=stop) as srv:
        stop.server = srv
        write_config(tmp_path, monkeypatch, local=srv.base)
        out = tmp_path / "run"
        argv = ["--problems", "6,7,9", *FEW, "--model", "local", "--out", str(out)]
        code = bench(data_dir, tmp_path, *argv)
        cap = capsys.readouterr()
        assert stop.fired and code == 1
        # One line says how many sessions a model error ended, why, and what to do.
        said = [x for x in lines(cap.err) if x.startswith("utdebug") and "model error" in x]
        assert len(said) == 1
        assert said[0].startswith("utdebug bench: 2 of 3 sessions ended by a model error (Model")
        assert said[0].endswith("rerun the same command to retry them")
        recs = {r["task_id"]: r for r in read_samples(out / SAMPLES)}
        assert recs["hard/6"]["error_kind"] is None
        for t in ("hard/7", "hard/9"):
            assert recs[t]["error_kind"] == "model" and recs[t]["error"].startswith("Model")
        # hard/7 keeps what its session did before the server went away.
        kinds = [e["kind"] for e in recs["hard/7"]["events"]]
        assert kinds[0] == "session_started" and kinds[-1] == "finished"
        s = json.loads((out / SUMMARY).read_text())
        assert s["evaluated"] == 1 and s["problem_errors"] == 0 and s["complete"] is False
        assert s["model_errors"]["count"] == 2
        assert s["model_errors"]["task_ids"] == ["hard/7", "hard/9"]
        assert s["model_errors"]["causes"][0]["error"].startswith("Model")
        # pass@1 and the mean pass rate are hard/6's alone.
        six = recs["hard/6"]["rounds"]
        assert s["rounds"][0]["mean_pass_rate"] == six[0]["pass_fraction"]
        assert s["rounds"][-1]["solved"] == int(six[-1]["all_pass"])
        # The requests of the failed sessions are counted: failures and retries too.
        u = s["usage"]
        assert u["failures"] >= 2 and u["retries"] >= 1 and u["requests"] > u["completions"]
        # The table is printed with its footer naming the model errors and the usage.
        assert "2 sessions ended by a model error" in cap.out
        for word in ("completions", "requests", "failures", "retries"):
            assert word in cap.out

        srv.start()  # the server is back
        before = len(srv.bodies)
        code = bench(data_dir, tmp_path, *argv)
        cap = capsys.readouterr()
        assert code == 0, cap.err
        prompts = [b["messages"][0]["content"] for b in srv.bodies[before:]]
        assert not any("differ_At_One_Bit_Pos" in p for p in prompts)  # hard/6 kept
        assert any("find_char_long" in p for p in prompts)
        assert any("find_Rotations" in p for p in prompts)
        s = json.loads((out / SUMMARY).read_text())
        assert s["evaluated"] == 3 and s["model_errors"]["count"] == 0 and s["complete"] is True
        assert "resumed 1" in cap.out
        # The retried records replace the failed ones in the summary (the last try wins).
        assert len(read_samples(out / SAMPLES)) == 5


# --- every session failed: intrinsic, judge and verify also exit 1 with the same line ----------


def test_every_session_failing_exits_1_with_the_line_and_no_table(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = StopAt("You are given a Python function")  # the first test request after the probe
    with LLMServer(responder=stop) as srv:
        stop.server = srv
        write_config(tmp_path, monkeypatch, local=srv.base)
        out = tmp_path / "run"
        code = bench(data_dir, tmp_path, "--problems", "6,7", *FEW, "--model", "local",
                     "--out", str(out))  # fmt: skip
    cap = capsys.readouterr()
    assert code == 1 and cap.out == ""  # no table of 0 % rows
    said = [x for x in lines(cap.err) if x.startswith("utdebug") and "model error" in x]
    assert len(said) == 1 and said[0].startswith("utdebug bench: 2 of 2 sessions ended by a")
    assert [r["error_kind"] for r in read_samples(out / SAMPLES)] == ["model", "model"]


def test_intrinsic_leaves_a_problem_a_model_error_cut_short_out_of_the_rates(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = StopAt("find_char_long")  # hard/7
    with LLMServer(responder=stop) as srv:
        stop.server = srv
        write_config(tmp_path, monkeypatch, local=srv.base)
        code = bench(
            data_dir, tmp_path, "intrinsic", "--problems", "6,7", "--samples", "2",
            "--concurrency", "1", "--model", "local", "--json",
        )  # fmt: skip
    cap = capsys.readouterr()
    assert code == 1
    doc = json.loads(cap.out)
    assert doc["problems"] == 1 and doc["samples"] == 2  # hard/6's two samples only
    assert doc["model_errors"]["count"] == 1 and doc["model_errors"]["task_ids"] == ["hard/7"]
    said = [x for x in lines(cap.err) if x.startswith("utdebug") and "model error" in x]
    assert len(said) == 1 and said[0].startswith("utdebug bench: 1 of 2 problems ended by a")


def test_verify_with_a_server_that_stops_exits_1_and_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from testkit.verifiers import ROWS

    data = tmp_path / "HE-R+.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    stop = StopAt("is_even")  # Toy/1
    with LLMServer(responder=stop) as srv:
        stop.server = srv
        write_config(tmp_path, monkeypatch, local=srv.base)
        out = tmp_path / "run"
        argv = [
            "bench", "verify", "--verify-file", str(data), "--model", "local", "-n", "1",
            "-k", "0", "--concurrency", "1", "--out", str(out), "--cache-dir",
            str(tmp_path / "cache"),
        ]  # fmt: skip
        assert main(argv) == 1
        cap = capsys.readouterr()
        said = [x for x in lines(cap.err) if x.startswith("utdebug") and "model error" in x]
        assert len(said) == 1
        assert said[0].startswith("utdebug bench: 2 of 3 problems ended by a model error")
        s = json.loads((out / SUMMARY).read_text())
        assert s["evaluated"] == 1 and s["model_errors"]["task_ids"] == ["Toy/1", "Toy/2"]
        assert s["metrics"]["problems"] == 1  # the metrics are Toy/0's alone
        srv.start()
        assert main(argv) == 0
        s = json.loads((out / SUMMARY).read_text())
        assert s["evaluated"] == 3 and s["model_errors"]["count"] == 0


def test_judge_with_a_server_that_stops_exits_1_and_leaves_the_problem_out(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stop = StopAt("separate_paren_groups")  # HumanEval/1
    with LLMServer(responder=stop) as srv:
        stop.server = srv
        write_config(tmp_path, monkeypatch, local=srv.base)
        out = tmp_path / "run"
        argv = [
            "judge", "--problems", "0,1", "-N", "2", "-n", "1", "-k", "0", "--concurrency",
            "1", "--model", "local", "--out", str(out), "--json",
        ]  # fmt: skip
        code = main(["bench", "--data-dir", str(data_dir), "--cache-dir",
                     str(tmp_path / "cache"), *argv])  # fmt: skip
        cap = capsys.readouterr()
        assert stop.fired and code == 1
        s = json.loads(cap.out)["summary"]
        assert s["evaluated"] == 1 and s["model_errors"]["task_ids"] == ["he+/1"]
        said = [x for x in lines(cap.err) if x.startswith("utdebug") and "model error" in x]
        assert len(said) == 1 and said[0].startswith("utdebug bench: 1 of 2 problems ended by a")
        srv.start()
        code = main(["bench", "--data-dir", str(data_dir), "--cache-dir",
                     str(tmp_path / "cache"), *argv])  # fmt: skip
        s = json.loads(capsys.readouterr().out)["summary"]
        assert code == 0 and s["evaluated"] == 2 and s["model_errors"]["count"] == 0


def test_models_check_says_rising_only_when_the_limit_adapts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that does not say its slots: the limit rises while whole replies hold only
    with ``adaptive = true``; with ``adaptive = false`` it stays where the config puts it."""
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    with LLMServer(expose_slots=False) as plain:
        path = tmp_path / "utdebug.toml"
        path.write_text(
            'default = "fixed"\n'
            f'[models.fixed]\nmodel = "openai/stub"\napi_base = "{plain.base}"\n'
            "adaptive = false\nconcurrency = 2\n"
            f'[models.adapts]\nmodel = "openai/stub"\napi_base = "{plain.base}"\n',
            encoding="utf-8",
        )
        monkeypatch.setenv("UTDEBUG_CONFIG", str(path))
        assert main(["models", "--check", "--json"]) == 0
        found = {m["name"]: m for m in json.loads(capsys.readouterr().out)["models"]}
    assert found["fixed"]["verdict"].endswith("2 request(s) at once"), found["fixed"]
    assert "rising" not in found["fixed"]["verdict"]
    assert found["adapts"]["verdict"].endswith("rising while whole replies hold")


def test_models_check_fails_when_no_model_is_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI pre-check: no model at all cannot be used either."""
    monkeypatch.delenv("UTDEBUG_MODEL", raising=False)
    monkeypatch.setenv("UTDEBUG_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    assert main(["models", "--check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("utdebug models: no model is chosen: pass --model")
    assert main(["models", "--check", "--json"]) == 1
    assert main(["models"]) == 0  # a listing is not a check
