"""The engine's data: the task, its settings, generated unit tests and code identities."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from utdebug.agents.base import Sampling
from utdebug.agents.roles import DEBUG_SAMPLING, UT_SAMPLING, VOTE_SAMPLING, TaskText
from utdebug.engine.program import Raises
from utdebug.expected_values import expected_value, expected_value_or_repr
from utdebug.literals import canonical_repr
from utdebug.sandbox.compare import CheckSpec, Semantics
from utdebug.sandbox.config import Limits
from utdebug.sandbox.values import describe

RULES_VERSION = "4"
"""How replies are read and edits applied (parsers, natural ends, merging edits into their
module): part of every benchmark record's key, so a resumed run never mixes records made under
other rules. Bump it whenever those rules change. 4: every test of a reply with setup is read
(tables of cases, fixtures, helpers), a test is admitted before voting (it calls the target as
written, its setup runs), ``raises X`` in a python block; ClassEval+Fix tasks carry ClassEval's
method descriptions."""

RANKERS = ("b4", "codet", "codet_paper", "maxpass", "most_passed", "mbr_exec", "random")
"""Ranking strategies for candidate edits (the values of :class:`utdebug.ranking.Strategy`)."""


class Variant(StrEnum):
    PAPER = "paper"
    """The paper's Algorithms 1 and 2."""
    REFERENCE = "reference"
    """The published code's behaviour (reference-implementation notes, sections 6 and 7)."""


class UTMethod(StrEnum):
    UTGEN = "utgen"
    """The failing-UT prompt, conditioned on the code (with a UTGen-trained model)."""
    PROMPTED = "prompted"
    """The same prompt with an untrained model."""
    RANDOM = "random"
    """Tests from the task description alone; the code is not shown."""
    NONE = "none"
    """No unit tests: the model critiques its own code (self-feedback baseline)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One function to debug."""

    task_id: str
    description: str
    signature: str
    entry_point: str
    code: str
    example: str | None = None
    he_stub: str | None = None
    reference_use_set: bool = False
    """The reference variant compares generated tests as sets (``' set('`` in the test text)."""
    class_name: str | None = None
    """The class of a method target. For a staticmethod tested with literal arguments its
    ``code`` has the method appended at module level too: edits replace both copies
    (:mod:`utdebug.agents.edits`)."""
    program: bool = False
    """Tests of this task are small programs (setup, call, expected outcome: see
    :mod:`utdebug.engine.program`), not literal arguments: methods, properties, async
    functions, generators, functions that take objects."""
    context: str | None = None
    """What a test writer needs besides the code (the class around a method, the module's
    imports, the definitions of the types a function takes); shown in the program prompts."""
    target_kind: str = "function"
    """What the entry point is: ``function``, ``async function``, ``generator``, ``method``,
    ``classmethod``, ``staticmethod``, ``property`` ... (prompts and reports say it)."""

    def text(self) -> TaskText:
        # tested with literals: no context, the prompts speak of a function (``class_name``:
        # a staticmethod's class, None for a function)
        program = self.program
        return TaskText(
            self.description,
            self.signature,
            self.entry_point,
            self.example,
            self.he_stub,
            program=program,
            context=self.context if program else None,
            class_name=self.class_name,
            target_kind=self.target_kind if program else "function",
        )


