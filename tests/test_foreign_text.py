"""Text that a program, a model or a repository wrote never drives a terminal, a CI log or an
exported test: one hostile string (testkit/hostile.py) walked through every output."""

from __future__ import annotations

import ast
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import git
import pytest
from testkit.hostile import HOSTILE, IN_A_NAME, IN_SOURCE, MARKUP, assert_safe, unsafe

from utdebug.cli import main
from utdebug.cli_common import Exit
from utdebug.text_safety import (
    json_text,
    markup,
    no_workflow_commands,
    visible,
    workflow_data,
    workflow_property,
)

# --- the helpers -------------------------------------------------------------------------------


def test_visible_escapes_controls_and_bidi_and_keeps_ordinary_text() -> None:
    shown = visible(HOSTILE)
    assert_safe(shown, "visible")
    assert "\\x1b]0;owned-title\\x07" in shown and "\\u202e" in shown and "\\x00\\x9b" in shown
    assert "\\n::error::forged" in shown  # one line: no line of it starts with ::
    for ordinary in ("shop.py::total", "was 4, now 5", "naïve 日本 ✓", "a\\nb", ""):
        assert visible(ordinary) == ordinary
    block = visible(HOSTILE, keep="\n")
    assert_safe(block, "visible, lines kept")
    assert block.count("\n") == HOSTILE.count("\n")
    assert "\n\\x3a:error::forged\n" in block and "\\x23#[warning]" in block


def test_no_workflow_commands_guards_every_line_start() -> None:
    text = "ok\n  ::error::x\n\t::warning::y\r::notice::z\nmid ::error::w\n###[a]"
    guarded = no_workflow_commands(text)
    assert guarded == (
        "ok\n  \\x3a:error::x\n\t\\x3a:warning::y\r\\x3a:notice::z\nmid ::error::w\n#\\x23#[a]"
    )
    assert no_workflow_commands("path.py::f\nplain") == "path.py::f\nplain"


def test_workflow_escapes_follow_the_runner() -> None:
    assert workflow_data("50%\r\n::error::x") == "50%25%0D%0A::error::x"
    assert workflow_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert workflow_data(HOSTILE).count("\n") == 0
    assert_safe(workflow_property(HOSTILE), "property")


def test_json_text_is_safe_to_print_and_reads_back_the_same() -> None:
    dumped = json_text(json.dumps({"k": HOSTILE}, ensure_ascii=False))
    assert_safe(dumped, "json")
    assert json.loads(dumped) == {"k": HOSTILE}


def test_markup_is_never_read_as_markup() -> None:
    from rich.text import Text

    assert Text.from_markup(markup(HOSTILE)).plain == visible(HOSTILE)


# --- check: a repository with hostile names, load errors, values and exceptions ---------------

EVIL_REPR = f'''

class Evil:
    """Known only by its repr: reading its field raises, so the sandbox sends the repr."""

    def __init__(self):
        self.__dict__["x"] = 1

    @property
    def x(self):
        raise RuntimeError("no")

    def __repr__(self):
        return {HOSTILE!r}
'''

BASE = {
    f"evil{IN_A_NAME}.py": "def f(x: int) -> int:\n    return x + 1\n",
    "loads.py": f"raise RuntimeError({HOSTILE!r})\n\n\ndef g(x: int) -> int:\n    return x\n",
    "values.py": "def h(x: int) -> object:\n    return 1\n" + EVIL_REPR,
    "raises.py": "def r(x: int) -> int:\n    return x\n",
}
HEAD = {
    f"evil{IN_A_NAME}.py": "def f(x: int) -> int:\n    return x + 2\n",
    "loads.py": "def g(x: int) -> int:\n    return x + 1\n",
    "values.py": "def h(x: int) -> object:\n    return Evil()\n" + EVIL_REPR,
    "raises.py": f"def r(x: int) -> int:\n    raise type({IN_A_NAME!r}, (ValueError,), {{}})()\n",
}


