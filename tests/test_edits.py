"""utdebug.agents.edits: the code of a debugger reply, merged into the module it edits."""

from __future__ import annotations

import ast
import asyncio
import json

import pytest
from testkit.scripted_add import fix, ut, votes

from utdebug.agents.edits import MergedEdit, find_code, merge_edit, take_edit
from utdebug.agents.parsing import ParseFailure
from utdebug.agents.scripted import ScriptedModel
from utdebug.engine import Executor, Session, Settings, Task, event_to_json
from utdebug.engine.events import Backtracked, EditAccepted, EditProposed

MODULE = '''\
"""Geometry helpers."""

import math

SCALE = 2  # the scale of every result


def helper(x):
    return x + 1


# the function under test
def f(x):
    return math.sqrt(x)


def other():
    return "untouched"  # keep me
'''

FIX = "def f(x):\n    return SCALE * math.sqrt(x)\n"


def fenced(code: str, before: str = "Here is the fix:", after: str = "") -> str:
    return f"{before}\n\n```python\n{code}```\n{after}"


def merged(result: MergedEdit | ParseFailure) -> MergedEdit:
    assert isinstance(result, MergedEdit), result
    ast.parse(result.code)
    return result


def refused(result: MergedEdit | ParseFailure) -> str:
    assert isinstance(result, ParseFailure), result
    return result.reason


def only_f_changed(code: str, new_f: str) -> None:
    assert code == MODULE.replace("def f(x):\n    return math.sqrt(x)\n", new_f)


# --- find_code --------------------------------------------------------------------------------


def test_find_code_takes_the_block_that_defines_the_entry_point() -> None:
    reply = (
        "Call it like this:\n```python\nprint(f(4))\n```\n"
        "The helper:\n```python\ndef g(x):\n    return x\n```\n"
        f"The fix:\n```python\n{FIX}```\n"
    )
    assert find_code(reply, "f") == FIX
    assert find_code(reply) == "def g(x):\n    return x\n"  # no entry point: first definition


def test_find_code_prefers_the_last_block_that_defines_the_entry_point() -> None:
    buggy = "def f(x):\n    return math.sqrt(x)\n"
    reply = f"Your code:\n```python\n{buggy}```\nis wrong. Corrected:\n```python\n{FIX}```\n"
    assert find_code(reply, "f") == FIX


def test_find_code_reads_fences_as_markdown() -> None:
    # inline ```call``` is no block; an indented fence (in a list) loses its indentation
    reply = (
        "Arguments: ```f(1)``` gives 1.\n\n1. The fix:\n   ```py\n   def f(x):\n"
        "       return x + 1\n   ```\n"
    )
    assert find_code(reply, "f") == "def f(x):\n    return x + 1\n"
    assert find_code("~~~\ndef f():\n    pass\n~~~", "f") == "def f():\n    pass\n"


def test_find_code_unfenced_code() -> None:
    assert find_code("def f(x):\n    return 2\n", "f") == "def f(x):\n    return 2\n"
    reply = "The fix is below.\n\nimport math\n\ndef f(x):\n    return 2\n\nThis works because..."
    assert find_code(reply, "f") == "import math\n\ndef f(x):\n    return 2\n"


def test_find_code_cut_reply_keeps_the_complete_statements() -> None:
    reply = (
        "```python\ndef f(x):\n    return x * 2\n\ndef check_solution():\n"
        "    assert f(1) == 2, 'Test case "
    )
    assert find_code(reply, "f") == "def f(x):\n    return x * 2\n"
    # an unclosed fence that runs into prose: the code before the prose
    reply = "```python\ndef f(x):\n    return x * 2\n\n## Explanation\nIt doubles x.\n"
    assert find_code(reply, "f") == "def f(x):\n    return x * 2\n"


