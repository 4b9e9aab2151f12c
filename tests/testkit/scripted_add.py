"""The scripted toy session shared by the engine, candidate, interactive and app tests: a buggy
``add`` (it subtracts) and replies in the paper's formats (the ``executor`` fixture is in
conftest.py)."""

from __future__ import annotations

from utdebug.agents.scripted import ScriptedModel

SOURCE = 'def add(a, b):\n    """Return the sum of a and b."""\n    return a - b\n'
"""The buggy ``add`` as a file holds it."""
FIXED = 'def add(a, b):\n    """Return the sum of a and b."""\n    return a + b\n'
"""Its fix."""


def ut(call: str, out: str = "0") -> str:
    """A UT generator reply proposing ``call`` with output ``out``."""
    return (
        "## Hypothesis\nThe code subtracts.\n\nError Pattern: any b != 0\n\n## Unit Test\n\n"
        f"### Input Arguments\nArguments: ```{call}```\n\n### Output\nOutput: ```{out}```\n"
    )


def votes(*values: str, text: str = "Adding the numbers.") -> list[str]:
    """One output-prediction reply per value."""
    return [f"{text}\nOutput: ```{v}```" for v in values]


def fix(code: str) -> str:
    """A debugger reply with ``code`` in a fenced block."""
    return f"Here is the fix.\n```python\n{code}```\n"


def add_script(debug: list[str], third: str = "-5") -> ScriptedModel:
    """Three tests, then three more for a rebuild. By default the votes for add(0, 5) say -5:
    what the bug returns (a wrong expected output a person can correct)."""
    tests = [ut("add(1, 2)", "3"), ut("add(2, 0)", "2"), ut("add(0, 5)", third)]
    later = [ut("add(3, 4)", "7"), ut("add(5, 5)", "10"), ut("add(9, 0)", "9")]
    answers = ("3", "2", third, "7", "10", "9")
    vote = [v for x in answers for v in votes(*[x] * 8, text="Tracing the code.")]
    return ScriptedModel({"ut": tests + later, "vote": vote, "debug": debug})