def _repo(tmp_path: Path) -> git.Repo:
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.com")
    return repo


def _commit(repo: git.Repo, files: dict[str, str], message: str) -> None:
    root = Path(repo.working_tree_dir or ".")
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    repo.git.add("-A")
    repo.index.commit(message)


@pytest.fixture
def hostile_repo(tmp_path: Path) -> git.Repo:
    repo = _repo(tmp_path)
    _commit(repo, BASE, "base")
    _commit(repo, HEAD, "head")
    return repo


FORMATS = ("json", "junit", "github", "sarif")
OWN_COMMANDS = ("::error ", "::warning ", "::notice ")


def _check(
    repo: git.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, *argv: str
) -> tuple[int, str, str, dict[str, str]]:
    monkeypatch.chdir(Path(repo.working_tree_dir or "."))
    reports = {fmt: tmp_path / f"report.{fmt}" for fmt in FORMATS}
    extra = [a for fmt, path in reports.items() for a in ("--report", f"{fmt}={path}")]
    code = main(
        ["check", "--changed", "--base", "HEAD~1", "--rev", "HEAD", "--synth-inputs", "20",
         "--cache-dir", str(tmp_path / "cache"), *extra, *argv]
    )  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err, {fmt: path.read_text(encoding="utf-8") for fmt, path in reports.items()}


def test_check_shows_foreign_text_safely_in_every_format_and_on_stderr(
    hostile_repo: git.Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err, reports = _check(hostile_repo, tmp_path, monkeypatch, capsys, "--no-model")
    assert code == Exit.FAILURE
    data = json.loads(reports["json"])
    by_file = {f["path"]: f for f in data["functions"]}
    # the data is whole in JSON (its reader gets the real name and texts back) ...
    assert by_file[f"evil{IN_A_NAME}.py"]["status"] == "findings"
    changes = {f["qualname"]: f["differential"]["changes"] for f in data["functions"]}
    assert all(IN_A_NAME in c["description"] for c in changes["r"])  # the exception's class
    assert all(c["after"] == HOSTILE for c in changes["h"])  # the value's repr
    assert HOSTILE in by_file["loads.py"]["message"]  # the base's load error
    # ... and no output, nor the progress on stderr, lets it act
    assert_safe(out, "human report")
    assert_safe(err, "stderr")
    for fmt in ("json", "junit", "sarif"):
        assert_safe(reports[fmt], fmt)
    assert_safe(reports["github"], "github", commands=OWN_COMMANDS)
    assert all(line.startswith(OWN_COMMANDS) for line in reports["github"].splitlines())
    assert MARKUP in out and MARKUP in err  # shown, not read as markup
    ET.fromstring(reports["junit"])
    assert "\\x1b]0;owned-title\\x07" in out and "\\u202e" in reports["github"]
    sarif = json.loads(reports["sarif"])
    texts = [r["message"]["text"] for r in sarif["runs"][0]["results"]]
    assert texts and not any(unsafe(t) for t in texts)


def test_check_human_report_on_a_narrow_console_wraps_no_command_onto_a_line(
    hostile_repo: git.Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Rich wraps long lines at the console's width: a wrapped line starts wherever the text
    was cut, so the guard runs on the lines as printed."""
    for width in ("41", "57", "80"):
        monkeypatch.setenv("COLUMNS", width)
        code, out, _, _ = _check(hostile_repo, tmp_path, monkeypatch, capsys, "--no-model", "-q")
        assert code == Exit.FAILURE
        assert_safe(out, f"human report, {width} columns")


# --- check: git paths ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ['we "ird" name.py', "new\nline.py", "tab\tn\u00e9.py"])
def test_a_committed_change_to_an_odd_file_name_is_checked(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = _repo(tmp_path)
    _commit(repo, {name: "def f(x: int) -> int:\n    return x + 1\n"}, "base")
    _commit(repo, {name: "def f(x: int) -> int:\n    return x + 2\n"}, "head")
    code, _, _, reports = _check(repo, tmp_path, monkeypatch, capsys, "--no-model", "-q")
    assert code == Exit.FAILURE
    (f,) = json.loads(reports["json"])["functions"]
    assert (f["path"], f["qualname"], f["status"]) == (name, "f", "findings")


def test_check_with_a_model_shows_its_replies_and_load_errors_safely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model's test code (shown in the report as it wrote it) and a module whose import
    raises with the hostile message."""
    repo = _repo(tmp_path)
    acc = "class Acc:\n    def total(self, xs):\n        return sum(xs)\n"
    _commit(repo, {"calc.py": acc, "broken.py": "def b(x):\n    return x\n"}, "base")
    broken = f"raise RuntimeError({HOSTILE!r})\n\n\ndef b(x):\n    return x + 1\n"
    _commit(repo, {"calc.py": acc.replace("sum(xs)", "sum(xs) + 1"), "broken.py": broken}, "head")
    test = (
        f'```python\ndef test_it():\n    acc = Acc()\n    label = "{IN_SOURCE}"\n'
        "    assert acc.total([1, 2]) == 3\n```"
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"ut": [test] * 3, "vote": ["Tracing.\nOutput: ```3```"] * 24}))
    code, out, err, reports = _check(
        repo, tmp_path, monkeypatch, capsys,
        "--model", f"scripted:{script}", "-n", "1", "--no-differential",
    )  # fmt: skip
    assert code == Exit.FAILURE
    functions = {f["qualname"]: f for f in json.loads(reports["json"])["functions"]}
    assert HOSTILE in functions["b"]["message"]
    assert IN_SOURCE in functions["Acc.total"]["tests"][0]["code"]
    assert_safe(out, "human report")
    assert_safe(err, "stderr")
    for fmt in ("json", "junit", "sarif"):
        assert_safe(reports[fmt], fmt)
    assert_safe(reports["github"], "github", commands=OWN_COMMANDS)
    assert MARKUP in out and MARKUP in err
    ET.fromstring(reports["junit"])


