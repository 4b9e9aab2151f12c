"""``sim``: a SIMULATED model for offline runs on benchmark problems.

It is not a language model. It answers the same prompts a real model gets, in the same reply
format (so the whole parsing path runs), but decides *what* to answer from the problem's gold
solution and private test inputs:

- **UT generator**: proposes one of the problem's private inputs; with probability ``attack``
  one on which the current code fails (if there is one), otherwise one it passes. For the
  ``random`` method (no code shown) it picks an input uniformly, so the attack rate is the
  code's own failure rate. The output it writes itself is right with probability ``out_acc``.
- **Output predictor**: each vote is the gold output with probability ``out_acc``; otherwise a
  plausible wrong answer, with probability ``wrong_focus`` the test's one main wrong answer
  (for a share ``mimic`` of the tests the current code's own output when that is wrong, as if
  the model traced the code; otherwise a near miss of the gold output), so that voting helps
  when ``out_acc > 1/2`` and hurts below.
- **Debugger**: when the feedback's expected output is right, it returns a fix (the gold
  solution) with probability ``fix``, otherwise a narrow patch that special-cases the feedback
  input (overfitting to the one test). When the feedback is wrong, it bends the code towards the
  wrong value: the special case plus, with probability ``regress``, a rewrite that returns wrong
  values on about half of all inputs (an edit that breaks what worked; validation on the other
  generated tests, i.e. backtracking, is what can catch it).
- **Coder** (best-of-N judging): a sampled solution is the gold solution with probability
  ``solve``, otherwise one of a few plausible wrong ones (right on most inputs).
- **Self-critic** (``none`` method): says "correct" for code that passes all private tests with
  probability ``critique_tpr`` and for failing code with probability ``1 - critique_tnr``.

For the training-data pipeline (:mod:`utdebug.train`) it also plays two more roles:

- **Corrupter** (``perturb``): a wrong version of the gold code it is shown, made with one AST
  mutation operator (:mod:`utdebug.mutation`) chosen with the sample's seed, in the reply
  format of the code-corruption prompt. It sees what a real model sees (the gold code).
- **Rationalizer** (``rationale``): a fixed-form explanation that restates the input and the
  output the prompt gives (a real model is given them too); with probability
  ``rationale_error`` it states a near miss of that output instead, as a model that argues
  itself into another answer. It works nothing out: its rationales carry no reasoning.

Synthesised inputs (``bench --synth-inputs``) are no private inputs: the run gives it the gold
outputs on them (:meth:`SimModel.register_outputs`), and its votes on them follow the same
accuracy (right with probability ``out_acc``, else a near miss of the gold output); on an
input with no known output (the gold code raised) every vote says it cannot tell, with no
answer, so the input is dropped. As the debugger it judges feedback on them against those gold
outputs, as it does on private inputs.

What it knows that a real model does not: as a test generator it draws inputs from the
problem's own test inputs and, with probability ``attack``, picks one on which the code under
test fails (it ran the code on all of them). Training labels never come from it: the pipeline
runs the gold code for every expected output.

Defaults per UT method are calibrated to the paper's Table 1 (Qwen2.5-7B on MBPP+Fix (Hard):
UTGen attack 41.96 %, output accuracy 58.04 %; prompted 39.80 % / 40.78 %; random 26.27 % /
57.25 %). Every completion is marked ``simulated`` and every reply says SIMULATED.
"""

from __future__ import annotations

import ast
import hashlib
import math
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from utdebug.agents.base import Completion, ModelError, ModelRequest, Usage
from utdebug.agents.reply_tests import program_key
from utdebug.literals import canonical_repr, literal_value
from utdebug.mutation import mutants

SIMULATED = "SIMULATED"

METHOD_DEFAULTS: dict[str, tuple[float | None, float]] = {
    "utgen": (0.4196, 0.5804),
    "prompted": (0.3980, 0.4078),
    "random": (None, 0.5725),
    "none": (None, 0.5725),
}


