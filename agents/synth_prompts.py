"""Prompts of the model-written input generators and checkers (:mod:`utdebug.synth.generators`,
Klear-CodeTest's generator-validation loop): a regular and a corner generator program, the
repair turn with execution feedback, a checker for non-unique outputs and its review.

Every template is part of the response-cache key through :data:`SYNTH_PROMPT_VERSION`: ANY
change to the text a model receives MUST bump it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

__all__ = [
    "CHECKER_ENTRY",
    "GENERATOR_ENTRY",
    "SYNTH_PROMPT_VERSION",
    "GeneratorKind",
    "SynthProblem",
    "checker_prompt",
    "checker_review_prompt",
    "generator_prompt",
    "repair_prompt",
]

SYNTH_PROMPT_VERSION = "utdebug-synth-1"
"""Version of every template below; part of the response-cache key."""

GENERATOR_ENTRY = "generate"
"""The function a generator program defines: ``generate()`` returns a list of argument
tuples."""

CHECKER_ENTRY = "check"
"""The function a checker program defines: ``check(args, output, expected)`` returns a bool."""

GeneratorKind = Literal["regular", "corner"]

_KINDS = {
    "regular": (
        "regular test inputs: typical, valid inputs within the expected parameters, the common "
        "use cases and properly formed data, of varied sizes"
    ),
    "corner": (
        "corner-case test inputs: boundary values, empty or minimal inputs, extreme values, "
        "unusual but valid combinations, inputs that tend to expose off-by-one and special-case "
        "mistakes"
    ),
}

_PROBLEM = (
    "## Function\n"
    "`{signature}`\n\n"
    "## Description\n"
    "{description}\n\n"
    "## Example inputs (argument tuples)\n"
    "{examples}\n\n"
    "## Constraints\n"
    "{constraints}\n\n"
    "## Inputs seen so far (their types, ranges, lengths and characters)\n"
    "{envelope}\n"
)

_GENERATOR = (
    "You write a Python program that generates {kind}.\n\n"
    "{problem}\n"
    "Write a program that defines `def {generate}():` returning a list of {count} distinct "
    "inputs for `{entry_point}`. Each input is a tuple of positional arguments (even for one "
    "argument: `(x,)`). Use only plain values (None, bool, int, float, str, bytes, list, tuple, "
    "set, frozenset, dict, and the datetime, decimal and fractions types). Do not print, read "
    "files or use the network; use `random` with a fixed seed so the program gives the same "
    "inputs every time; keep it fast (a second at most). Do not call `{entry_point}`.\n\n"
    "Give the program in one ```python block.\n"
)

_REPAIR = (
    "Running your program gave these problems:\n"
    "{lines}\n\n"
    "Fix the program. Give the whole corrected program in one ```python block.\n"
)

_CHECKER = (
    "The function below may have more than one correct output for an input (several valid "
    "answers, an order that does not matter, floating-point rounding).\n\n"
    "{problem}\n"
    "Write a Python program that defines `def {check}(args, output, expected):` returning True "
    "when `output` is a correct result of `{entry_point}(*args)`, given `expected`, one correct "
    "result. It must not call `{entry_point}`; it must be strict about validity (the right "
    "type, shape and values) and tolerant only where the description allows several answers.\n\n"
    "Give the program in one ```python block.\n"
)

_REVIEW = (
    "Review this checker program for `{entry_point}` for logical errors: accepting wrong "
    "outputs, rejecting correct ones, crashing on unusual outputs (wrong types, empty values).\n\n"
    "{problem}\n"
    "## Checker\n"
    "```python\n{code}\n```\n\n"
    "If it is correct, reply with the line `LGTM` and nothing else. Otherwise give the whole "
    "corrected program in one ```python block.\n"
)


class SynthProblem:
    """What a prompt shows about the function (texts already formatted)."""

    def __init__(
        self,
        *,
        entry_point: str,
        signature: str,
        description: str,
        examples: Sequence[Sequence[Any]] = (),
        constraints: str = "",
        envelope: str = "",
    ) -> None:
        self.entry_point = entry_point
        self.signature = signature
        self.description = description.strip() or "(none given)"
        self.examples = "\n".join(repr(tuple(e)) for e in examples) or "(none)"
        self.constraints = constraints.strip() or "(none stated)"
        self.envelope = envelope.strip() or "(nothing known)"

    def text(self) -> str:
        return _PROBLEM.format(
            signature=self.signature,
            description=self.description,
            examples=self.examples,
            constraints=self.constraints,
            envelope=self.envelope,
        )


def generator_prompt(kind: GeneratorKind, problem: SynthProblem, count: int) -> str:
    """Ask for a ``regular`` or a ``corner`` generator program of ``count`` inputs."""
    return _GENERATOR.format(
        kind=_KINDS[kind],
        problem=problem.text(),
        generate=GENERATOR_ENTRY,
        count=count,
        entry_point=problem.entry_point,
    )


def repair_prompt(lines: Sequence[str]) -> str:
    """The user turn after a failed run: one feedback line per failure."""
    return _REPAIR.format(lines="\n".join(f"- {line}" for line in lines))


def checker_prompt(problem: SynthProblem) -> str:
    """Ask for a checker program (a special judge) of non-unique outputs."""
    return _CHECKER.format(
        problem=problem.text(), check=CHECKER_ENTRY, entry_point=problem.entry_point
    )


def checker_review_prompt(problem: SynthProblem, code: str) -> str:
    """Ask a second call to review ``code`` and repair it when needed."""
    return _REVIEW.format(
        problem=problem.text(), entry_point=problem.entry_point, code=code.strip("\n")
    )