# --- pytest export: data, never code -----------------------------------------------------------

INJECTIONS = (
    "1); import os; os.system('touch pwned'); (",
    "x\nimport os; os.system('touch pwned')",
    '"""; import os; os.system(\'touch pwned\'); """',
    "'''\nimport os\n'''",
    HOSTILE,
)


def _names(tree: ast.AST) -> set[str]:
    """Every name and attribute the file's code uses (its string constants are data)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update(a.name for a in node.names)
    return out


def test_exported_tests_hold_program_text_as_data(tmp_path: Path) -> None:
    from utdebug.engine import UnitTest
    from utdebug.engine.program import Raises
    from utdebug.pytest_export import render_pytest
    from utdebug.sandbox.values import ByRepr, Opaque, Structured
    from utdebug.workspace import load_function

    name = 'odd"""\n::error::x\u202e name.py'
    source = tmp_path / name
    source.write_text("import re\n\n\ndef f(x):\n    return re.compile(x)\n", encoding="utf-8")
    loaded = load_function(source, "f")
    tests: list[UnitTest] = []
    for text in INJECTIONS:
        n = len(tests)
        tests += [
            UnitTest(n + 1, ("a+",), text, ByRepr(text)),  # compared by its text
            UnitTest(n + 2, ("a+",), text, Opaque("re.Pattern", text)),  # a program's repr
            UnitTest(n + 3, ("a+",), text, Structured(text, (("x", 1),))),  # its class name
            UnitTest(n + 4, (), text, Raises(text), setup=f"y = {text!r}"),  # its type's name
            UnitTest(n + 5, (), "f('a+')", ByRepr(text), setup="y = 1"),
        ]
    text = render_pytest(loaded, tests, tmp_path / "test_exported.py").text
    tree = ast.parse(text)
    assert "os" not in _names(tree) and "system" not in _names(tree)
    assert_safe(text, "exported file")
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    for injection in INJECTIONS:  # compared as strings: the text whole, as data
        assert injection in strings
    assert text.count("assert repr(target_function('a+')) == ") == 0  # the name is f
    assert text.count("assert repr(f('a+')) == ") == len(INJECTIONS)
    assert text.count("assert repr(_utd_value(f('a+'))) == ") == len(INJECTIONS)
    assert text.count("# skipped test") == 3 * len(INJECTIONS)