@dataclass(frozen=True, slots=True)
class SimParams:
    attack: float | None = 0.4196
    """P(a proposed input attacks the current code); None: uniform over the inputs."""
    out_acc: float = 0.5804
    """P(one predicted output is right)."""
    fix: float = 0.5
    """P(the debugger fixes the code given right feedback)."""
    regress: float = 0.8
    """P(an edit made from wrong feedback also breaks about half of the other inputs)."""
    wrong_focus: float = 0.9
    """P(a wrong vote is the test's main wrong answer rather than another one)."""
    mimic: float = 0.25
    """P(a test's main wrong answer is the current code's own output, when that is wrong)."""
    critique_tpr: float = 0.8
    critique_tnr: float = 0.6
    solve: float = 0.55
    """P(a sampled solution is right) when writing code from the task (best-of-N judging);
    about Llama3-8B's HumanEval+ pass@1 (paper Table 3: 54.43 %)."""
    seed: int = 0

    @classmethod
    def for_method(cls, method: str, **overrides: Any) -> SimParams:
        attack, acc = METHOD_DEFAULTS.get(method, METHOD_DEFAULTS["utgen"])
        base = cls(attack=attack, out_acc=acc)
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})

    def __post_init__(self) -> None:
        for name in (
            "out_acc",
            "fix",
            "regress",
            "wrong_focus",
            "mimic",
            "critique_tpr",
            "critique_tnr",
            "solve",
        ):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"sim {name} must be in [0, 1], got {v}")
        if self.attack is not None and not 0.0 <= self.attack <= 1.0:
            raise ValueError(f"sim attack must be in [0, 1], got {self.attack}")

    def to_json(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "out_acc": self.out_acc,
            "fix": self.fix,
            "regress": self.regress,
            "wrong_focus": self.wrong_focus,
            "mimic": self.mimic,
            "critique_tpr": self.critique_tpr,
            "critique_tnr": self.critique_tnr,
            "solve": self.solve,
            "seed": self.seed,
        }


@dataclass(frozen=True, slots=True)
class ProgramInput:
    """A private test of a target tested with programs (a method ...): its setup, call and
    follow-up expression (:mod:`utdebug.engine.program`)."""

    setup: str
    call: str
    then: str | None = None


@dataclass(frozen=True, slots=True)
class SimProblem:
    task_id: str
    entry_point: str
    gold: str
    given: str
    inputs: tuple[tuple[Any, ...] | ProgramInput, ...]
    """Argument tuples, or test programs for a target tested with programs."""
    expected: tuple[Any, ...]
    """The gold outputs on ``inputs`` (for a test program: its value, or an object with a
    ``type_name``, the exception a correct program raises)."""


Verdicts = Sequence[tuple[bool, Any]]
"""Per private input: (the code passes it, the value the code returned or None)."""
Oracle = Callable[[str, str], Awaitable[Verdicts]]
"""``(task_id, code) -> verdicts`` of ``code`` on that problem's private inputs."""
Matcher = Callable[[str, Any, Any, tuple[Any, ...]], bool]
"""``(task_id, value, gold, args) -> value is right`` (the problem's own comparison)."""


class GoldOracle(Protocol):
    """What the simulated model needs of the benchmark it runs on (the data layer's private-test
    runners are such oracles): each problem's private verdicts of a program, and the problem's
    own comparison of a value with its gold output."""

    async def verdicts(self, task_id: str, code: str) -> Verdicts: ...

    def matches(self, task_id: str, value: Any, gold: Any, args: tuple[Any, ...]) -> bool: ...