def test_find_code_refusals_say_why() -> None:
    assert refused(find_code("", "f")) == "the reply is empty"
    assert refused(find_code("I am not sure what to change.", "f")) == "no code in the reply"
    assert refused(find_code("Output:\n```\nTrue\n```\n", "f")) == (
        "no function defined in the reply's code"
    )
    reason = refused(find_code("```python\nx = 1\n\ndef f(x:\n    return 1\n```", "f"))
    assert reason == "the code does not parse: line 3: '(' was never closed"
    assert "too long" in refused(find_code("x" * 200_001, "f"))


# --- merge_edit -------------------------------------------------------------------------------


def test_a_function_only_fix_keeps_the_module() -> None:
    m = merged(merge_edit(MODULE, FIX, "f"))
    only_f_changed(m.code, FIX)  # docstring, import, constant, comments, helpers: as they were
    assert (m.replaced, m.added, m.dropped) == (("function f",), (), ())


def test_appended_test_code_is_dropped() -> None:
    edit = (
        FIX + "\n\ndef check_solution():\n    assert f(4) == 4\n\n\ncheck_solution()\n"
        "print(f(9))\nassert f(1) == 2\nfor x in range(3):\n    print(f(x))\n"
        "result = f(16)\n"
        'if __name__ == "__main__":\n    print(f(2))\n'
    )
    m = merged(merge_edit(MODULE, edit, "f"))
    only_f_changed(m.code, FIX)
    assert m.dropped == (
        "function check_solution (unused)",
        "call check_solution() at line 9",
        "print call at line 10",
        "assert at line 11",
        "for loop at line 12",
        "assignment result (unused)",
        'if __name__ == "__main__" block at line 15',
    )


def test_a_module_docstring_in_the_edit_is_dropped() -> None:
    m = merged(merge_edit(MODULE, '"""My version."""\n\n' + FIX, "f"))
    only_f_changed(m.code, FIX)
    assert m.dropped == ("module docstring",)


def test_a_whole_module_reply_changes_only_what_differs() -> None:
    edit = MODULE.replace("    return math.sqrt(x)\n", "    return SCALE * math.sqrt(x)\n")
    edit = edit.replace("# the function under test\n", "").replace("  # keep me", "")
    m = merged(merge_edit(MODULE, edit, "f"))
    only_f_changed(m.code, FIX)  # other() differs only in a comment: the base's text stays
    assert m.replaced == ("function f",) and m.added == () and m.dropped == ()


def test_new_helper_import_and_constant_that_the_fix_uses_are_added() -> None:
    edit = (
        "import functools\nfrom collections import Counter, OrderedDict\n\nLIMIT = 10\n"
        "UNUSED = 3\n\n\n# clamps a value\ndef clamp(y):\n    return min(y, LIMIT)\n\n\n"
        "def unused_helper():\n    return OrderedDict()\n\n\n"
        "def f(x):\n    return clamp(Counter([x])[x]) + functools.reduce(max, [x])\n"
    )
    m = merged(merge_edit(MODULE, edit, "f"))
    assert m.added == (
        "import functools",
        "from collections import Counter",
        "constant LIMIT",
        "function clamp",
    )
    assert m.dropped == ("assignment UNUSED (unused)", "function unused_helper (unused)")
    assert m.code == MODULE.replace(
        "import math\n", "import math\nimport functools\nfrom collections import Counter\n"
    ).replace("result\n", "result\nLIMIT = 10\n").replace(
        "# the function under test\ndef f(x):\n    return math.sqrt(x)\n",
        "# clamps a value\ndef clamp(y):\n    return min(y, LIMIT)\n\n\n"
        "# the function under test\n"
        "def f(x):\n    return clamp(Counter([x])[x]) + functools.reduce(max, [x])\n",
    )


def test_a_changed_constant_replaces_the_base_one() -> None:
    m = merged(merge_edit(MODULE, "SCALE = 3\n\n" + FIX, "f"))
    assert "SCALE = 3\n" in m.code and "SCALE = 2" not in m.code
    assert m.replaced == ("function f", "constant SCALE")
    # a constant the entry point does not use is test data: not merged
    m = merged(merge_edit(MODULE, "SCALE = 3\n\n" + "def f(x):\n    return x\n", "f"))
    assert "SCALE = 2" in m.code
    assert m.dropped == ("assignment SCALE (not used by f)",)


