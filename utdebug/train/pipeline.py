"""One problem's training data: corrupted code, failing unit tests, rationales, SFT targets.

:func:`process_problem` is the unit of work (``fn(job, ctx)`` of a runner); it returns the
problem's record, which the driver alone writes. Steps:

0. **Gold check**: the gold code must load in the sandbox (the paper keeps code that "executes
   without any errors"); its outputs on the problem's known inputs (at most
   :data:`MAX_KNOWN_INPUTS`) are computed for the simulated model and the validation file. They
   are computed again in a second sandbox (its own zygote, so another string-hash seed): a
   problem whose gold outputs differ there (a tuple built from a set of strings) is dropped,
   since its labels would not be the same in another process. As the two seeds may give the
   same order by chance, an output that is a sequence of texts from gold code that builds
   sets is not used as a label either (:func:`order_suspect`, :func:`uses_sets`).
1. **Corrupt** (stage I): ``Settings.corruptions`` (2) wrong versions of the gold code, by the
   model (the code-corruption prompt; the reply's code is merged into the gold module and its
   comments removed, since they tend to say where the bug is) or by AST mutation operators
   (:mod:`utdebug.mutation`, no model). Versions that do not parse, equal the gold code or an
   earlier version (as syntax trees), or fail to load are dropped. Each records what made it.
2. **Failing inputs** (stage II): for each version, up to ``Settings.attempts`` (5) replies to
   the UTGen prompt (the inference prompt, :func:`utdebug.agents.prompts.ut_prompt`, with the
   corrupted code), read by the engine's parser; the input runs on the gold code (twice: its
   output must be the same both times) and on the corrupted code in the sandbox; an input is kept
   when the outputs differ under the source's comparison (``atol``). The label is the gold
   code's output, never the model's, and the second sandbox must give the same one. It stops
   at ``Settings.tests_per_code`` (1) kept inputs.
3. **Rationales** (stage III): for each kept test, the model is shown the whole test (the
   output-rationalization prompt) and explains why the gold output is right. A rationale cut
   at the token limit, empty, or whose stated answer (read by the engine's output parser) is
   not the gold output is rejected. The SFT target is the UT reply in the inference format:
   the model's hypothesis and input reasoning from its stage II reply (up to where its own
   test begins: the model's expected output, often wrong, is not kept), ``Arguments:`` with
   the input, then ``### Output``, the rationale, and ``Output:`` with the gold output. The target
   is parsed back with the engine's parsers (same input, same output) and must not reach the
   natural end of a streamed test reply before its end; otherwise it is rejected.

A problem held out for validation stops after stage II: its first version with a failing
input becomes a row of the validation file (MBPP+Fix format), never an SFT example.
"""

from __future__ import annotations

import ast
import asyncio
import atexit
import hashlib
import io
import math
import random
import re
import threading
import time
import tokenize
from collections import Counter
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from utdebug.agents import parsing, prompts
from utdebug.agents.base import (
    CostLimitExceeded,
    Meter,
    Metered,
    Model,
    ModelAuthError,
    ModelError,
    ModelNotFound,
)
from utdebug.agents.endings import reached
from utdebug.agents.reply_tests import ParsedProgram
from utdebug.agents.roles import Perturber, Rationalizer, TaskText, UTGenerator
from utdebug.agents.sim import SIMULATED, SimModel, SimParams, SimProblem
from utdebug.distributed import WorkerContext
from utdebug.engine.voting import answer_key
from utdebug.literals import LiteralError, canonical_repr, literal_value
from utdebug.mutation import mutants, normalized_dump, parse_quietly
from utdebug.runs.records import record_key
from utdebug.sandbox import CheckSpec, LimitKind, Limits, Outcome, Sandbox, Semantics, Status
from utdebug.sandbox.compare import outputs_match
from utdebug.sandbox.executor import UID_SLOTS
from utdebug.sandbox.verdicts import Verdict, judge
from utdebug.train.sources import TrainProblem

__all__ = [
    "MAX_KNOWN_INPUTS",
    "NO_MODEL",
    "PIPELINE_VERSION",
    "Job",
    "Settings",
    "build_target",
    "job_key",
    "literal_text",
    "order_suspect",
    "process_problem",
    "same_answer",
    "second_sandbox",
    "strip_comments",
    "uses_sets",
    "verify_target",
]

PIPELINE_VERSION = "utgen-data-1"
NO_MODEL = "none"
"""``Settings.model`` when no stage uses a model."""
"""Part of every record key: bump it when what a record holds for the same inputs changes."""
MAX_KNOWN_INPUTS = 100
"""Known inputs of a problem run on the gold code (for the simulated model and the validation
file): the first ones, in the source's order."""