class SimModel:
    simulated = True
    supports_prefill = True

    def __init__(
        self,
        params: SimParams,
        oracle: Oracle,
        matcher: Matcher,
        *,
        name: str = "sim",
        rationale_error: float = 0.1,
    ) -> None:
        if not 0.0 <= rationale_error <= 1.0:
            raise ValueError(f"sim rationale_error must be in [0, 1], got {rationale_error}")
        self.params = params
        self.oracle = oracle
        self.matcher = matcher
        self.name = name
        self.rationale_error = rationale_error
        """P(a rationale states another output than the one it was given)."""
        self._problems: dict[str, SimProblem] = {}
        self._index: dict[str, dict[str, int]] = {}
        self._extra: dict[str, dict[str, Any]] = {}
        self._unknown: dict[str, set[str]] = {}

    def register(self, problem: SimProblem) -> None:
        self._problems[problem.task_id] = problem
        self._index[problem.task_id] = {_args_key(a): i for i, a in enumerate(problem.inputs)}

    def register_outputs(
        self, task_id: str, known: Sequence[tuple[Sequence[Any], Any]], unknown: Sequence[Any]
    ) -> None:
        """Gold outputs on inputs that are not the problem's private ones (synthesised inputs):
        ``known`` as (args, gold output); ``unknown``: inputs with no gold output."""
        self._extra[task_id] = {_args_key(a): v for a, v in known}
        self._unknown[task_id] = {_args_key(a) for a in unknown}

    async def complete(self, request: ModelRequest) -> list[Completion]:
        ctx = request.context if isinstance(request.context, dict) else {}
        problem = self._problems.get(str(ctx.get("task_id")))
        if problem is None:
            raise ModelError(
                "the simulated model only answers for registered benchmark problems "
                f"(got task {ctx.get('task_id')!r})",
                model=self.name,
            )
        out = []
        for i in range(request.n):
            rng = self._rng(problem, request, ctx, i)
            text = await self._answer(problem, request, ctx, rng)
            out.append(
                Completion(
                    text=text,
                    finish_reason="stop",
                    usage=Usage(
                        sum(len(m.content) for m in request.messages) // 4 // request.n,
                        len(text) // 4,
                        0.0,
                    ),
                    model=self.name,
                    simulated=True,
                )
            )
        return out

    def _rng(
        self, problem: SimProblem, req: ModelRequest, ctx: dict[str, Any], i: int
    ) -> random.Random:
        h = hashlib.sha256(
            repr(
                (
                    self.params.seed,
                    problem.task_id,
                    req.purpose,
                    ctx.get("code", ""),
                    req.sample_index + i,
                    ctx.get("args_key") or _args_key(ctx.get("args", ())),
                    repr(getattr(ctx.get("feedback"), "args", None)),
                )
            ).encode()
        ).digest()
        return random.Random(int.from_bytes(h[:8], "big"))

    async def _answer(
        self, p: SimProblem, req: ModelRequest, ctx: dict[str, Any], rng: random.Random
    ) -> str:
        code = str(ctx.get("code", p.given))
        if req.purpose == "ut":
            return await self._ut(p, code, ctx, rng)
        if req.purpose == "vote":
            return await self._vote(p, code, ctx, rng)
        if req.purpose == "debug":
            return await self._debug(p, code, ctx, rng)
        if req.purpose == "critique":
            return await self._critique(p, code, rng)
        if req.purpose == "generate":
            return self._generate(p, rng)
        if req.purpose == "perturb":
            return self._corrupt(code, rng)
        if req.purpose == "rationale":
            return self._rationale(p, ctx, rng)
        raise ModelError(
            f"the simulated model has no answer for purpose {req.purpose!r}", model=self.name
        )

    async def _ut(self, p: SimProblem, code: str, ctx: dict[str, Any], rng: random.Random) -> str:
        if not p.inputs:  # a training problem with no known input: nothing to propose
            return (
                f"## Hypothesis\n[{SIMULATED} reply of the sim model] I know no input for this "
                "task.\n"
            )
        verdicts = await self.oracle(p.task_id, code)
        failing = [i for i, (ok, _) in enumerate(verdicts) if not ok]
        passing = [i for i, (ok, _) in enumerate(verdicts) if ok]
        attack = self.params.attack if ctx.get("method") != "random" else None
        if attack is None or not failing or not passing:
            i = rng.randrange(len(p.inputs))
        else:
            i = rng.choice(failing) if rng.random() < attack else rng.choice(passing)
        value = self._predict(p, i, code, verdicts, rng)
        test = p.inputs[i]
        if isinstance(test, ProgramInput):
            return _program_reply(test, value)
        args = ", ".join(repr(a) for a in test)
        return (
            f"## Hypothesis\n[{SIMULATED} reply of the sim model] The code may mishandle "
            f"inputs like this one.\n\nError Pattern: {SIMULATED}\n\n## Unit Test\n\n"
            f"### Input Arguments\nArguments: ```{p.entry_point}({args})```\n\n"
            f"### Output\nOutput: ```{_literal(value)}```\n"
        )

    def _predict(
        self, p: SimProblem, i: int, code: str, verdicts: Verdicts, rng: random.Random
    ) -> Any:
        gold = p.expected[i]
        if rng.random() < self.params.out_acc:
            return gold
        if rng.random() >= self.params.wrong_focus:
            return _perturb(gold, 2)
        # The test's main wrong answer, the same for every vote: what the code under test
        # returns (the model traced the code instead of the task) or a near miss of the gold.
        ok, actual = verdicts[i] if i < len(verdicts) else (True, None)
        h = hashlib.sha256(repr((self.params.seed, p.task_id, code, i)).encode()).digest()
        mimic = h[0] / 256 < self.params.mimic
        if mimic and not ok and actual is not None and _literal(actual) is not None:
            return actual
        return _perturb(gold, 1)

    async def _vote(self, p: SimProblem, code: str, ctx: dict[str, Any], rng: random.Random) -> str:
        key = ctx.get("args_key") or _args_key(ctx.get("args", ()))
        i = self._index[p.task_id].get(key)
        extra = self._extra.get(p.task_id, {})
        if i is None and key in extra:
            gold = extra[key]
            if rng.random() < self.params.out_acc:
                value = gold
            else:
                value = _perturb(gold, 1 if rng.random() < self.params.wrong_focus else 2)
            return (
                f" [{SIMULATED}] Working through the input step by step.\n"
                f"Output: ```{_outcome(value)}```"
            )
        if i is None and key in self._unknown.get(p.task_id, set()):
            return f"[{SIMULATED}] I cannot tell what a correct function returns here."
        if i is None:
            return f"[{SIMULATED}] I cannot tell.\nOutput: ```None```"
        verdicts = await self.oracle(p.task_id, code)
        value = self._predict(p, i, code, verdicts, rng)
        return (
            f" [{SIMULATED}] Working through the input step by step.\n"
            f"Output: ```{_outcome(value)}```"
        )

    def _right(self, p: SimProblem, args: tuple[Any, ...], expected: Any) -> bool:
        """Whether ``expected`` is the gold output on ``args`` (a private input, or one whose
        gold output was registered: :meth:`register_outputs`); unknown: not right."""
        key = _args_key(args)
        i = self._index[p.task_id].get(key)
        extra = self._extra.get(p.task_id, {})
        if i is None and key not in extra:
            return False
        gold = p.expected[i] if i is not None else extra[key]
        return self.matcher(p.task_id, expected, gold, args)

    async def _debug(
        self, p: SimProblem, code: str, ctx: dict[str, Any], rng: random.Random
    ) -> str:
        fb = ctx.get("feedback")
        if fb is None:
            new = p.gold if rng.random() < self.params.fix / 2 else code
        elif getattr(fb, "setup", None) is not None:  # a test program (a method ...)
            key = program_key(fb.setup, fb.call, fb.then)
            i = self._index[p.task_id].get(key)
            right = i is not None and self.matcher(p.task_id, fb.expected, p.expected[i], ())
            # A right test: the gold code with probability ``fix``; otherwise (or misled by a
            # wrong expected outcome) the code as it is, which the engine refuses as no change:
            # narrow patches and regressions are not simulated inside a class.
            new = p.gold if right and rng.random() < self.params.fix else code
        else:
            args, expected = tuple(fb.args), fb.expected
            right = self._right(p, args, expected)
            if right and rng.random() < self.params.fix:
                new = p.gold
            elif right:  # a narrow patch that makes the feedback test pass (overfitting)
                new = special_case(code, p.entry_point, args, expected)
            else:  # misled by a wrong expected value: the logic is bent towards it
                broken = rng.random() < self.params.regress
                base = regressed(code, p.entry_point) if broken else code
                new = special_case(base, p.entry_point, args, expected)
        return (
            f"[{SIMULATED} reply of the sim model] Here is the corrected code:\n\n"
            f"```python\n{new}\n```\n"
        )

    def _generate(self, p: SimProblem, rng: random.Random) -> str:
        if rng.random() < self.params.solve:
            new = p.gold
        else:  # a plausible wrong solution: right on most inputs, one of FLAW_KINDS bugs
            new = flawed(p.gold, p.entry_point, rng.randrange(FLAW_KINDS))
        return (
            f"[{SIMULATED} reply of the sim model] Here is my solution:\n\n```python\n{new}\n```\n"
        )

    def _corrupt(self, code: str, rng: random.Random) -> str:
        found = mutants(code, rng, 1)
        if not found:
            return f"[{SIMULATED} reply of the sim model] I found no realistic error to introduce."
        (m,) = found
        return (
            f"[{SIMULATED} reply of the sim model] A student could slip here: "
            f"{m.site.operator} ({m.site.describe()}).\n\n"
            f"## Incorrect Code Solution\n```python\n{m.code.rstrip()}\n```\n"
        )

    def _rationale(self, p: SimProblem, ctx: dict[str, Any], rng: random.Random) -> str:
        args = tuple(ctx.get("args", ()))
        value = ctx.get("output")
        if rng.random() < self.rationale_error:
            value = _perturb(value, 1)
        # Written with sets in sorted order, so the text is the same in every process.
        shown = ", ".join(canonical_repr(a) for a in args)
        said = canonical_repr(value)
        return (
            f"[{SIMULATED} reply of the sim model] Let's think step by step.\n"
            f"- The function is called with {shown}.\n"
            f"- Following the task description for these arguments gives `{said}`.\n"
            f"- Therefore, `{p.entry_point}` returns `{said}`.\n"
        )

    async def _critique(self, p: SimProblem, code: str, rng: random.Random) -> str:
        verdicts = await self.oracle(p.task_id, code)
        correct = all(ok for ok, _ in verdicts)
        says = rng.random() < (
            self.params.critique_tpr if correct else 1.0 - self.params.critique_tnr
        )
        verdict = (
            "The above code is correct." if says else "The above code is wrong, please fix it."
        )
        return f"Feedback: [{SIMULATED}] I checked the code against the task. {verdict}"