def test_a_changed_helper_is_replaced_in_place() -> None:
    edit = "def helper(x):\n    return x + 2\n\n\ndef f(x):\n    return helper(x)\n"
    m = merged(merge_edit(MODULE, edit, "f"))
    assert m.replaced == ("function f", "function helper")
    assert m.code.index("return x + 2") < m.code.index("return helper(x)")


def test_changes_to_functions_the_entry_point_does_not_use_are_not_merged() -> None:
    edit = 'def other():\n    return "changed"\n\n\n' + FIX
    m = merged(merge_edit(MODULE, edit, "f"))
    only_f_changed(m.code, FIX)
    assert m.dropped == ("function other (not used by f)",)
    reason = refused(merge_edit(MODULE, 'def other():\n    return "changed"\n', "f"))
    assert reason == "the edit changes only other, which f does not use"


def test_no_change_is_refused() -> None:
    same = "def f(x):\n    return math.sqrt(x)\n"
    assert refused(merge_edit(MODULE, same, "f")) == "the edit does not change the code"
    assert refused(merge_edit(MODULE, same + "\nprint(f(4))\n", "f")) == (
        "the edit does not change the code"
    )
    comment = "def f(x):\n    # the square root\n    return math.sqrt( x )\n"
    assert refused(merge_edit(MODULE, comment, "f")) == (
        "the edit changes only comments, docstrings or formatting"
    )
    documented = 'def f(x):\n    """The square root of x."""\n    return math.sqrt(x)\n'
    assert refused(merge_edit(MODULE, documented, "f")) == (
        "the edit changes only comments, docstrings or formatting"
    )
    base = MODULE.replace("def f(x):\n", 'def f(x):\n    """The square root of x."""\n')
    assert base != MODULE
    # the docstring's whitespace changed (re-wrapped, re-indented): still no edit
    rewrapped = 'def f(x):\n    """\n    The square root of x.\n    """\n    return math.sqrt(x)\n'
    assert refused(merge_edit(base, rewrapped, "f")) == (
        "the edit changes only comments, docstrings or formatting"
    )
    # a docstring and a real change: an edit
    fixed = 'def f(x):\n    """The root."""\n    return math.sqrt(abs(x))\n'
    assert "abs(x)" in merged(merge_edit(base, fixed, "f")).code


def test_a_renamed_function_is_refused() -> None:
    reason = refused(merge_edit(MODULE, "def g(x):\n    return 2 * x\n", "f"))
    assert reason == (
        "the edit defines no function of the code: it defines g; the code has helper, f, other"
    )
    reason = refused(
        merge_edit(MODULE, "class Solution:\n    def f(self, x):\n        pass\n", "f")
    )
    assert "it defines Solution.f; the code has helper, f, other" in reason
    assert refused(merge_edit(MODULE, "x = 1\n", "f")) == "no function defined in the edit"
    assert refused(merge_edit(MODULE, "def f(:\n", "f")).startswith("the code does not parse")


def test_decorators_the_edit_omits_are_kept() -> None:
    base = "import functools\n\n\n@functools.cache\ndef f(n):\n    return n\n"
    m = merged(merge_edit(base, "def f(n):\n    return n + 1\n", "f"))
    assert m.code == base.replace("return n\n", "return n + 1\n")
    m = merged(merge_edit(base, "@functools.lru_cache(None)\ndef f(n):\n    return n + 1\n", "f"))
    assert "@functools.lru_cache(None)\ndef f(n):\n    return n + 1\n" in m.code
    assert "@functools.cache" not in m.code


STACK = """\
class Stack:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)

    def top(self):
        return self.items[0]  # bug: the first, not the last


def peek_after(xs):
    s = Stack()
    for x in xs:
        s.push(x)
    return s.top()
"""