T = TypeVar("T")
FATAL_ERRORS = (ModelAuthError, ModelNotFound, CostLimitExceeded)
"""Model errors every problem would hit: the run stops (as the benchmarks do)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What determines a problem's record (besides the problem itself)."""

    model: str
    """The model of stages I-III as ``--model`` names it (``sim``, ``scripted:PATH``, a
    configured name or a litellm model string); :data:`NO_MODEL` when no stage uses one."""
    perturb: Literal["ast", "model"] = "ast"
    inputs: Literal["model", "dataset"] = "model"
    """Stage II: the model proposes inputs, or the source's own test inputs are tried (no
    model)."""
    rationale: Literal["model", "none"] = "model"
    """Stage III: the model explains the output, or the target has no rationale (no model)."""
    corruptions: int = 2
    attempts: int = 5
    tests_per_code: int = 1
    rationale_tries: int = 1
    seed: int = 0
    timeout: float = 1.0
    """Seconds per input in the sandbox (of ``limit_kind``)."""
    limit_kind: str = "cpu"
    sim_attack: float | None = None
    """The simulated model's attack rate (``None``: its UTGen default, 0.4196)."""
    sim_rationale_error: float = 0.1
    cache_dir: str | None = None
    """Folder of the response cache for a real model (``None``: no cache); not in the key."""

    def key_parts(self) -> dict[str, Any]:
        parts = asdict(self)
        parts.pop("cache_dir")
        for name, default in (("inputs", "model"), ("rationale", "model")):
            if parts[name] == default:
                parts.pop(name)  # the keys of runs from before these settings stay the same
        if not self.model.startswith("sim"):
            parts.pop("sim_attack")
            parts.pop("sim_rationale_error")
        return parts

    @property
    def uses_model(self) -> bool:
        """Some stage asks a model (otherwise no model is set up, and none is named)."""
        return self.perturb == "model" or self.inputs == "model" or self.rationale == "model"

    def stage_sources(self) -> dict[str, str]:
        """What made each stage's part of the data (for the card): a model, or no model."""
        model = f"the model {self.model}" + (f" ({SIMULATED})" if self.simulated else "")
        return {
            "perturb": model if self.perturb == "model" else "AST mutation (no model)",
            "inputs": model
            if self.inputs == "model"
            else "the source's own test inputs (no model)",
            "rationale": model if self.rationale == "model" else "none (no model)",
        }

    @property
    def sim(self) -> bool:
        """The simulated model plays stages I-III."""
        return self.model == "sim"

    @property
    def simulated(self) -> bool:
        """No language model writes the text: the simulated model, or a scripted one (replies
        replayed from a file, as utdebug's models mark it); everything says SIMULATED."""
        return self.model == "sim" or self.model.startswith("scripted:")

    def limits(self) -> Limits:
        """Per input ``timeout``; a batch (a program on the known inputs) at most 5 s, and
        after 2 timeouts its other inputs get 0.1 s each (a corrupted loop that never ends
        costs little)."""
        return Limits(
            per_input=self.timeout,
            load=5.0,
            memory_mb=1024,
            frame_cap=1 << 20,  # a value over 1 MB is no test label (literal_text refuses it)
            batch=5.0,
            cut_after=2,
            cut_limit=min(0.1, self.timeout),
            kind=LimitKind(self.limit_kind),
        )


@dataclass(frozen=True, slots=True)
class Job:
    index: int
    """The problem's place in the run (the order of the SFT shards)."""
    key: str
    problem: TrainProblem
    settings: Settings
    holdout: bool = False


def job_key(problem: TrainProblem, settings: Settings, holdout: bool) -> str:
    return record_key(
        {
            "pipeline": PIPELINE_VERSION,
            "prompts": [prompts.PROMPT_VERSION, prompts.TRAIN_PROMPT_VERSION],
            "problem": problem.fingerprint(),
            "settings": settings.key_parts(),
            "holdout": holdout,
        }
    )


# --- values as literals -----------------------------------------------------------------------


def literal_text(value: Any) -> str | None:
    """``value`` as a Python literal (sets in sorted order, :func:`canonical_repr`, so that the
    text is the same in every process) when it reads back as the same value; ``None`` otherwise
    (objects, values too large to write into a test)."""
    try:
        text = canonical_repr(value)
    except Exception:
        return None
    if len(text) > 10_000:
        return None
    try:
        back = literal_value(text)
    except (LiteralError, RecursionError, MemoryError):
        return None
    return text if canonical_repr(back) == text else None


def same_answer(a: Any, b: Any) -> bool:
    """The same value as an answer: the engine's vote key (numbers by value, ``True`` is not
    ``1``, lists are not tuples, sets and dicts without order), floats within a relative 1e-9.
    Stricter than a benchmark's comparison helper, which MBPP+'s ``np.allclose`` makes pass
    ``(0,)`` for ``()``."""
    if answer_key(a) == answer_key(b):
        return True
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return not isinstance(b, bool) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return False


