"""The UTDebug loop on ClassEval+Fix (``utdebug bench --split classeval --model ...``): tests
with setup from the SIMULATED model (read from ClassEval's tests of the method), from a
scripted model and from a litellm model on loopback, edits merged into the class, the final
code judged on the class's kept ClassEval tests; resume; SIMULATED labels and the data licence
in every output; intrinsic metrics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.classeval import CART, CART_TESTS, ROWS, STACK, STACK_TESTS

from utdebug.agents.sim import ProgramInput
from utdebug.benchmarks.classeval_debug import class_task, program_inputs
from utdebug.data.classeval import DATA_LICENCE
from utdebug.data.datasets import CLASSEVAL_FILE, ClassFixProblem, MethodTarget, Provenance, Split
from utdebug.runs.records import SAMPLES, read_samples

POP_TEST = (
    "```python\ndef test_pop():\n    s = Stack(3)\n    s.push(1)\n    s.push(2)\n"
    "    assert s.pop() == 2\n```\n"
)


def utdebug(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "utdebug", *args], capture_output=True, text=True, timeout=600
    )


def _stack_problem(method: str) -> ClassFixProblem:
    tests = (
        ("StackTestPush", "test_push_1"),
        ("StackTestPush", "test_push_2"),
        ("StackTestPop", "test_pop_1"),
        ("StackTestPop", "test_pop_2"),
    )
    return _problem("Stack", method, STACK, STACK_TESTS, tests)


def _problem(
    name: str, method: str, code: str, test_code: str, tests: tuple[tuple[str, str], ...]
) -> ClassFixProblem:
    own = f"{name}Test{method.capitalize()}"
    return ClassFixProblem(
        Split.CLASSEVAL,
        f"classeval/ClassEval_1/{method}",
        "ClassEval_1",
        MethodTarget(name, method, code),
        code,
        code,
        test_code,
        tests,
        tuple(i for i, t in enumerate(tests) if t[0] == own),
        "none",
        Provenance("x", 2, "0" * 64),
    )


def test_test_programs_are_read_from_the_methods_classeval_tests() -> None:
    pop = program_inputs(_stack_problem("pop"))
    assert pop == [
        ProgramInput("s = Stack(3)\ns.push(1)\ns.push(2)", "s.pop()"),
        ProgramInput("", "Stack(1).pop()"),
    ]
    # A call whose value is dropped: the asserted expression after it is what is compared.
    push = program_inputs(_stack_problem("push"))
    assert push[0] == ProgramInput("s = Stack(2)", "s.push(1)")
    assert push[1] == ProgramInput("s = Stack(1)", "s.push(1)")
    # setUp runs first; the attributes it made are plain names.
    total = _problem(
        "Cart", "total", CART, CART_TESTS,
        (("CartTestTotal", "test_total_1"), ("CartTestTotal", "test_total_2")),
    )  # fmt: skip
    assert program_inputs(total) == [
        ProgramInput("c = Cart()\nc.add('a', 2, 2)\nc.add('b', 5)", "c.total()"),
        ProgramInput("c = Cart()\nc.add('a', 2, 2)\nc.add('b', 5)", "Cart().total()"),
    ]
    task = class_task(_stack_problem("pop"))
    assert task.program and task.class_name == "Stack" and task.entry_point == "pop"
    assert task.task_id == "classeval/ClassEval_1/pop" and task.code == STACK


def test_the_prompts_give_classevals_description_of_the_method() -> None:
    """ClassEval+Fix prompts say what the method should do (ClassEval's docstring of it), not
    only "Implement `Stack.pop(self)`"."""
    from dataclasses import replace

    from utdebug.agents.roles import UTGenerator
    from utdebug.agents.scripted import ScriptedModel

    bare = class_task(_stack_problem("pop"))
    assert bare.description == "Implement `Stack.pop(self)`."
    said = "Pop the top item.\n:return: the item, None when the stack is empty"
    task = class_task(replace(_stack_problem("pop"), description=said))
    assert task.description == said
    prompt = UTGenerator(ScriptedModel([]), "utgen").prompt(task.text(), task.code)
    assert f"## Task\n{said}\n" in prompt and "Implement `" not in prompt


def _common(data: Path) -> list[str]:
    return ["bench", "--split", "classeval", "--data-dir", str(data), "--no-verify"]


def test_the_loop_runs_offline_with_the_simulated_model_and_resumes(
    small_dir: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "sim"
    args = [*_common(small_dir), "--model", "sim", "--out", str(out)]
    sure = ["--sim-attack", "1", "--sim-out-acc", "1", "--sim-fix", "1", "--rounds", "2"]
    r = utdebug(*args, *sure, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    s = doc["summary"]
    assert s["simulated"] is True and s["label"] == "SIMULATED"
    assert s["data_licence"] == DATA_LICENCE
    n = s["classeval_fix"]["versions"]
    assert n >= 3 and s["evaluated"] == n and s["problem_errors"] == 1
    first, last = s["rounds"][0], s["rounds"][-1]
    # Round 0 is the corrupted code: it fails some kept test of every version.
    assert first["pass_at_1"] == 0.0 and 0.0 < first["mean_pass_rate"] < 1.0
    # With right tests and a fix on right feedback some versions are repaired.
    assert last["solved"] >= 1 and last["mean_pass_rate"] > first["mean_pass_rate"]
    assert s["intrinsic"]["tests"] > 0 and s["intrinsic"]["output_accuracy"] == 1.0
    recs = [r for r in read_samples(out / SAMPLES) if r.get("error") is None]
    assert recs and all(r["label"] == "SIMULATED" for r in recs)
    assert all(r["data_licence"] == DATA_LICENCE for r in recs)
    solved = [r for r in recs if r["rounds"][-1]["all_pass"]]
    for rec in solved:
        # The fix was merged into the class: the module still holds the whole class.
        final = next(x["code"] for x in reversed(rec["rounds"]) if x["code"] is not None)
        assert final.count("class ") >= 1 and rec["target"].split(".")[0] in final
    kept = [e for r in recs for e in r["events"] if e["kind"] == "test_kept"]
    assert kept and all(e["test"].get("setup") is not None for e in kept)
    # The table says SIMULATED and the licence.
    table = utdebug(*args, *sure)
    assert table.returncode == 0, table.stderr
    assert "SIMULATED" in table.stdout and "CC BY-NC 4.0" in table.stdout
    # Resume: nothing is debugged again.
    again = json.loads(utdebug(*args, *sure, "--json").stdout)
    assert again["evaluated_now"] == 0 and again["resumed"] == n + 1
    assert again["summary"]["rounds"] == s["rounds"]


def test_the_loop_with_a_scripted_model(tmp_path: Path) -> None:
    """A scripted model writes a test with setup for Stack.pop, votes its outcome, and
    returns the class with pop fixed: the edit is merged and the kept ClassEval tests pass."""
    row = ROWS[1]
    data = tmp_path / "data"
    data.mkdir()
    (data / CLASSEVAL_FILE).write_text(json.dumps([row]), encoding="utf-8")
    reply = POP_TEST
    script = {
        "ut": [reply] * 9,
        "vote": ["Output: ```2```"] * 72,
        "debug": [f"```python\n{STACK}```"] * 6,
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    out = tmp_path / "run"
    common = [*_common(data), "--out", str(out), "--rounds", "1", "--json"]
    r = utdebug(*common, "--model", f"scripted:{path}", "--problems", "ClassEval_1/pop")
    assert r.returncode == 0, r.stderr
    (rec,) = read_samples(out / SAMPLES)
    # A scripted model is not a language model either: its runs are labelled SIMULATED too.
    assert rec["label"] == "SIMULATED" and rec["error"] is None and rec["model"] != "sim"
    assert rec["rounds"][0]["all_pass"] is False and rec["rounds"][-1]["all_pass"] is True
    assert any(e["kind"] == "edit_accepted" for e in rec["events"])
    s = json.loads(r.stdout)["summary"]
    assert s["data_licence"] == DATA_LICENCE
    assert s["rounds"][-1]["solved"] == 1


def test_intrinsic_metrics_of_tests_with_setup(small_dir: Path) -> None:
    """Right outcomes only (--sim-out-acc 1): every parsed sample is valid and accurate; the
    attack rate is that of the corrupted code on the proposed programs (some, not all)."""
    args = [*_common(small_dir), "--model", "sim", "--samples", "4", "--sim-out-acc", "1"]
    r = utdebug("bench", "intrinsic", *args[1:], "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["label"] == "SIMULATED" and s["data_licence"] == DATA_LICENCE
    assert s["problems"] >= 3 and s["samples"] == 4 * s["problems"]
    assert s["parsed"] > 0 and s["valid"] == s["parsed"]
    assert s["output_accuracy"] == s["parsed"]
    assert 0.0 < s["attack_rate"] <= s["parsed"]
    table = utdebug("bench", "intrinsic", *args[1:])
    assert table.returncode == 0, table.stderr
    assert "SIMULATED" in table.stdout and "CC BY-NC 4.0" in table.stdout


@pytest.mark.slow
def test_the_loop_with_a_litellm_model_on_loopback(tmp_path: Path) -> None:
    """A litellm model (an OpenAI-compatible server on loopback) writes a test with setup for
    Stack.pop, predicts its outcome and fixes the class; nothing is labelled SIMULATED."""
    import os

    from utdebug.agents.loopback_server import LLMServer, engine_responder

    def responder(body: dict[str, object]) -> str:
        messages = body.get("messages") or []
        assert isinstance(messages, list)
        first = str(messages[0].get("content", "")) if messages else ""
        if first.startswith("Count from 1 to 10"):
            return engine_responder(body)
        if "Write one unit test as a pytest function" in first:
            return "A correct pop returns the last item.\n\n" + POP_TEST
        if "A user runs this test program" in first:
            return "The last item pushed is 2.\nOutput: ```2```"
        if len(messages) >= 2:  # the debugging chat: the class with pop fixed
            return f"```python\n{STACK}```"
        return "OK"

    data = tmp_path / "data"
    data.mkdir()
    (data / CLASSEVAL_FILE).write_text(json.dumps([ROWS[1]]), encoding="utf-8")
    with LLMServer(responder=responder) as srv:
        config = tmp_path / "utdebug.toml"
        config.write_text(
            f'[models.local]\nmodel = "openai/stub"\napi_base = "{srv.base}"\nmax_retries = 1\n',
            encoding="utf-8",
        )
        out = tmp_path / "run"
        r = subprocess.run(
            [sys.executable, "-m", "utdebug", *_common(data), "--model", "local",
             "--problems", "ClassEval_1/pop", "--rounds", "1", "--out", str(out), "--json",
             "--cache-dir", str(tmp_path / "cache"), "--no-cache"],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "UTDEBUG_CONFIG": str(config)},
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    (rec,) = read_samples(out / SAMPLES)
    assert rec["simulated"] is False and rec["label"] is None and rec["error"] is None
    assert rec["rounds"][0]["all_pass"] is False and rec["rounds"][-1]["all_pass"] is True
    s = json.loads(r.stdout)["summary"]
    assert s["simulated"] is False and s["data_licence"] == DATA_LICENCE