def test_methods_of_a_class_both_define() -> None:
    edit = (
        "class Stack:\n    def __init__(self):\n        self.items = []\n\n"
        "    def push(self, x):\n        self.items.append(x)\n\n"
        "    def top(self):\n        return self.items[-1]\n\n"
        "    def size(self):\n        return len(self.items)\n\n\n"
        "print(peek_after([1, 2]))\n"
    )
    m = merged(merge_edit(STACK, edit, "peek_after"))
    assert m.replaced == ("method Stack.top",)
    assert m.added == ("method Stack.size",)
    assert m.dropped == ("print call at line 15",)
    assert m.code == STACK.replace(
        "        return self.items[0]  # bug: the first, not the last\n",
        "        return self.items[-1]\n\n    def size(self):\n        return len(self.items)\n",
    )


def test_imports_go_after_a_docstring_or_first() -> None:
    doc = '"""Doc."""\n\n\ndef f(x):\n    return x\n'
    m = merged(merge_edit(doc, "import math\n\ndef f(x):\n    return math.floor(x)\n", "f"))
    assert m.code == '"""Doc."""\n\nimport math\n\n\ndef f(x):\n    return math.floor(x)\n'
    bare = "#!/usr/bin/env python\n# a comment on f\ndef f(x):\n    return x\n"
    edit = "import math\nK = 2\n\ndef f(x):\n    return math.floor(x) * K\n"
    m = merged(merge_edit(bare, edit, "f"))
    assert m.code == (
        "#!/usr/bin/env python\nimport math\n\nK = 2\n\n\n# a comment on f\n"
        "def f(x):\n    return math.floor(x) * K\n"
    )
    assert m.added == ("import math", "constant K")


def test_line_endings_and_a_missing_final_newline_are_kept() -> None:
    base = "import math\r\n\r\n\r\ndef f(x):\r\n    return x\r\n\r\n\r\ndef g():\r\n    return 1"
    m = merged(merge_edit(base, "def f(x):\n    return math.floor(x)\n", "f"))
    assert m.code == base.replace("return x", "return math.floor(x)")
    m = merged(merge_edit(base, "def g():\n    return 2\n\ndef f(x):\n    return g()\n", "f"))
    assert m.code.endswith("def g():\r\n    return 2")  # still no final newline
    assert "\n" not in m.code.replace("\r\n", "")


def test_multiline_strings_are_not_reindented() -> None:
    base = "class C:\n    @staticmethod\n    def f(x):\n        return x\n"
    base += "\n\ndef f(x):\n    return x\n"
    edit = 'def f(x):\n    text = """a\n  b\n"""\n    return text + x\n'
    m = merged(merge_edit(base, edit, "f", class_name="C"))
    assert '    @staticmethod\n    def f(x):\n        text = """a\n  b\n"""\n' in m.code


# --- the staticmethod target ------------------------------------------------------------------

# What utdebug.workspace runs for Geometry.hyp: the module, plus the dedented method appended.
GEO_FILE = """\
import math


class Geometry:
    @staticmethod
    def hyp(a, b):
        return math.sqrt(a * a + b)

    def other(self):
        return 1
"""
GEO_MODULE = GEO_FILE + "\n\ndef hyp(a, b):\n    return math.sqrt(a * a + b)\n"
HYP_FIX = "def hyp(a, b):\n    return math.sqrt(a * a + b * b)\n"


def test_staticmethod_function_only_fix_replaces_every_copy() -> None:
    m = merged(merge_edit(GEO_MODULE, HYP_FIX, "hyp", class_name="Geometry"))
    assert m.code == GEO_MODULE.replace("a * a + b)", "a * a + b * b)")
    assert m.replaced == ("function hyp",)
    # merged into the file itself (only the method): the method changes, @staticmethod stays
    m = merged(merge_edit(GEO_FILE, HYP_FIX, "hyp", class_name="Geometry"))
    assert m.code == GEO_FILE.replace("a * a + b)", "a * a + b * b)")