_SET_METHODS = frozenset(
    {"intersection", "union", "difference", "symmetric_difference", "issubset", "issuperset"}
)


def uses_sets(code: str) -> bool:
    """Whether ``code`` builds sets (literals, comprehensions, ``set()``/``frozenset()``, set
    methods): the order of a set of strings changes with the process's string-hash seed."""
    tree = parse_quietly(code)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Set | ast.SetComp):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("set", "frozenset"):
                return True
            if isinstance(f, ast.Attribute) and f.attr in _SET_METHODS:
                return True
    return False


def order_suspect(value: Any) -> bool:
    """A list or tuple with two or more items that hold text: if it was made from a set, its
    order is the set's, which depends on the string-hash seed."""
    if not isinstance(value, list | tuple):
        return False
    return sum(1 for item in value if _holds_text(item)) >= 2


def _holds_text(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str | bytes):
        return True
    if depth < 5 and isinstance(value, list | tuple | set | frozenset):
        return any(_holds_text(v, depth + 1) for v in value)
    return False


def _call_source(entry_point: str, args: tuple[Any, ...]) -> str | None:
    parts = [literal_text(a) for a in args]
    if any(p is None for p in parts):
        return None
    return f"{entry_point}({', '.join(p for p in parts if p is not None)})"


# --- targets ------------------------------------------------------------------------------------

_OUTPUT_START = re.compile(r"(?im)^[ \t]*(?:#{1,6}[ \t]*\**[ \t]*output\b|[*_]*output[*_ \t]*:)")
_ARGUMENTS = re.compile(r"(?i)\barguments?\b[*_ \t]*:")
_INPUT_HEADER = re.compile(r"(?im)^[ \t]*#{1,6}[ \t]*input arguments\b")
_HEADER = re.compile(r"^([ \t]*)#{1,6}[ \t]+")


_FENCE = re.compile(r"(?m)^[ \t]*(?:`{3,}|~{3,})")


def _plain(rationale: str) -> str:
    """A rationale without Markdown headers (a ``## Hypothesis`` inside the output section
    would read as a new test), without a leading ``Reasoning`` title, its code fences
    closed."""
    lines = [_HEADER.sub(r"\1", line) for line in rationale.strip().splitlines()]
    while lines and lines[0].strip().strip("*:").strip().lower() in ("reasoning", ""):
        lines.pop(0)
    text = "\n".join(lines).strip()
    if len(_FENCE.findall(text)) % 2:
        text += "\n```"
    return text


def _test_start(head: str, model_call: str | None) -> int:
    """Where the model's own test begins in ``head``: the line of the first occurrence of its
    call, or the code block holding it (its expected output, often wrong, must not stay in the
    target); the end of ``head`` when the call is not there."""
    if not model_call:
        return len(head)
    at = head.find(model_call)
    if at < 0:
        return len(head)
    line = head.rfind("\n", 0, at) + 1
    fences = [m.start() for m in _FENCE.finditer(head, 0, line)]
    return fences[-1] if len(fences) % 2 else line


def build_target(
    reply: str,
    call_source: str,
    rationale: str,
    gold_literal: str,
    model_call: str | None = None,
) -> str:
    """The SFT target: the UT reply's hypothesis and input reasoning (up to its own test, which
    begins at ``model_call``, its ``Arguments:`` or its output section), the input as
    ``Arguments: ```f(...)``` ``, then ``### Output``, the rationale and the gold output."""
    head = reply
    m = _OUTPUT_START.search(head)
    if m is not None:
        head = head[: m.start()]
    args_at = [a.start() for a in _ARGUMENTS.finditer(head)]
    if args_at:
        head = head[: args_at[-1]]
    head = head[: _test_start(head, model_call)].rstrip()
    if _INPUT_HEADER.search(head) is None:
        head = f"{head}\n\n### Input Arguments" if head else "### Input Arguments"
    explained = _plain(rationale)
    return (
        f"{head}\nArguments: ```{call_source}```\n\n"
        f"### Output\n{explained + chr(10) if explained else ''}Output: ```{gold_literal}```\n"
    )