def _args_key(args: Any) -> str:
    if isinstance(args, ProgramInput):
        return program_key(args.setup, args.call, args.then)
    try:
        return repr(list(args))
    except TypeError:
        return repr(args)


def _literal(value: Any) -> str | None:
    """A Python literal for ``value`` that reads back (``None`` when there is none)."""
    try:
        text = repr(value)
        if len(text) > 100_000:
            return None
        literal_value(text)
    except Exception:
        return None
    return text


def _outcome(value: Any) -> str | None:
    """A vote's answer: a literal, or ``raises <Type>`` for an expected exception."""
    name = getattr(value, "type_name", None)
    if isinstance(name, str):
        return f"raises {name}"
    return _literal(value)


def _program_reply(test: ProgramInput, value: Any) -> str:
    """A UT reply with a pytest function: the test program, asserting ``value``."""
    lines = [f"    {line}" for line in test.setup.splitlines() if line.strip()]
    name = getattr(value, "type_name", None)
    if isinstance(name, str):
        lines += [f"    with pytest.raises({name}):", f"        {test.call}"]
    elif test.then is not None:
        lines += [f"    {test.call}", f"    assert {test.then} == {_literal(value)}"]
    else:
        lines += [f"    assert {test.call} == {_literal(value)}"]
    body = "\n".join(lines)
    return (
        f"[{SIMULATED} reply of the sim model] The code may mishandle a case like this one.\n\n"
        f"```python\ndef test_simulated():\n{body}\n```\n"
    )