def test_staticmethod_fix_written_as_the_class() -> None:
    edit = (
        "import math\n\nclass Geometry:\n    @staticmethod\n    def hyp(a, b):\n"
        "        return math.sqrt(a * a + b * b)\n\n    def other(self):\n        return 1\n"
    )
    m = merged(merge_edit(GEO_MODULE, edit, "hyp", class_name="Geometry"))
    assert m.code == GEO_MODULE.replace("a * a + b)", "a * a + b * b)")
    # the session's merged module merged into the file gives the file's change
    m2 = merged(merge_edit(GEO_FILE, m.code, "hyp", class_name="Geometry"))
    assert m2.code == GEO_FILE.replace("a * a + b)", "a * a + b * b)")
    # without class_name the class method is just another method
    assert refused(merge_edit(GEO_FILE, HYP_FIX, "hyp")).startswith("the edit defines no function")


# --- a base that does not parse ---------------------------------------------------------------


def test_a_base_that_does_not_parse_takes_the_edit_as_the_program() -> None:
    body_only = "    return a - b\n"
    edit = "import math\n\ndef add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
    m = merged(merge_edit(body_only, edit, "add"))
    assert m.code == "def add(a, b):\n    return a + b\n"
    assert m.dropped == ("import math (unused)", "print call at line 6")
    assert m.replaced == ("the whole code (it does not parse: line 1: unexpected indent)",)
    edit = "import math\nK = 1\n\ndef h(x):\n    return math.floor(x) * K\n\n" + edit[13:]
    edit = edit.replace("a + b", "h(a) + b")
    m = merged(merge_edit(body_only, edit, "add"))
    assert m.code == (
        "import math\nK = 1\n\n\ndef h(x):\n    return math.floor(x) * K\n\n\n"
        "def add(a, b):\n    return h(a) + b\n"
    )
    assert m.added == ("function h", "function add")


# --- take_edit --------------------------------------------------------------------------------


def test_take_edit_skips_a_block_that_only_quotes_the_code() -> None:
    buggy = "def f(x):\n    return math.sqrt(x)\n"
    # the fix first, then the original quoted for comparison: the fix is taken
    reply = f"Fixed:\n```python\n{FIX}```\nbefore it was:\n```python\n{buggy}```\n"
    only_f_changed(merged(take_edit(reply, MODULE, "f")).code, FIX)
    # only the original: refused
    reply = f"Your code is right:\n```python\n{buggy}```\n"
    assert refused(take_edit(reply, MODULE, "f")) == "the edit does not change the code"


def test_take_edit_reports_a_cut_reply() -> None:
    reply = fenced(FIX + "\n\ndef check_solution():\n    assert f(4) == 'four", after="")
    reply = reply.rsplit("```", 1)[0]  # cut at the token limit: no closing fence
    m = merged(take_edit(reply, MODULE, "f"))
    only_f_changed(m.code, FIX)
    assert m.dropped[-1].startswith("lines 5-6 of the code (the reply ends inside the code block")


def test_take_edit_refusals() -> None:
    assert refused(take_edit("Looks right to me.", MODULE, "f")) == "no code in the reply"
    reply = fenced("def g(x):\n    return SCALE * x\n")
    assert "it defines g; the code has helper, f, other" in refused(take_edit(reply, MODULE, "f"))


# --- in a session (scripted model, real sandbox) ----------------------------------------------

ROOTS = '''\
"""Scaled square roots."""

import math

SCALE = 2


def _check(x):
    if x < 0:
        raise ValueError(x)
    return x


def f(x):
    return math.sqrt(_check(x))
'''
ROOTS_FIX = "def f(x):\n    return SCALE * math.sqrt(x)\n"