def test_an_expected_value_known_by_its_text_passes_as_a_string_comparison(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    from utdebug.engine import UnitTest
    from utdebug.pytest_export import export_pytest
    from utdebug.sandbox.values import ByRepr
    from utdebug.workspace import load_function

    source = tmp_path / "pat.py"
    source.write_text("import re\n\n\ndef f(x):\n    return re.compile(x)\n", encoding="utf-8")
    tests = [
        UnitTest(1, ("a+",), "f('a+')", ByRepr("re.compile('a+')")),
        UnitTest(2, ("b",), "f('b')", ByRepr("re.compile('a+')")),
    ]
    out = export_pytest(load_function(source, "f"), tests, tmp_path / "test_pat.py")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "1 failed, 1 passed" in run.stdout, run.stdout[-2000:]


# --- the app: tables, transcript, detail views, dialogs, notices ---------------------------------


def screen_text(app: Any) -> str:
    """What the app's screen writes to the terminal, as text: every segment but Textual's own
    cursor moves (its styles are not in a segment's text)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(s.text for s in strip if not s.control) for strip in strips)


async def assert_screen_safe(pilot: Any, where: str) -> str:
    """The screen once the app has drawn it (every message handled) shows nothing raw."""
    await pilot.pause()
    text = screen_text(pilot.app)
    assert text.strip(), where
    assert_safe(text, where)
    return text


SOURCE = f'''def probe(x: int) -> object:
    """Probe {IN_SOURCE} it.

    >>> probe(2)
    0
    """
    if x % 2:
        raise ValueError({HOSTILE!r})
    return Evil()
{EVIL_REPR}'''


async def test_the_app_without_a_model_shows_outcomes_and_names_safely(
    executor: Any, tmp_path: Path
) -> None:
    from testkit.app import free_app, select_input
    from testkit.wait import until
    from textual.widgets import Input

    from utdebug.tui.details import TestDetailScreen
    from utdebug.tui.screens import EditExpectedScreen
    from utdebug.workspace import load_function

    path = tmp_path / f"probe{IN_A_NAME}.py"
    path.write_text(SOURCE, encoding="utf-8")
    app = free_app(load_function(path, "probe"), executor)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.state.synth is not None, "inputs synthesised")
        synth = app.state.synth
        assert synth is not None
        raised = next(r for r in synth.rows if r.status != "ok")
        value = next(r for r in synth.rows if r.status == "ok")
        assert "\u202e" in raised.outcome and value.outcome == HOSTILE
        main_screen = await assert_screen_safe(pilot, "the inputs table")
        assert "\\x1b]0;owned-title" in main_screen and MARKUP in main_screen
        select_input(app, raised.call)
        await pilot.press("g")  # not a value: the notice quotes the outcome
        await pilot.pause()
        assert any(raised.outcome in n for n in app.notices)
        await assert_screen_safe(pilot, "a notice")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, EditExpectedScreen), "the dialog")
        await assert_screen_safe(pilot, "the edit dialog")
        app.screen.query_one("#expected-input", Input).value = "0"
        await pilot.press("enter")
        await until(pilot, lambda: app.state.total == 1 and not app.person_busy, "test run")
        await pilot.press("tab")
        app.action_show_test()
        await until(pilot, lambda: isinstance(app.screen, TestDetailScreen), "the detail view")
        assert HOSTILE in str(app.state.records.actual[app.state.tests[0].id].detail)
        assert "\\x1b]52;c" in await assert_screen_safe(pilot, "the detail view")


def _reply(call: str, out: str) -> str:
    return (
        f"## Hypothesis\n{HOSTILE}\n\n## Unit Test\n\n### Input Arguments\n"
        f"Arguments: ```{call}```\n\n### Output\nOutput: ```{out}```\n"
    )


async def test_the_app_shows_model_replies_and_code_safely(executor: Any, tmp_path: Path) -> None:
    from testkit.app import make_app
    from testkit.scripted_add import fix, votes
    from testkit.wait import until

    from utdebug.agents.scripted import ScriptedModel
    from utdebug.tui.details import TestDetailScreen
    from utdebug.tui.screens import EditExpectedScreen, WriteBackScreen
    from utdebug.tui.transcript import Transcript
    from utdebug.workspace import load_function

    path = tmp_path / f"calc{IN_A_NAME}.py"
    path.write_text(
        f'def add(a, b):\n    """Return the sum {IN_SOURCE} of a and b."""\n    return a - b\n',
        encoding="utf-8",
    )
    fixed = f'def add(a, b):\n    """Return the sum."""\n    return a + b  # {IN_SOURCE}\n'
    answers = ("3", "2", "5")
    model = ScriptedModel(
        {
            "ut": [_reply("add(1, 2)", "3"), _reply("add(2, 0)", "2"), _reply("add(0, 5)", "5")],
            "vote": [v for x in answers for v in votes(*[x] * 8, text=HOSTILE)],
            "debug": [f"{HOSTILE}\n" + fix(fixed)],
        }
    )
    app = make_app(load_function(path, "add"), model, executor, step_first=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.state.phase == "paused", "paused after round 0")
        await assert_screen_safe(pilot, "the main screen")
        app.query_one("#bottom-tabs").active = "tab-transcript"  # type: ignore[attr-defined]
        transcript = app.query_one(Transcript)
        transcript.opened = set(transcript.heads)  # every reply shown
        transcript._layout()
        await pilot.pause()
        shown = "\n".join("".join(s.text for s in strip) for strip in transcript.lines)
        assert "\\x1b]0;owned-title" in shown and MARKUP in shown
        assert_safe(shown, "the transcript")
        await assert_screen_safe(pilot, "the transcript tab")
        await pilot.press("s")  # round 1: the model's fix
        await until(pilot, lambda: IN_SOURCE in app.state.code, "the fix in force")
        await until(pilot, lambda: app.state.phase in ("paused", "finished"), "round 1")
        await assert_screen_safe(pilot, "the code in force")
        app.query_one("#code-tabs").active = "tab-diff"  # type: ignore[attr-defined]
        await pilot.pause()
        await assert_screen_safe(pilot, "the diff")
        app.action_show_test()
        await until(pilot, lambda: isinstance(app.screen, TestDetailScreen), "the detail view")
        await assert_screen_safe(pilot, "the detail view")
        await pilot.press("escape", "e")
        await until(pilot, lambda: isinstance(app.screen, EditExpectedScreen), "the edit dialog")
        await assert_screen_safe(pilot, "the edit dialog")
        await pilot.press("escape", "w")
        await until(pilot, lambda: isinstance(app.screen, WriteBackScreen), "write back")
        await assert_screen_safe(pilot, "the write-back dialog")


# --- bench: progress, tables and lines -----------------------------------------------------------


def _console(width: int, *, terminal: bool = False) -> tuple[Any, Any]:
    """A console as a bench command has it: its stream through the guard the command puts
    on stdout and stderr."""
    import io

    from rich.console import Console

    from utdebug.text_safety import GuardedStream

    buf = io.StringIO()
    console = Console(
        file=GuardedStream(buf), width=width, force_terminal=terminal, color_system=None
    )
    return console, buf


def test_bench_progress_shows_a_task_id_safely(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    from utdebug.benchmarks import bench

    def done_words(rec: dict[str, Any]) -> str:
        return "3/5"

    # a terminal: the bar
    console, buf = _console(200, terminal=True)
    with bench.recorded_progress("hard eval", console, 2, done_words) as on_record:
        on_record("start", {"task_id": HOSTILE})
        on_record("done", {"task_id": HOSTILE})
    drawn = buf.getvalue()
    assert MARKUP in drawn
    # the bar itself: rich's own cursor and erase sequences, nothing else
    assert_safe(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", drawn), "the progress bar")
    # a CI log: the plain line, naming what still runs and what ended last
    console, buf = _console(200)
    log = bench.ProgressLog("hard eval", 2, console, done_words)
    log.on_record("start", {"task_id": HOSTILE})
    log.on_record("start", {"task_id": "hard/2"})
    log.on_record("done", {"task_id": "hard/2"})
    log.on_record("start", {"task_id": "hard/3"})
    log.on_record("done", {"task_id": HOSTILE})
    log.on_record("start", {"task_id": HOSTILE + "!"})
    line = log.line()
    assert MARKUP in line and "last: " in line and "running: " in line
    assert_safe(line, "the logged progress line")
    log.say()
    assert_safe(buf.getvalue(), "the logged progress line as printed")


def test_bench_tables_and_lines_show_foreign_text_safely() -> None:
    from utdebug.benchmarks.evaluator import SplitRun
    from utdebug.benchmarks.intrinsic import IntrinsicResult
    from utdebug.benchmarks.report import print_eval, print_intrinsic
    from utdebug.data.datasets import Split
    from utdebug.data.private_tests import EvalSettings, WhichCode

    summary = {
        "problems": 2, "tests": 10, "mean_pass_fraction": 0.5, "pass_at_1": 0.5, "solved": 1,
        "timeouts": 1, "problem_errors": 1, "problems_with_timeouts": [HOSTILE],
        "errors": [{"task_id": HOSTILE, "error": "x " * 30 + HOSTILE}],
        "data_licence": HOSTILE,
    }  # fmt: skip
    run = SplitRun(Split.HARD, WhichCode.CODE, Path("runs/x"), 2, 0, {"hard": summary}, 1.0)
    result = IntrinsicResult("utgen", "sim", True, samples=4, problems=1, errors=[HOSTILE])
    result.model_errors.append(("hard/1", HOSTILE))
    for width in (37, 53, 120):  # rich wraps the long lines at each width
        console, buf = _console(width)
        print_eval(console, [run], WhichCode.CODE, EvalSettings(), as_json=False)
        print_intrinsic(console, Split.HARD, result, as_json=False, licence=HOSTILE)
        out = buf.getvalue()
        assert_safe(out, f"bench tables, {width} columns")
        assert "markup" in out and "\\x1b]0;owned-title" in "".join(out.split())


def test_bench_json_is_safe_to_print_and_reads_back(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from utdebug.runs.folder import print_json
    from utdebug.text_safety import GuardedStream

    out = sys.stdout
    sys.stdout = GuardedStream(out)  # type: ignore[assignment]
    try:
        print_json({"task_id": HOSTILE})
    finally:
        sys.stdout = out
    text = capsys.readouterr().out
    assert_safe(text, "--json")
    assert json.loads(text) == {"task_id": HOSTILE}


# --- debug's messages ----------------------------------------------------------------------------


def test_debug_says_what_it_cannot_open_safely(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / f"gone{IN_A_NAME}.py"
    present = tmp_path / f"here{IN_A_NAME}.py"
    present.write_text(f"def f(x):\n    return x  # {IN_SOURCE}\n\n\ndef (:\n", encoding="utf-8")
    for target in (f"{missing}::f", f"{present}::f", f"{tmp_path / 'a.py'}::{HOSTILE}"):
        assert main(["debug", target, "--model", "none"]) == Exit.USAGE
        err = capsys.readouterr().err
        assert err.startswith("utdebug debug: ")
        assert_safe(err, f"debug {target!r}")