def _perturb(v: Any, j: int) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + j
    if isinstance(v, float):
        return v + j if math.isfinite(v) else 0.0
    if isinstance(v, str):
        return v[::-1] if j == 1 and len(set(v)) > 1 else v + "a" * j
    if isinstance(v, list):
        return v[:-1] if v else [0] * j
    if isinstance(v, tuple):
        return v[:-1] if v else (0,) * j
    if isinstance(v, set | frozenset):
        return set(list(v)[:-1]) if v else {j}
    if isinstance(v, dict):
        return dict(list(v.items())[:-1]) if v else {0: j}
    if v is None:
        return j - 1
    return None


def _keep_previous(code: str, entry_point: str, prev: str) -> str:
    """``code`` (right-stripped) followed by a copy of the definition of ``entry_point`` that
    Python binds, renamed to ``prev``, so that a wrapper defined after it can call it. Run as a
    whole program this is ``prev = entry_point``; merged into the module (the paper variant,
    :mod:`utdebug.agents.edits`) the wrapper replaces the function and the renamed copy comes
    with it as a helper. Without such a ``def`` it is the alias itself."""
    code = code.rstrip()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        tree = None
    node = None
    for stmt in tree.body if tree is not None else []:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            node = stmt if stmt.name == entry_point else node
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.col_offset == 0:
        lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", code)
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        copy = lines[first - 1 : node.end_lineno or node.lineno]
        i = node.lineno - first
        m = re.match(rf"((?:async[ \t]+)?def[ \t]+){re.escape(entry_point)}\b", copy[i])
        if m is not None:
            copy[i] = m.group(1) + prev + copy[i][m.end() :]
            return f"{code}\n\n\n{''.join(copy).rstrip()}"
    return f"{code}\n\n\n{prev} = {entry_point}"