@dataclass(frozen=True, slots=True)
class Settings:
    n: int = 3
    """Unit tests per set."""
    k: int = 8
    """Output votes per test (self-consistency); 0 turns voting off."""
    threshold: float = 0.5
    """Keep a test when its top answer has at least this share of the k draws."""
    rounds: int = 3
    variant: Variant = Variant.PAPER
    ut_method: UTMethod = UTMethod.UTGEN
    backtrack: bool = True
    tries_factor: int | None = None
    """Proposals per test set = tries_factor x n (paper 3, reference 4)."""
    patience: int = 3
    """Reference variant only: attempts without progress before giving up."""
    feedback: Literal["first", "last"] | None = None
    """Which failing test is the feedback (paper: last, reference: first)."""
    limits: Limits = field(
        default_factory=lambda: Limits(per_input=2.0, memory_mb=1024, batch=30.0)
    )
    """Limits of the generated tests' runs; CPU-time limits by default (``Limits.kind``), so
    whether a test times out does not depend on the machine's load."""
    parse_timeout: float = 1.0
    ut_sampling: Sampling = UT_SAMPLING
    vote_sampling: Sampling = VOTE_SAMPLING
    debug_sampling: Sampling = DEBUG_SAMPLING
    candidates: int = 1
    """Edits sampled per round; more than 1 ranks them with ``ranker`` (1: the paper)."""
    ranker: str = "b4"
    """How candidates are ranked (a :class:`utdebug.ranking.Strategy` value)."""
    tie: Literal["first", "pool"] = "first"
    """Tie rule of the ranking (see :mod:`utdebug.ranking`)."""
    beta0: float | None = None
    """B4's beta0 (``None``: the ranking default)."""
    alpha_xy: float | None = None
    """B4's alpha_xy (``None``: the ranking default)."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n (tests per set) must be at least 1, got {self.n}")
        if self.k < 0:
            raise ValueError(f"k (votes) must be 0 (no voting) or more, got {self.k}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if self.rounds < 0:
            raise ValueError(f"rounds must be 0 or more, got {self.rounds}")
        if self.tries_factor is not None and self.tries_factor < 1:
            raise ValueError(f"tries_factor must be at least 1, got {self.tries_factor}")
        if self.candidates < 1:
            raise ValueError(f"candidates must be at least 1, got {self.candidates}")
        if self.candidates > 1 and self.variant is not Variant.PAPER:
            raise ValueError(
                "ranked candidates (candidates > 1) need the paper variant: the reference "
                "variant reproduces the published code, which samples one edit per round"
            )
        if self.candidates > 1 and self.ut_method is UTMethod.NONE:
            raise ValueError(
                "ranked candidates (candidates > 1) need generated tests: the 'none' method "
                "has none to rank them with"
            )
        if self.ranker not in RANKERS:
            raise ValueError(f"unknown ranker {self.ranker!r}; choose one of: {', '.join(RANKERS)}")
        if self.tie not in ("first", "pool"):
            raise ValueError(f"unknown tie rule {self.tie!r}; choose 'first' or 'pool'")
        for name in ("beta0", "alpha_xy"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v}")

    @property
    def tries(self) -> int:
        f = self.tries_factor or (4 if self.variant is Variant.REFERENCE else 3)
        return f * self.n

    @property
    def feedback_rule(self) -> Literal["first", "last"]:
        if self.feedback is not None:
            return self.feedback
        return "first" if self.variant is Variant.REFERENCE else "last"

    @property
    def semantics(self) -> Semantics:
        return Semantics.REFERENCE if self.variant is Variant.REFERENCE else Semantics.DATASET

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "k": self.k,
            "threshold": self.threshold,
            "rounds": self.rounds,
            "variant": self.variant.value,
            "ut_method": self.ut_method.value,
            "backtrack": self.backtrack,
            "tries": self.tries,
            "patience": self.patience,
            "feedback": self.feedback_rule,
            "per_input": self.limits.per_input,
            "limit_kind": self.limits.kind.value,
            "rules": RULES_VERSION,
        } | self._ranking_json()

    def _ranking_json(self) -> dict[str, Any]:
        """The candidate settings, only when in use (C = 1 is the paper: keys unchanged)."""
        if self.candidates == 1:
            return {}
        return {
            "candidates": self.candidates,
            "ranker": self.ranker,
            "tie": self.tie,
            "beta0": self.beta0,
            "alpha_xy": self.alpha_xy,
        }


def _default_source(origin: str) -> str:
    return "person" if origin == "person" else "model"


def _valid_source(source: str) -> bool:
    return source in ("model", "person") or (
        source.startswith("synth:") and len(source) > len("synth:")
    )


def code_id(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:12]


@dataclass(slots=True)
class UnitTest:
    id: int
    args: tuple[Any, ...]
    call: str
    expected: Any
    votes: dict[str, int] = field(default_factory=dict)
    """Answer key -> count (empty without voting or for a person's test)."""
    draws: int = 0
    share: float = 1.0
    origin: Literal["model", "person"] = "model"
    round: int = 0
    target: str = ""
    """``code_id`` of the code the test was generated against."""
    setup: str | None = None
    """A program test's setup statements (``None``: a literal-argument test, whose ``args``
    are the call's arguments); see :mod:`utdebug.engine.program`. For a program test ``args``
    is empty, ``call`` is the call expression and ``expected`` a value or a
    :class:`~utdebug.engine.program.Raises`."""
    then: str | None = None
    """A program test's follow-up expression: its value after the call is what is compared."""
    input_source: str = "model"
    """Where the test's input came from: ``model`` (UTGen), ``person``, or ``synth:<source>``
    (:mod:`utdebug.synth`: ``synth:seed``, ``synth:mutation``, ``synth:hypothesis`` ...).
    ``origin`` says who gave the expected value; this says who gave the input."""

    @property
    def program(self) -> bool:
        return self.setup is not None

    def code(self) -> str:
        """The test as a person reads it: setup lines, the call, the expected outcome."""
        if not self.program:
            return f"assert {self.call} == {describe(self.expected, 2000)}"
        lines = [line for line in (self.setup or "").splitlines() if line.strip()]
        if isinstance(self.expected, Raises):
            lines += [f"with pytest.raises({self.expected.type_name}):", f"    {self.call}"]
        elif self.then is not None:
            lines += [self.call, f"assert {self.then} == {describe(self.expected, 2000)}"]
        else:
            lines += [f"assert {self.call} == {describe(self.expected, 2000)}"]
        return "\n".join(lines)

    def check(self, task: Task, variant: Variant) -> CheckSpec:
        if variant is Variant.REFERENCE:
            return CheckSpec(reference_use_set=task.reference_use_set)
        return CheckSpec()

    def to_json(self) -> dict[str, Any]:
        return (
            {
                "id": self.id,
                "call": self.call,
                "expected": describe(self.expected, 2000),
                "share": round(self.share, 4),
                "draws": self.draws,
                "votes": dict(self.votes),
                "origin": self.origin,
                "round": self.round,
                "target": self.target,
            }
            | self._source_json()
            | self._record_json()
        )

    def _source_json(self) -> dict[str, Any]:
        """``input_source`` when it is not the default for the test's origin (so records of
        model and person tests read as they did before the field existed)."""
        if self.input_source == _default_source(self.origin):
            return {}
        return {"input_source": self.input_source}

    def _record_json(self) -> dict[str, Any]:
        return self._exact_json() | self._program_json()

    def _exact_json(self) -> dict[str, Any]:
        """What ``expected`` (shortened for people) does not say exactly: a literal test's
        arguments (``args``) and, when it differs from ``expected``, the expected value's full
        canonical text (``value``), so that :meth:`from_json` reads the test back as it was."""
        out: dict[str, Any] = {}
        if not self.program:
            out["args"] = canonical_repr(tuple(self.args))
        if not isinstance(self.expected, Raises):
            exact = canonical_repr(self.expected)
            if exact != describe(self.expected, 2000):
                out["value"] = exact
        return out

    def _program_json(self) -> dict[str, Any]:
        """A program test's parts (a literal-argument test's record is unchanged)."""
        if not self.program:
            return {}
        out: dict[str, Any] = {"setup": self.setup}
        if self.then is not None:
            out["then"] = self.then
        if isinstance(self.expected, Raises):
            out["raises"] = self.expected.type_name
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], *, module_source: str | None = None) -> UnitTest:
        """The test a :meth:`to_json` record describes. Values are read as expected values
        are (:func:`utdebug.expected_values.expected_value_or_repr`, never evaluated), with the
        classes of ``module_source`` (the code under test) for what needs them (a
        namedtuple). Raises ``ValueError`` (a :class:`~utdebug.literals.LiteralError` for an
        unreadable value) or ``KeyError`` for a record that is not a test's."""
        expected: Any
        if "raises" in data:
            expected = Raises(str(data["raises"]))
        else:
            text = str(data.get("value", data["expected"]))
            expected = expected_value_or_repr(text, module_source=module_source)
        args: tuple[Any, ...] = ()
        if "args" in data:
            read = expected_value(str(data["args"]), module_source=module_source)
            if not isinstance(read, tuple):
                raise ValueError(f"a test's args must be a tuple, got {data['args']!r}")
            args = read
        origin = data.get("origin", "model")
        if origin not in ("model", "person"):
            raise ValueError(f"unknown test origin {origin!r}")
        source = str(data.get("input_source", _default_source(origin)))
        if not _valid_source(source):
            raise ValueError(f"unknown test input source {source!r}")
        setup = data.get("setup")
        then = data.get("then")
        votes = {str(k): int(v) for k, v in dict(data.get("votes", {})).items()}
        draws = int(data.get("draws", 0))
        share = float(data.get("share", 1.0))
        if votes and draws and abs(max(votes.values()) / draws - share) < 1e-4:
            share = max(votes.values()) / draws  # the record rounds it to 4 places
        return cls(
            id=int(data["id"]),
            args=args,
            call=str(data["call"]),
            expected=expected,
            votes=votes,
            draws=draws,
            share=share,
            origin=origin,
            round=int(data.get("round", 0)),
            target=str(data.get("target", "")),
            setup=None if setup is None else str(setup),
            then=None if then is None else str(then),
            input_source=source,
        )
