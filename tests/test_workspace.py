"""utdebug.workspace: targets, loading a function from a file, writing a fix back, exports."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Any

import pytest
from testkit.app import run_pytest

from utdebug.engine import Task, UnitTest
from utdebug.pytest_export import export_pytest, render_pytest
from utdebug.workspace import WorkspaceError, load_function, parse_target
from utdebug.writeback import export_patch, function_diff, write_back

PLAIN = '''\
"""A small module."""

import math

SCALE = 2  # a constant the function needs


def _helper(x):
    return math.floor(x) * SCALE


def traced(f):
    return f


@traced
def scaled_sum(xs: list[float], offset: int = 0) -> int:
    """Sum of the scaled floors, plus offset."""
    # a comment inside the function
    return sum(_helper(x) for x in xs) + offset


def other():
    return "untouched"  # keep me


if __name__ == "__main__":
    print(scaled_sum([1.5]))
    raise SystemExit(1)
'''

CLASSY = """\
import math


class Geometry:
    def area(self, r):
        return math.pi * r * r

    @staticmethod
    def hyp(a, b):
        \"\"\"Hypotenuse.\"\"\"
        return math.sqrt(a * a + b)  # bug: b not squared

    def after(self):
        return 1
"""

BUGGY = """\
def add(a, b):
    return a - b  # bug


def mean(xs):
    return sum(xs) / len(xs)