def verify_target(
    target: str,
    entry_point: str,
    params: list[str] | None,
    args: tuple[Any, ...],
    gold_literal: str,
) -> str | None:
    """Why the engine would not read ``target`` as the test it is (``None``: it would)."""
    call = parsing.parse_call(target, entry_point, params=params)
    if isinstance(call, parsing.ParseFailure):
        return f"the target's input does not parse back ({call.reason})"
    if (
        call.pending is not None
        or call.kwargs
        or canonical_repr(tuple(call.args)) != canonical_repr(tuple(args))
    ):
        return "the target's input parses back to another input"
    out = parsing.parse_output(target, call=call.source)
    if isinstance(out, parsing.ParseFailure):
        return f"the target's output does not parse back ({out.reason})"
    if out.pending or canonical_repr(out.value) != gold_literal:
        return "the target's output parses back to another value"
    end = reached("ut", target)
    if end is not None and end < len(target.rstrip()):
        return "a streamed reply would end inside the rationale (an Output: marker with a value)"
    return None


def strip_comments(code: str) -> str:
    """``code`` without its comments (lines left empty by them go too)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    lines = code.splitlines(keepends=True)
    cuts: dict[int, int] = {}
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            cuts[tok.start[0]] = tok.start[1]
    out = []
    for i, line in enumerate(lines, start=1):
        if i in cuts:
            kept = line[: cuts[i]].rstrip()
            if not kept.strip():
                continue
            line = kept + "\n"
        out.append(line)
    return "".join(out)


# --- the worker ---------------------------------------------------------------------------------

_LOCAL = threading.local()
_SHARED_LOCK = threading.Lock()
_SHARED: dict[str, Model] = {}


def _loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, kept for the thread's life (a model client made on it is
    used on it again)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_LOCAL, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _LOCAL.loop = loop
    return loop


_SECOND_LOCK = threading.Lock()
_SECOND: dict[int, Sandbox] = {}


def second_sandbox(first: Sandbox) -> Sandbox:
    """A sandbox beside ``first`` (one per process, started on first use, closed at exit):
    its own zygote, so its own string-hash seed (the order of a set of strings differs), and
    its children's uids after ``first``'s."""
    with _SECOND_LOCK:
        sb = _SECOND.get(id(first))
        if sb is None:
            cfg = replace(first.config, uid_base=first.config.uid_base + UID_SLOTS)
            sb = _SECOND[id(first)] = Sandbox(cfg)
            sb.start()
            if len(_SECOND) == 1:
                atexit.register(_close_second)
        return sb


def _close_second() -> None:
    with _SECOND_LOCK:
        for sb in _SECOND.values():
            sb.close()
        _SECOND.clear()


def _real_model(settings: Settings) -> tuple[Model, str]:
    """A scripted model (one per process: its replies are served in order) or a litellm model
    (one per thread, with its own event loop); and its endpoint name."""
    from utdebug.agents.config import resolve_model_spec
    from utdebug.agents.factory import build_model, kind_of

    spec = resolve_model_spec(settings.model)
    if kind_of(spec).replays_file:
        with _SHARED_LOCK:
            model = _SHARED.get(settings.model)
            if model is None:
                model = _SHARED[settings.model] = build_model(spec)
        return model, settings.model
    cache: dict[str, Model] = getattr(_LOCAL, "models", None) or {}
    _LOCAL.models = cache
    endpoint = spec.api_base or spec.litellm_model or spec.name
    model = cache.get(settings.model)
    if model is None:
        cache_dir = None if settings.cache_dir is None else Path(settings.cache_dir)
        model = build_model(spec, cache_dir=cache_dir)
        cache[settings.model] = model
    return model, endpoint


@dataclass(slots=True)
class _Test:
    """A failing unit test found in stage II."""

    attempt: int
    reply: str
    args: tuple[Any, ...]
    call: str
    gold: Any
    gold_literal: str
    corrupted: str
    """What the corrupted code did (``returned ...``, ``raised ...``, ``timeout``)."""
    model_call: str | None = None
    """The call as the reply wrote it (where its own test begins)."""


@dataclass(slots=True)
class _Version:
    """A corrupted version of the gold code."""

    code: str
    by: str
    note: str
    tests: list[_Test] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)


class _Work:
    def __init__(self, job: Job, ctx: WorkerContext) -> None:
        self.job = job
        self.p = job.problem
        self.s = job.settings
        self.ctx = ctx
        self.sb: Sandbox = ctx.sandbox()
        self.limits = self.s.limits()
        self.check = CheckSpec(atol=self.p.atol)
        self.task = TaskText(self.p.description, self.p.signature, self.p.entry_point)
        self.counts: dict[str, Counter[str]] = {
            "problem": Counter(),
            "perturb": Counter(),
            "inputs": Counter(),
            "rationales": Counter(),
        }
        self.executions = 0
        self.batches = 0
        self.meter = Meter()
        self.versions: list[_Version] = []
        self.examples: list[dict[str, Any]] = []
        self.val: dict[str, Any] | None = None
        self.known: list[tuple[tuple[Any, ...], Any]] = []
        self.model: Model | None = None
        self.endpoint = ""
        self.error: str | None = None
        self.error_kind: str | None = None
        self.fatal = False
        self.gold_error: str | None = None
        self.model_name = self.s.model
        self._verdicts: dict[str, list[tuple[bool, Any]]] = {}
        self._uses_sets: bool | None = None

    # -- the sandbox and the model --

    def run(
        self, code: str, inputs: list[tuple[Any, ...]], sb: Sandbox | None = None
    ) -> tuple[list[Outcome], str | None]:
        res = (sb or self.sb).run(code, self.p.entry_point, inputs, self.limits)
        self.batches += 1
        self.executions += len(res.outcomes)
        return res.outcomes, res.load_error

    def ask(self, coro: Coroutine[Any, Any, T]) -> T:
        with self.ctx.endpoint_slot(self.endpoint):
            return _loop().run_until_complete(coro)

    def setup_model(self) -> None:
        if self.s.sim:
            params = SimParams.for_method("utgen", attack=self.s.sim_attack, seed=self.s.seed)
            sim = SimModel(
                params,
                self._oracle,
                self._matcher,
                rationale_error=self.s.sim_rationale_error,
            )
            sim.register(
                SimProblem(
                    task_id=self.p.problem_id,
                    entry_point=self.p.entry_point,
                    gold=self.p.code,
                    given=self.p.code,
                    inputs=tuple(a for a, _ in self.known),
                    expected=tuple(v for _, v in self.known),
                )
            )
            inner: Model = sim
            self.endpoint = "sim"
        else:
            inner, self.endpoint = _real_model(self.s)
        self.model = Metered(inner, self.meter)
        self.model_name = inner.name

    async def _oracle(self, task_id: str, code: str) -> list[tuple[bool, Any]]:
        """The simulated model's view of ``code``: its verdict on every known input (run once
        per program)."""
        hit = self._verdicts.get(code)
        if hit is not None:
            return hit
        outcomes, load_error = self.run(code, [a for a, _ in self.known])
        if load_error is not None:
            found = [(False, None) for _ in self.known]
        else:
            found = [
                (judge(o, v, self.check, Semantics.DATASET, a).verdict is Verdict.PASS, o.value)
                for o, (a, v) in zip(outcomes, self.known, strict=True)
            ]
        self._verdicts[code] = found
        return found

    def _matcher(self, task_id: str, value: Any, gold: Any, args: tuple[Any, ...]) -> bool:
        try:
            return bool(outputs_match(value, gold, self.check, Semantics.DATASET, args))
        except Exception:
            return False

    def hint(self, purpose: str, **extra: Any) -> dict[str, Any]:
        return {"task_id": self.p.problem_id, "purpose": purpose, **extra}

    # -- the steps --

    def go(self) -> None:
        if not self.gold_check():
            return
        if self.s.uses_model:
            self.setup_model()
        self.corrupt()
        if not self.versions:
            self.counts["problem"]["no corrupted version"] += 1
            return
        for v in self.versions:
            if self.s.inputs == "dataset":
                self.find_failing_in_dataset(v)
            else:
                self.find_failing(v)
        failing = [v for v in self.versions if v.tests]
        if not failing:
            self.counts["problem"]["no failing input"] += 1
            return
        if self.job.holdout:
            self.val = self.val_row(failing[0])
            self.counts["problem"]["validation row written" if self.val else "no val tests"] += 1
            return
        for i, v in enumerate(self.versions):
            for t in v.tests:
                if self.s.rationale == "none":
                    self.without_rationale(i, v, t)
                else:
                    self.rationalize(i, v, t)
        self.counts["problem"]["with examples" if self.examples else "no accepted rationale"] += 1

    def gold_check(self) -> bool:
        pool = list(self.p.inputs[:MAX_KNOWN_INPUTS])
        outcomes, load_error = self.run(self.p.code, pool)
        if load_error is not None:
            self.counts["problem"]["gold code fails to run"] += 1
            self.gold_error = load_error
            return False
        again, _ = self.run(self.p.code, pool, second_sandbox(self.sb)) if pool else ([], None)
        for args, o, o2 in zip(pool, outcomes, again, strict=True):
            if o.status is not Status.OK or o2.status is not Status.OK:
                continue
            if self._hash_order(o.value):
                continue  # not a label (whether the two seeds agree on it is chance)
            if not same_answer(o.value, o2.value):
                self.counts["problem"]["gold outputs depend on string hashing"] += 1
                return False
            if literal_text(o.value) is not None:
                self.known.append((args, o.value))
        return True

    def _hash_order(self, value: Any) -> bool:
        """The gold builds sets and ``value`` is a sequence of texts: its order may be a set's
        (the second sandbox's seed can give the same order by chance)."""
        if self._uses_sets is None:
            self._uses_sets = uses_sets(self.p.code)
        return self._uses_sets and order_suspect(value)

    def corrupt(self) -> None:
        seen = {normalized_dump(self.p.code)}
        found: list[tuple[str, str, str]] = []
        c = self.counts["perturb"]
        if self.s.perturb == "ast":
            rng = random.Random(_seed(self.s.seed, self.p.fingerprint(), "ast"))
            for m in mutants(self.p.code, rng, self.s.corruptions):
                found.append((m.code, f"ast:{m.site.operator}", m.site.describe()))
            if len(found) < self.s.corruptions:
                c["ast: fewer mutation sites than asked"] += self.s.corruptions - len(found)
        else:
            assert self.model is not None
            gen = Perturber(self.model)
            replies = self.ask(
                gen.corrupt(
                    self.task,
                    self.p.code,
                    self.s.corruptions,
                    hint=self.hint("perturb", code=self.p.code),
                )
            )
            for r in replies:
                c["model replies"] += 1
                if r.code is None:
                    c[f"no code taken from the reply: {_coarse(r.reason or '')}"] += 1
                    continue
                by = f"model:{self.model_name}" + (f" ({SIMULATED})" if self.s.sim else "")
                found.append((strip_comments(r.code), by, r.reply[:400]))
        for code, by, note in found:
            dump = normalized_dump(code)
            if dump is None:
                c["does not parse"] += 1
                continue
            if dump in seen:
                c["same as the gold code or an earlier version"] += 1
                continue
            seen.add(dump)
            _, load_error = self.run(code, [])
            if load_error is not None:
                c["fails to load"] += 1
                continue
            c["kept"] += 1
            self.versions.append(_Version(code, by, note))

    def find_failing(self, v: _Version) -> None:
        assert self.model is not None
        c = self.counts["inputs"]
        gen = UTGenerator(self.model, "utgen")
        params = parsing.parameter_names(v.code, self.p.entry_point)
        seen: set[str] = set()
        for attempt in range(self.s.attempts):
            c["attempts"] += 1
            prop = self.ask(
                gen.propose(
                    self.task,
                    v.code,
                    sample_index=attempt,
                    hint=self.hint("ut", method="utgen", code=v.code),
                )
            )
            trace: dict[str, Any] = {"attempt": attempt, "reply": prop.reply}
            v.attempts.append(trace)
            call = prop.call
            if isinstance(call, ParsedProgram):  # never for this pipeline's literal tasks
                call = parsing.ParseFailure("a test program, not a literal-argument call")
            why = self._try_input(v, prop.reply, call, params, seen, attempt)
            trace["result"] = why or "kept"
            c[_coarse(why) if why else "kept"] += 1
            if len(v.tests) >= self.s.tests_per_code:
                break

    def _try_input(
        self,
        v: _Version,
        reply: str,
        call: parsing.ParsedCall | parsing.ParseFailure,
        params: list[str] | None,
        seen: set[str],
        attempt: int,
    ) -> str | None:
        if isinstance(call, parsing.ParseFailure):
            return f"no input in the reply: {call.reason}"
        written = call.source
        if call.pending is not None:
            self.batches += 1
            resolved = parsing.resolve_pending(self.sb, call)
            if isinstance(resolved, parsing.ParseFailure):
                return f"input not evaluable: {resolved.reason}"
            call = resolved
        bound = parsing.bind_arguments(call.args, call.kwargs, self.p.code, self.p.entry_point)
        if isinstance(bound, parsing.ParseFailure):
            return f"input not evaluable: {bound.reason}"
        args = tuple(bound)
        source = _call_source(self.p.entry_point, args)
        if source is None:
            return "input not evaluable: an argument is not a literal"
        if source in seen:
            return "input already found"
        seen.add(source)
        gold, load_error = self.run(self.p.code, [args, args])
        if load_error is not None or gold[0].status is not Status.OK:
            what = load_error or gold[0].error_type or gold[0].status.value
            return f"input invalid: the gold code fails on it ({what})"
        if gold[1].status is not Status.OK or not same_answer(gold[1].value, gold[0].value):
            return "gold output not deterministic"
        lit = literal_text(gold[0].value)
        if lit is None:
            return "gold output is not a literal"
        if self._hash_order(gold[0].value):
            return "gold output may depend on string hashing"
        (other,), _ = self.run(self.p.code, [args], second_sandbox(self.sb))
        if other.status is not Status.OK or not same_answer(other.value, gold[0].value):
            return "gold output depends on string hashing"
        (bad,), _ = self.run(v.code, [args])
        verdict = judge(bad, gold[0].value, self.check, Semantics.DATASET, args)
        if verdict.verdict is Verdict.PASS:
            return "input does not attack"
        detail = _what_it_did(bad)
        v.tests.append(_Test(attempt, reply, args, source, gold[0].value, lit, detail, written))
        return None

    def find_failing_in_dataset(self, v: _Version) -> None:
        """Stage II without a model: the source's known inputs (those with a gold output that
        is a label, :meth:`gold_check`) run on the corrupted code in one batch; the ones where
        it differs from the gold code fail it. The shortest calls are kept (a small failing
        input is the test a person would write), ties in the source's order."""
        c = self.counts["inputs"]
        if not self.known:
            c["no known input with a label"] += 1
            return
        outcomes, load_error = self.run(v.code, [a for a, _ in self.known])
        if load_error is not None:
            c["the corrupted code fails to load"] += 1
            return
        failing: list[tuple[int, int, str, Any, Outcome]] = []
        for n, ((args, gold), o) in enumerate(zip(self.known, outcomes, strict=True)):
            c["dataset inputs tried"] += 1
            source = _call_source(self.p.entry_point, args)
            if source is None or literal_text(gold) is None:
                c["input or output is not a literal"] += 1
                continue
            if judge(o, gold, self.check, Semantics.DATASET, args).verdict is Verdict.PASS:
                c["input does not attack"] += 1
                continue
            failing.append((len(source), n, source, gold, o))
        failing.sort(key=lambda f: (f[0], f[1]))
        for _, n, source, gold, o in failing[: self.s.tests_per_code]:
            c["kept"] += 1
            args = self.known[n][0]
            lit = literal_text(gold)
            assert lit is not None
            v.tests.append(_Test(n, "", args, source, gold, lit, _what_it_did(o)))
            v.attempts.append({"attempt": n, "reply": None, "input": source, "result": "kept"})
        c["failing, not kept (enough per version)"] += max(0, len(failing) - self.s.tests_per_code)

    def without_rationale(self, i: int, v: _Version, t: _Test) -> None:
        """Stage III left out (the paper's variant without rationales): the target is the
        input and the gold output, checked like any other."""
        c = self.counts["rationales"]
        params = parsing.parameter_names(v.code, self.p.entry_point)
        target = build_target(t.reply, t.call, "", t.gold_literal, t.model_call)
        why = verify_target(target, self.p.entry_point, params, t.args, t.gold_literal)
        if why is None:
            c["none asked (left out)"] += 1
            self.examples.append(self.example(i, v, t, target, ""))
        else:
            c[_coarse(why)] += 1

    def rationalize(self, i: int, v: _Version, t: _Test) -> None:
        assert self.model is not None
        c = self.counts["rationales"]
        rat = Rationalizer(self.model)
        unit_input = t.call[len(self.p.entry_point) + 1 : -1]
        params = parsing.parameter_names(v.code, self.p.entry_point)
        for k in range(self.s.rationale_tries):
            c["asked"] += 1
            done = self.ask(
                rat.explain(
                    self.task,
                    unit_input,
                    t.gold_literal,
                    sample_index=k,
                    hint=self.hint("rationale", args=t.args, args_key=t.call, output=t.gold),
                )
            )
            why = self._check_rationale(done.text, done.finish_reason, t)
            if why is None:
                target = build_target(t.reply, t.call, done.text, t.gold_literal, t.model_call)
                why = verify_target(target, self.p.entry_point, params, t.args, t.gold_literal)
                if why is None:
                    c["accepted"] += 1
                    self.examples.append(self.example(i, v, t, target, done.text))
                    return
            c[_coarse(why)] += 1

    def _check_rationale(self, text: str, finish: str, t: _Test) -> str | None:
        if finish == "length":
            return "rationale cut at the token limit"
        if not text.strip():
            return "empty rationale"
        out = parsing.parse_output(text, call=t.call)
        if isinstance(out, parsing.ParsedValue):
            if out.pending:
                self.batches += 1
                out = parsing.resolve_pending(self.sb, out)
            if isinstance(out, parsing.ParsedValue) and not same_answer(out.value, t.gold):
                return "rationale states another answer"
        if isinstance(out, parsing.ParseFailure):
            self.counts["rationales"]["no answer stated (kept)"] += 1
        return None

    def example(self, i: int, v: _Version, t: _Test, target: str, rationale: str) -> dict[str, Any]:
        prompt = prompts.ut_prompt(
            "utgen",
            signature=self.p.signature,
            description=self.p.description,
            code=v.code,
            entry_point=self.p.entry_point,
        )
        meta = {
            "key": self.job.key,
            "problem_id": self.p.problem_id,
            "source": self.p.source,
            "version": i,
            "perturbed_by": v.by,
            "attempt": t.attempt,
            "call": t.call,
            "gold_output": t.gold_literal,
            "corrupted_code_did": t.corrupted,
            "model": self.model_name if self.s.uses_model else None,
            "stages": self.s.stage_sources(),
            "simulated": self.s.simulated,
            "label": SIMULATED if self.s.simulated else None,
        }
        return {
            "messages": [
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": target},
            ],
            "meta": meta,
        }

    def val_row(self, v: _Version) -> dict[str, Any] | None:
        """The problem in the MBPP+Fix format: the corrupted code as ``code``, the known inputs
        and the failing ones as its tests, expected values from the gold code."""
        tests: list[tuple[tuple[Any, ...], Any]] = []
        seen: set[str] = set()
        for args, value in [*self.known, *((t.args, t.gold) for t in v.tests)]:
            key = canonical_repr(args)
            if key not in seen and _call_source("f", args) is not None:
                seen.add(key)
                tests.append((args, value))
        if not tests:
            return None
        inputs = "[" + ", ".join(_args_literal(a) for a, _ in tests) + "]"
        results = "[" + ", ".join(literal_text(r) or "None" for _, r in tests) + "]"
        script = (
            f"{_TEST_HEAD}\ninputs = {inputs}\nresults = {results}\n"
            "for i, (inp, exp) in enumerate(zip(inputs, results)):\n"
            f"    assertion({self.p.entry_point}(*inp), exp, {self.p.atol!r})\n"
        )
        return {
            "task_id": self.job.index + 1,
            "problem_id": self.p.problem_id,
            "prompt": self.p.description,
            "source_file": self.p.source,
            "test_imports": [],
            "test_list": [f"assert {t.call} == {t.gold_literal}" for t in v.tests],
            "test": script,
            "signature": self.p.signature,
            "entry_point": self.p.entry_point,
            "canonical_solution": self.p.code,
            "code": v.code,
            "perturbed_by": v.by,
        }

    def record(self, seconds: float) -> dict[str, Any]:
        return {
            "key": self.job.key,
            "index": self.job.index,
            "problem_id": self.p.problem_id,
            "source": self.p.source,
            "holdout": self.job.holdout,
            "model": self.s.model,
            "perturb": self.s.perturb,
            "simulated": self.s.simulated,
            "label": SIMULATED if self.s.simulated else None,
            "error_kind": self.error_kind,
            "error": self.error,
            "fatal": self.fatal,
            "gold_error": self.gold_error,
            "counts": {k: dict(v) for k, v in self.counts.items()},
            "versions": [
                {
                    "code": v.code,
                    "by": v.by,
                    "note": v.note,
                    "failing": [
                        {"call": t.call, "gold_output": t.gold_literal, "corrupted": t.corrupted}
                        for t in v.tests
                    ],
                    "attempts": v.attempts,
                }
                for v in self.versions
            ],
            "examples": self.examples,
            "val": self.val,
            "usage": self.meter.to_json(),
            "executions": self.executions,
            "batches": self.batches,
            "seconds": round(seconds, 3),
        }


_TEST_HEAD = """import numpy as np
from math import inf

def is_floats(x) -> bool:
    # check if it is float; List[float]; Tuple[float]
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False


def assertion(out, exp, atol):
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if out != exp and atol != 0:
        assert np.allclose(out, exp, rtol=1e-07, atol=atol)
    else:
        assert out == exp, f"out: {out}, exp: {exp}"

"""


def _what_it_did(o: Outcome) -> str:
    """What a program did on an input, the same text in every run: no measured times, sets in
    sorted order."""
    if o.status is Status.OK:
        text = canonical_repr(o.value)
        return "returned " + (text if len(text) <= 300 else text[:300] + "...")
    if o.status is Status.ERROR:
        return f"raised {o.error_type}"
    return o.status.value


def _args_literal(args: tuple[Any, ...]) -> str:
    return "[" + ", ".join(literal_text(a) or "None" for a in args) + "]"


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


_COARSE = re.compile(r"^([^:(]*?)(?:[:(].*)?$", re.S)


def _coarse(reason: str) -> str:
    """A reason without its details, for counting (``input invalid: ... (TypeError)`` ->
    ``input invalid``)."""
    m = _COARSE.match(reason.strip())
    return (m.group(1) if m else reason).strip() or "unknown"


def process_problem(job: Job, ctx: WorkerContext) -> dict[str, Any]:
    """Stages I-III for one problem (the module docstring); the problem's record. A model
    error (a timeout, a refused connection, a spent script) ends the problem with
    ``error_kind`` ``model``: a rerun tries it again."""
    t0 = time.perf_counter()
    w = _Work(job, ctx)
    try:
        w.go()
    except ModelError as e:
        w.error_kind = "model"
        w.error = f"{type(e).__name__}: {e}"
        w.fatal = isinstance(e, FATAL_ERRORS)
    return w.record(time.perf_counter() - t0)