def roots_session(executor: Executor, debug: list[str]) -> tuple[Session, ScriptedModel]:
    task = Task("toy/roots", "Return SCALE times the square root of x.", "f(x)", "f", ROOTS)
    model = ScriptedModel(
        {
            "ut": [ut("f(4)", "4.0"), ut("f(9)", "6.0"), ut("f(0)", "0.0")],
            "vote": votes(*["4.0"] * 8) + votes(*["6.0"] * 8) + votes(*["0.0"] * 8),
            "debug": debug,
        }
    )
    return Session(task, model, executor, Settings(rounds=1)), model


def test_a_function_only_reply_is_judged_with_its_module(executor: Executor) -> None:
    session, _ = roots_session(executor, [fix(ROOTS_FIX)])
    result = asyncio.run(session.run())
    (proposed,) = [e for e in result.events if isinstance(e, EditProposed)]
    assert proposed.code == ROOTS.replace(
        "return math.sqrt(_check(x))", "return SCALE * math.sqrt(x)"
    )
    assert proposed.replaced == ["function f"] and proposed.added == proposed.dropped == []
    (accepted,) = [e for e in result.events if isinstance(e, EditAccepted)]
    assert accepted.pre == pytest.approx(1 / 3)  # f(0) passes the buggy code
    assert accepted.post == pytest.approx(1.0)  # SCALE and math come from the module
    assert result.code == proposed.code
    assert result.code.startswith('"""Scaled square roots."""\n\nimport math\n\nSCALE = 2\n')


def test_appended_test_code_does_not_enter_the_code_in_force(executor: Executor) -> None:
    reply = fix(
        ROOTS_FIX + "\n\ndef check_solution():\n    assert f(4) == 4.0\n\n\n"
        "check_solution()\nassert f(9) == 6.0\nprint(f(0))\n"
    )
    session, _ = roots_session(executor, [reply])
    result = asyncio.run(session.run())
    (proposed,) = [e for e in result.events if isinstance(e, EditProposed)]
    assert proposed.dropped == [
        "function check_solution (unused)",
        "call check_solution() at line 9",
        "assert at line 10",
        "print call at line 11",
    ]
    assert any(isinstance(e, EditAccepted) for e in result.events)
    assert result.code == ROOTS.replace(
        "return math.sqrt(_check(x))", "return SCALE * math.sqrt(x)"
    )
    json.dumps([event_to_json(e) for e in result.events])


def test_an_edit_that_changes_nothing_is_said_so(executor: Executor) -> None:
    session, _ = roots_session(executor, [fix("def f(x):\n    return math.sqrt(_check(x))\n")])
    result = asyncio.run(session.run())
    (proposed,) = [e for e in result.events if isinstance(e, EditProposed)]
    assert proposed.code is None and proposed.reason == "the edit does not change the code"
    (bt,) = [e for e in result.events if isinstance(e, Backtracked)]
    assert bt.reason == "the edit does not change the code"
    assert result.code == ROOTS


def test_the_codes_own_test_of_the_entry_point_goes_with_a_fix() -> None:
    # MBPP+Fix (Hard) 631: the given code ends with an assert that encodes its bug
    base = (
        "def replace_spaces(text):\n"
        "    return text.replace(' ', '_').replace('_', ' ')\n"
        "\n"
        "# Test the function\n"
        "assert replace_spaces('Jumanji The Jungle') == 'Jumanji The Jungle'\n"
    )
    fix = (
        "```python\ndef replace_spaces(text):\n"
        "    return ''.join('_' if c == ' ' else ' ' if c == '_' else c for c in text)\n```"
    )
    merged = take_edit(fix, base, "replace_spaces")
    assert isinstance(merged, MergedEdit)
    assert "assert" not in merged.code and "# Test the function" not in merged.code
    assert merged.removed == ("the code's own assert at line 5 (calls replace_spaces)",)
    assert merged.replaced == ("function replace_spaces",)
    # an assert about something else stays
    other = base.replace("assert replace_spaces('Jumanji The Jungle')", "assert len('ab')")
    kept = take_edit(fix, other, "replace_spaces")
    assert isinstance(kept, MergedEdit) and "assert len('ab')" in kept.code and not kept.removed