"""

FIXED_ADD = "def add(a, b):\n    return a + b\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def raises(match: str, *args: Any, **kwargs: Any) -> str:
    fn, *rest = args
    with pytest.raises(WorkspaceError, match=match) as info:
        fn(*rest, **kwargs)
    return str(info.value)


# --- parse_target -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "path", "name"),
    [
        ("src/pkg/mod.py::func", Path("src/pkg/mod.py"), "func"),
        ("mod.py::Class.method", Path("mod.py"), "Class.method"),
        (" a/b.py::outer.inner ", Path("a/b.py"), "outer.inner"),
    ],
)
def test_parse_target_good(spec: str, path: Path, name: str) -> None:
    assert parse_target(spec) == (path, name)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("mod.py", "has no '::'"),
        ("mod.py:func", "has no '::'"),
        ("::func", "no file before"),
        ("mod.py::", "no function name after"),
        ("mod.txt::func", r"not a Python file \(\.py\)"),
        ("mod::func", "not a Python file"),
        ("mod.py::Class.", "empty part"),
        ("mod.py::.method", "empty part"),
        ("mod.py::1abc", "not a Python name"),
    ],
)
def test_parse_target_bad(spec: str, match: str) -> None:
    raises(match, parse_target, spec)


# --- load_function ----------------------------------------------------------------------------


def test_load_plain_function(tmp_path: Path) -> None:
    path = write(tmp_path, "calc.py", PLAIN)
    f = load_function(path, "scaled_sum")
    assert f.entry_point == "scaled_sum"
    assert f.signature == "scaled_sum(xs: list[float], offset: int=0) -> int"
    assert f.docstring == "Sum of the scaled floors, plus offset."
    assert f.description == f.docstring
    lines = PLAIN.splitlines(keepends=True)
    assert lines[f.start_line - 1].startswith("@traced")  # decorators included
    assert lines[f.end_line - 1].strip() == "return sum(_helper(x) for x in xs) + offset"
    assert f.source == "".join(lines[f.start_line - 1 : f.end_line])
    assert "__main__" not in f.module_code and "SystemExit" not in f.module_code
    assert "def other():" in f.module_code

    namespace: dict[str, Any] = {}
    exec(compile(f.module_code, "module_code", "exec"), namespace)  # our own trusted text
    assert namespace["scaled_sum"]([1.5, 2.7], offset=1) == 7

    task = f.to_task()
    assert isinstance(task, Task)
    assert (task.task_id, task.entry_point, task.code) == (
        "calc.py::scaled_sum",
        "scaled_sum",
        f.module_code,
    )
    assert task.signature == f.signature and task.description == f.description


def test_task_text_comes_before_the_docstring(tmp_path: Path) -> None:
    path = write(tmp_path, "calc.py", PLAIN)
    f = load_function(path, "scaled_sum", task="Offsets may be negative.")
    assert f.description == "Offsets may be negative.\n\nSum of the scaled floors, plus offset."
    g = load_function(path, "other", task="Return a word.")
    assert g.description == "Return a word."
    h = load_function(path, "other")
    assert h.description == "Implement `other()`."


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.py", "def f(x):\n    return x\n\ndef g(:\n    pass\n")
    message = raises("cannot parse", load_function, path, "f")
    assert str(path) in message and "line 4" in message


def test_missing_function_lists_names_and_suggests(tmp_path: Path) -> None:
    defs = "".join(f"def func_{i}():\n    pass\n\n" for i in range(12))
    path = write(tmp_path, "many.py", defs + "def compute_total(x):\n    return x\n")
    message = raises("no function 'compute_totl'", load_function, path, "compute_totl")
    assert "did you mean compute_total" in message
    assert "func_0, func_1" in message and "func_9" in message
    assert "func_10" not in message and "and 3 more" in message


def test_methods_are_targets_tested_with_programs(tmp_path: Path) -> None:
    path = write(tmp_path, "geo.py", CLASSY)
    f = load_function(path, "Geometry.area")
    assert (f.entry_point, f.class_name, f.kind, f.program) == ("area", "Geometry", "method", True)
    assert f.signature == "Geometry.area(self, r)"
    assert f.module_code == CLASSY  # the method stays in its class: nothing appended
    task = f.to_task()
    assert task.program and task.class_name == "Geometry" and task.target_kind == "method"
    assert f.context is not None
    assert "import math" in f.context and "class Geometry:" in f.context
    assert "def hyp(a, b):" in f.context and "Hypotenuse." in f.context  # other methods
    assert "return math.sqrt" not in f.context  # ... by signature and docstring only
    raises("has no method 'nope'", load_function, path, "Geometry.nope")
    message = raises("is a class, not a function", load_function, path, "Geometry")
    assert "Geometry.method" in message and "area, hyp, after" in message


def test_staticmethod_is_supported(tmp_path: Path) -> None:
    path = write(tmp_path, "geo.py", CLASSY)
    f = load_function(path, "Geometry.hyp")
    assert (f.entry_point, f.class_name, f.indent) == ("hyp", "Geometry", "    ")
    assert f.source.startswith("@staticmethod\ndef hyp(a, b):\n")
    assert f.signature == "hyp(a, b)" and f.docstring == "Hypotenuse."
    assert f.to_task().task_id == "geo.py::Geometry.hyp"
    namespace: dict[str, Any] = {}
    exec(compile(f.module_code, "module_code", "exec"), namespace)
    assert namespace["hyp"](3, 16) == 5.0  # the buggy module-level copy the engine runs


def test_nested_functions_are_debugged_through_their_enclosing_function(tmp_path: Path) -> None:
    text = "def outer():\n    def inner():\n        return 1\n    return inner()\n\n"
    text += "async def fetch():\n    return 1\n"
    path = write(tmp_path, "n.py", text)
    f = load_function(path, "outer.inner")
    assert (f.entry_point, f.through, f.program) == ("outer", "outer.inner", False)
    assert "nested function outer.inner" in f.description
    a = load_function(path, "fetch")
    assert (a.kind, a.program) == ("async function", True)
    raises("no function 'outer.nope'", load_function, path, "outer.nope")


def test_a_bare_nested_name_says_how_to_name_it_and_lists_what_can_be_debugged(
    tmp_path: Path,
) -> None:
    text = "def outer():\n    def inner():\n        return 1\n    return inner()\n\n\n"
    text += "async def fetch():\n    return 1\n\n\n"
    text += "class Geo:\n    @staticmethod\n    def hyp(a, b):\n        return a\n\n"
    text += "    def area(self):\n        return 0\n"
    path = write(tmp_path, "n.py", text)
    message = raises("inner is defined in outer: name it outer.inner", load_function, path, "inner")
    assert ":2:" in message
    # Everything a test can call: functions (async too) and every method.
    assert message.endswith("(functions that can be debugged: outer, fetch, Geo.hyp, Geo.area)")
    raises("area is defined in Geo: name it Geo.area", load_function, path, "area")
    raises("hyp is defined in Geo: name it Geo.hyp", load_function, path, "hyp")
    message = raises("no function 'nothing'", load_function, path, "nothing")
    assert "fetch" in message and "Geo.hyp" in message


KINDS = """\
import dataclasses
from pathlib import Path