def regressed(code: str, entry_point: str) -> str:
    """``code`` rewritten so that about half of all inputs get a wrong (perturbed) value."""
    prev = f"_sim_base_{entry_point}_{hashlib.sha256(code.encode()).hexdigest()[:8]}"
    return (
        f"{_keep_previous(code, entry_point, prev)}\n\n\n"
        f"def {entry_point}(*args):\n"
        f"    out = {prev}(*args)\n"
        "    if sum(map(ord, repr(args))) % 2 == 0:\n"
        "        if isinstance(out, bool):\n"
        "            return not out\n"
        "        if isinstance(out, (int, float)):\n"
        "            return out + 1\n"
        "        if isinstance(out, (list, tuple, str)) and out:\n"
        "            return out[:-1]\n"
        "        return None\n"
        "    return out\n"
    )


FLAW_KINDS = 8
"""Distinct wrong solutions ``flawed`` writes per problem (sampled solutions repeat them, as
sampled LLM solutions repeat the same mistakes)."""
_FLAW_PERIODS = (2, 3, 5, 7)


def flawed(code: str, entry_point: str, kind: int) -> str:
    """``code`` with bug ``kind``: wrong values on the inputs whose character sum falls in one
    residue class (1/2, 1/3, 1/5 or 1/7 of all inputs, by ``kind``). The wrong values are not
    the near misses a wrong predicted output uses (``_perturb``), so a wrong test agrees with a
    wrong solution only when it was written from that solution's own output (``mimic``)."""
    period = _FLAW_PERIODS[kind % len(_FLAW_PERIODS)]
    offset = (kind // len(_FLAW_PERIODS)) % period
    prev = f"_sim_flaw{kind}_{entry_point}_{hashlib.sha256(code.encode()).hexdigest()[:8]}"
    return (
        f"{code.rstrip()}\n\n\n"
        f"{prev} = {entry_point}\n\n\n"
        f"def {entry_point}(*args):\n"
        f"    out = {prev}(*args)\n"
        f"    if sum(map(ord, repr(args))) % {period} == {offset}:\n"
        "        if isinstance(out, bool):\n"
        "            return not out\n"
        "        if isinstance(out, (int, float)):\n"
        "            return out - 1\n"
        "        if isinstance(out, (list, tuple, str)) and out:\n"
        "            return out[1:]\n"
        "        return None\n"
        "    return out\n"
    )


def special_case(code: str, entry_point: str, args: tuple[Any, ...], value: Any) -> str:
    """``code`` plus a wrapper that returns ``value`` for exactly ``args`` (an overfit edit)."""
    a, v = _literal(list(args)), _literal(value)
    if a is None or v is None:
        return code
    prev = f"_sim_prev_{entry_point}_{hashlib.sha256(code.encode()).hexdigest()[:8]}"
    return (
        f"{_keep_previous(code, entry_point, prev)}\n\n\n"
        "inf, nan = float('inf'), float('nan')\n\n\n"
        f"def {entry_point}(*args):\n"
        f"    if list(args) == {a}:\n"
        f"        return {v}\n"
        f"    return {prev}(*args)\n"
    )


# --- what a person is shown of a simulated edit -------------------------------------------------

SIM_HELPER = re.compile(r"\b_sim_(?:prev|base|flaw\d+)_\w+")
"""The helpers the simulated model's code adds (the function before a wrap, renamed)."""


def shown_code(code: str, entry_point: str) -> tuple[str, list[str]]:
    """``code`` as a person is shown it: without the simulated model's machinery (the renamed
    copy of the function before each wrap, the wrapper, its ``inf, nan`` line), each wrap said
    instead as a line (``SIMULATED edit: add(0, 5) returns 5, a special case; ...``). The
    wrappers are how the simulation makes code behave as an overfit or regressing edit would;
    they are not code anyone wrote, and are never written back. Code without them is
    returned as it is, with no lines."""
    said: list[str] = []
    for _ in range(64):  # wraps stack: the newest is outermost
        unwrapped = _unwrap_once(code, entry_point)
        if unwrapped is None:
            break
        code, line = unwrapped
        said.append(line)
    return code, said[::-1]


def _unwrap_once(code: str, entry_point: str) -> tuple[str, str] | None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = tree.body
    defs = [n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    wrappers = [n for n in defs if n.name == entry_point]
    if not wrappers:
        return None
    wrapper = wrappers[-1]
    used = {
        n.id for n in ast.walk(wrapper) if isinstance(n, ast.Name) and SIM_HELPER.fullmatch(n.id)
    }
    if len(used) != 1:
        return None
    (helper,) = used
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", code)
    drop: set[int] = set()  # 0-based lines

    def span(node: ast.stmt) -> range:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return range(first - 1, node.end_lineno or node.lineno)

    drop.update(span(wrapper))
    put = ""  # what stands where the wrapper stood: the helper, renamed back
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == helper:
            rows = span(node)
            drop.update(rows)
            renamed = [lines[i] for i in rows]
            at = node.lineno - 1 - rows.start
            renamed[at] = re.sub(rf"\b{re.escape(helper)}\b", entry_point, renamed[at], count=1)
            put = "".join(renamed).rstrip("\r\n") + "\n"
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == helper for t in node.targets
        ):
            drop.update(span(node))  # ``helper = entry_point``: the def above is the code
        elif (
            isinstance(node, ast.Assign)
            and wrapper.lineno > node.lineno
            and ast.get_source_segment(code, node) == "inf, nan = float('inf'), float('nan')"
        ):
            drop.update(span(node))
    earlier = ["".join(lines[i] for i in span(n)).rstrip("\r\n") + "\n" for n in wrappers[:-1]]
    if put in earlier:  # a whole program (not merged): the function is there already
        put = ""
    first = span(wrapper).start
    kept = {first: put} if put else {}
    out = "".join(kept.get(i, text) for i, text in enumerate(lines) if i not in drop or i in kept)
    out = re.sub(r"\n{4,}", "\n\n\n", out).rstrip() + "\n"
    # The code's own leading line breaks, no more: the lines dropped above the function
    # left blank ones that the Code view marked as changed.
    lead = code[: len(code) - len(code.lstrip("\r\n"))]
    out = lead + out.lstrip("\r\n")
    return out, _what(helper, wrapper, entry_point, code)


def _what(
    helper: str, wrapper: ast.FunctionDef | ast.AsyncFunctionDef, entry: str, code: str
) -> str:
    kind = helper.split("_")[2]  # prev, base, flaw0...
    if kind == "prev":
        for node in ast.walk(wrapper):
            if (
                isinstance(node, ast.If)
                and isinstance(node.test, ast.Compare)
                and len(node.test.comparators) == 1
                and node.body
                and isinstance(node.body[0], ast.Return)
                and node.body[0].value is not None
            ):
                args = ast.get_source_segment(code, node.test.comparators[0]) or "?"
                value = ast.get_source_segment(code, node.body[0].value) or "?"
                if args[:1] + args[-1:] in ("[]", "()"):
                    args = args[1:-1]
                return (
                    f"SIMULATED edit: {entry}({args}) returns {value}, a special case the "
                    "simulated model adds (as an overfit edit would); not code to keep"
                )
        return f"SIMULATED edit: the simulated model wraps {entry}; not code to keep"
    if kind == "base":
        return (
            f"SIMULATED edit: about half of all inputs of {entry} get a wrong value (a "
            "regression the simulated model makes); not code to keep"
        )
    return f"SIMULATED solution: {entry} is wrong on some inputs (a flawed sample); not code"