@dataclasses.dataclass
class Point:
    x: int
    y: int


def plain(a, b):
    return a + b


def moved(p: Point, dx: int) -> Point:
    return Point(p.x + dx, p.y)


def size(path: Path) -> int:
    return len(path.name)


async def fetch(n):
    return n


def count(n):
    yield from range(n)


async def acount(n):
    for i in range(n):
        yield i


class Box:
    \"\"\"A box of things.\"\"\"

    limit = 3

    def __init__(self):
        self.items = []

    def __len__(self):
        return len(self.items)

    def add(self, x):
        self._check()
        self.items.append(x)

    def _check(self):
        if len(self.items) >= self.limit:
            raise OverflowError("full")

    @classmethod
    def of(cls, xs):
        box = cls()
        for x in xs:
            box.add(x)
        return box

    @staticmethod
    def unit():
        return 1

    @staticmethod
    def scaled(p: Point):
        return p

    @property
    def total(self):
        return sum(self.items)

    @total.setter
    def total(self, value):
        raise AttributeError("read only")

    async def drain(self):
        out, self.items = self.items, []
        return out

    def each(self):
        yield from self.items
"""


@pytest.mark.parametrize(
    ("name", "kind", "program"),
    [
        ("plain", "function", False),
        ("moved", "function", True),
        ("size", "function", True),
        ("fetch", "async function", True),
        ("count", "generator", True),
        ("acount", "async generator", True),
        ("Box.__init__", "method", True),
        ("Box.__len__", "method", True),
        ("Box.add", "method", True),
        ("Box.of", "classmethod", True),
        ("Box.unit", "staticmethod", False),
        ("Box.scaled", "staticmethod", True),
        ("Box.total", "property", True),
        ("Box.drain", "async method", True),
        ("Box.each", "generator", True),
    ],
)
def test_every_target_kind_loads(tmp_path: Path, name: str, kind: str, program: bool) -> None:
    path = write(tmp_path, "kinds.py", KINDS)
    f = load_function(path, name)
    assert (f.kind, f.program) == (kind, program)
    if program:
        assert f.module_code == KINDS  # run as it is: the tests build what they call
        assert f.context is not None and "import dataclasses" in f.context
    if name == "Box.total":
        assert f.source.startswith("@property\n")  # the getter, not the setter
    if name == "Box.add":
        assert f.context is not None
        assert 'raise OverflowError("full")' in f.context  # a method it calls: whole
        assert "def of(cls, xs):" in f.context and "box.add(x)" not in f.context
        assert "limit = 3" in f.context and "A box of things." in f.context
    if name == "moved":
        assert f.context is not None and "class Point:" in f.context  # the type it takes


def test_file_problems(tmp_path: Path) -> None:
    raises("file not found", load_function, tmp_path / "nope.py", "f")
    (tmp_path / "pkg.py").mkdir()
    message = raises("is a folder, not a Python file$", load_function, tmp_path / "pkg.py", "f")
    assert message == f"{tmp_path / 'pkg.py'} is a folder, not a Python file"
    bad = tmp_path / "latin.py"
    bad.write_bytes(b"def f():\n    return '\xe9'\n")
    raises("not UTF-8", load_function, bad, "f")


# --- write_back -------------------------------------------------------------------------------


def test_write_back_replaces_exactly_the_function(tmp_path: Path) -> None:
    path = write(tmp_path, "calc.py", PLAIN)
    f = load_function(path, "scaled_sum")
    fixed = (
        "@traced\n"
        "def scaled_sum(xs: list[float], offset: int = 0) -> int:\n"
        '    """Sum of the scaled floors, plus offset."""\n'
        "    return sum(_helper(x) for x in xs) - offset\n"
    )
    shown = function_diff(f, fixed)
    assert path.read_text() == PLAIN  # showing the diff writes nothing
    result = write_back(f, fixed)
    assert result.diff == shown
    assert result.diff.startswith("--- a/calc.py\n+++ b/calc.py\n")
    assert "-    # a comment inside the function\n" in result.diff
    assert "+    return sum(_helper(x) for x in xs) - offset\n" in result.diff

    new = path.read_text()
    assert new == result.new_text
    old_lines = PLAIN.splitlines(keepends=True)
    expected = "".join(old_lines[: f.start_line - 1]) + fixed + "".join(old_lines[f.end_line :])
    assert new == expected
    assert result.backup == tmp_path / "calc.py.utdebug.bak"
    assert result.backup.read_text() == PLAIN

    again = write_back(result.loaded, FIXED_ADD.replace("add(a, b)", "scaled_sum(xs, offset=0)"))
    assert again.backup == tmp_path / "calc.py.utdebug.bak.1"
    assert again.backup.read_text() == new
    assert (tmp_path / "calc.py.utdebug.bak").read_text() == PLAIN
    assert 'def other():\n    return "untouched"  # keep me\n' in path.read_text()


def test_write_back_refuses_a_file_changed_on_disk(tmp_path: Path) -> None:
    path = write(tmp_path, "buggy.py", BUGGY)
    f = load_function(path, "add")
    path.write_text(BUGGY + "\n# edited meanwhile\n")
    raises("changed on disk", write_back, f, FIXED_ADD)
    assert path.read_text().endswith("# edited meanwhile\n")
    assert not (tmp_path / "buggy.py.utdebug.bak").exists()


def test_write_back_refuses_bad_replies(tmp_path: Path) -> None:
    path = write(tmp_path, "buggy.py", BUGGY)
    f = load_function(path, "add")
    raises("does not parse", write_back, f, "def add(a, b:\n    return a + b\n")
    message = raises("defines no function", write_back, f, "def plus(a, b):\n    return a + b\n")
    assert message.endswith("it defines plus; the code has add, mean")
    assert path.read_text() == BUGGY


def test_reply_with_prose_only_contributes_the_target(tmp_path: Path) -> None:
    path = write(tmp_path, "buggy.py", BUGGY)
    f = load_function(path, "add")
    reply = (
        "The bug is the minus sign. Here is the fix:\n\n```python\nimport os\n\n"
        "def helper():\n    return 42\n\n"
        "def add(a, b):\n    return a + b\n\n"
        "def mean(xs):\n    return 0\n```\n\nThat should do it.\n"
    )
    result = write_back(f, reply, backup=False)
    assert result.backup is None
    assert path.read_text() == BUGGY.replace("return a - b  # bug", "return a + b")
    assert not list(tmp_path.glob("*.bak*"))


def test_staticmethod_write_back_keeps_indentation(tmp_path: Path) -> None:
    path = write(tmp_path, "geo.py", CLASSY)
    f = load_function(path, "Geometry.hyp")
    engine_fix = f.module_code.replace("a * a + b)  # bug: b not squared", "a * a + b * b)")
    result = write_back(f, engine_fix)
    expected = CLASSY.replace("a * a + b)  # bug: b not squared", "a * a + b * b)")
    assert result.new_text == expected
    assert result.loaded.class_name == "Geometry"
    # a function-only reply, merged as a session does (both copies), then written back
    from utdebug.agents.edits import MergedEdit, take_edit

    path.write_text(CLASSY)
    f = load_function(path, "Geometry.hyp")
    reply = "```python\ndef hyp(a, b):\n    return math.sqrt(a * a + b * b)\n```"
    merged = take_edit(reply, f.module_code, "hyp", class_name=f.to_task().class_name)
    assert isinstance(merged, MergedEdit) and merged.code.count("a * a + b * b") == 2
    written = write_back(f, merged.code, backup=False)
    assert written.new_text == CLASSY.replace(
        '        """Hypotenuse."""\n        return math.sqrt(a * a + b)  # bug: b not squared\n',
        "        return math.sqrt(a * a + b * b)\n",
    )
    export = render_pytest(result.loaded, [UnitTest(1, (3, 4), "", 5.0)])
    assert "hyp = _utd_module.Geometry.hyp" in export.text
    assert "# origin: model, vote share 1.00, id 1, call: hyp(3, 4)\n" in export.text


ROOTS = (
    '"""Scaled roots."""\n\nimport math\n\nSCALE = 2  # keep me\n\n\n'
    "def _check(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n\n\n"
    "def f(x):\n    # the bug: SCALE is missing\n    return math.sqrt(_check(x))\n\n\n"
    'if __name__ == "__main__":\n    print(f(4))\n'
)
ROOTS_F = "def f(x):\n    # the bug: SCALE is missing\n    return math.sqrt(_check(x))\n"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_merged_module_is_written_back_with_the_rest_of_the_file_intact(
    tmp_path: Path, newline: str
) -> None:
    from utdebug.agents.edits import MergedEdit, take_edit

    text = ROOTS.replace("\n", newline)
    path = tmp_path / "roots.py"
    path.write_bytes(text.encode())
    f = load_function(path, "f")
    assert "__main__" not in f.module_code
    # what a session holds after a function-only reply that needs a new import
    reply = (
        "Here is the fix:\n```python\nimport functools\n\n\ndef f(x):\n"
        "    return functools.reduce(lambda a, b: a * b, [SCALE, math.sqrt(_check(x))])\n\n"
        "assert f(4) == 4.0\nprint(f(9))\n```\n"
    )
    merged = take_edit(reply, f.module_code, "f")
    assert isinstance(merged, MergedEdit)
    assert merged.added == ("import functools",)
    new_f = (
        "def f(x):\n"
        "    return functools.reduce(lambda a, b: a * b, [SCALE, math.sqrt(_check(x))])\n"
    )
    expected = (
        ROOTS.replace(ROOTS_F, new_f)
        .replace("import math\n", "import math\nimport functools\n")
        .replace("\n", newline)
    )
    result = write_back(f, merged.code, backup=False)
    assert path.read_bytes() == expected.encode()  # byte for byte, the __main__ block too
    assert result.loaded.module_code == merged.code  # what the session judged
    # the reply itself (what a person may paste) writes the same
    path.write_bytes(text.encode())
    assert function_diff(load_function(path, "f"), reply) == result.diff
    # nothing left to write
    assert function_diff(result.loaded, merged.code) == ""


def test_export_patch(tmp_path: Path) -> None:
    path = write(tmp_path, "buggy.py", BUGGY)
    f = load_function(path, "add")
    out = export_patch(f, FIXED_ADD, tmp_path / "fix.patch")
    assert out.read_text() == function_diff(f, FIXED_ADD)
    assert "-    return a - b  # bug\n+    return a + b\n" in out.read_text()
    assert path.read_text() == BUGGY


# --- export_pytest ----------------------------------------------------------------------------


def test_an_exported_test_says_its_input_was_synthesised(tmp_path: Path) -> None:
    f = load_function(write(tmp_path, "buggy.py", BUGGY), "add")
    tests = [
        UnitTest(1, (2, 2), "add(2, 2)", 4, origin="person", input_source="synth:mutation"),
        UnitTest(2, (1, 2), "add(1, 2)", 3, share=0.75),
    ]
    text = render_pytest(f, tests, tmp_path / "test_add_exported.py").text
    note = "# origin: person (the expected value is a person's), input: synth:mutation, id 1"
    assert note in text
    assert "# origin: model, vote share 0.75, id 2, call" in text  # a model's input: as before


def test_export_pytest_end_to_end(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    path = write(src, "buggy.py", BUGGY)
    f = load_function(path, "add")
    tests = [
        UnitTest(1, (1, 2), "add(1, 2)", 3, share=0.75, origin="model"),
        UnitTest(2, (0.1, 0.2), "add(0.1, 0.2)", 0.3, share=1.0, origin="person"),
        UnitTest(3, ([1], [2]), "add([1], [2])", [1, 2], share=0.5),
        UnitTest(4, (1, 1), "add(1, 1)", object(), share=1.0),
    ]
    export = render_pytest(f, tests, tmp_path / "test_add_exported.py")
    assert (export.exported, export.skipped) == (3, 1)
    out = export_pytest(f, tests, tmp_path / "test_add_exported.py")
    text = out.read_text()
    assert text == export.text
    ast.parse(text)
    assert "# origin: model, vote share 0.75, id 1, call: add(1, 2)" in text
    # A person's expected value is the person's: no vote share is claimed for it.
    assert "# origin: person (the expected value is a person's), id 2" in text
    assert "vote share 1.00" not in text
    assert "math.isclose(result, 0.3, rel_tol=1e-6)" in text
    assert "# skipped test 4 (id 4, call add(1, 1)): expected value <object object" in text
    assert "def test_add_4" not in text
    # The function is found relative to the test file, never by an absolute path.
    assert "'src/buggy.py'" in text and str(tmp_path) not in text

    failing = run_pytest(out, tmp_path)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "3 failed" in failing.stdout

    write_back(f, FIXED_ADD)
    passing = run_pytest(out, tmp_path)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "3 passed" in passing.stdout

    # The project moves (another checkout, CI): the exported file still finds the function.
    moved = tmp_path.parent / (tmp_path.name + "-moved")
    shutil.move(tmp_path, moved)
    try:
        again = run_pytest(moved / out.name, moved)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "3 passed" in again.stdout
    finally:
        shutil.move(moved, tmp_path)


def test_export_from_a_package_imports_by_module_name(tmp_path: Path) -> None:
    """A function inside a package is imported by its module name, so its relative imports
    work in the exported file, wherever the project is."""
    pkg = tmp_path / "proj" / "calc"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text("OFFSET = 0\n")
    path = write(
        pkg, "ops.py", "from .consts import OFFSET\n\n\ndef add(a, b):\n    return a + b + OFFSET\n"
    )
    f = load_function(path, "add")
    tests_dir = tmp_path / "proj" / "tests"
    tests_dir.mkdir()
    out = export_pytest(f, [UnitTest(1, (1, 2), "add(1, 2)", 3)], tests_dir / "test_add.py")
    text = out.read_text()
    assert "importlib.import_module('calc.ops')" in text and str(tmp_path) not in text
    moved = tmp_path / "elsewhere"
    shutil.move(tmp_path / "proj", moved)
    result = run_pytest(moved / "tests" / "test_add.py", moved)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_export_pytest_special_values_and_names(tmp_path: Path) -> None:
    path = write(tmp_path, "t.py", "def test_ratio(a, b):\n    return a / b\n")
    f = load_function(path, "test_ratio")
    tests = [
        UnitTest(1, (1.0, 0.0), "", float("inf")),
        UnitTest(2, (float("inf"), float("inf")), "", float("nan")),
        UnitTest(3, ({1, 2},), "", 0.5),
    ]
    export = render_pytest(f, tests)
    assert (export.exported, export.skipped) == (3, 0)
    assert "target_function = _utd_module.test_ratio" in export.text  # not collected as a test
    assert "assert math.isnan(result), result" in export.text
    assert "math.isclose(result, inf, rel_tol=1e-6)" in export.text
