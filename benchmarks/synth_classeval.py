"""``utdebug bench synth --split classeval``: model-free input synthesis for a method of a class.

A ClassEval+Fix problem is one corrupted method of a class, tested by unittest methods. The
unit synthesised for is one *call site* of the method in a test:

- the **seeds** are the method's calls in the tests of its own ``TestCase`` (``setUp`` first;
  the ``self.x`` it made are plain names): the statements before the first call of the method
  are the *setup*, kept as they are, except that the literal arguments of the constructor that
  built the receiver (``obj = Cls(3, "a")``, or ``Cls(3).m(...)``) are synthesised too; the
  call's literal arguments are the rest of the input. An assertion before the call keeps its
  first operand as a statement (``self.assertTrue(obj.add(1))`` still adds);
- the literal arguments of the receiver's own calls in the setup (``obj.add("a", 3)``) and
  the literal values assigned to its attributes (``obj.limit = 3``) and to names
  (``request = {"path": "/api"}``, then ``obj.filter(request)``) are synthesised as well: they
  are how a test puts the object in a state and builds the call's arguments;
- the test code's own imports (``from tempfile import gettempdir``; ``unittest`` aside) run
  before the setup, as they do before ClassEval's tests;
- sites with the same setup and call, literal arguments aside, form one **group**: one
  :class:`~utdebug.sandbox.config.StagedTest` whose setup and call read the input's values
  from ``_utd_a`` (``obj = Cls(_utd_a[0]); obj.m(_utd_a[1])``), synthesised from the group's
  seeds with :func:`utdebug.synth.pipeline.synthesize_valid`;
- each input runs in a fresh working folder (files a setup writes do not reach the next input);
- the **outcome** compared is the call's value together with the receiver's state after it
  (its instance attributes that are plain data: a method that only changes the object is
  exposed by its state), so a mutator is compared as ClassEval's tests compare it;
- the gold class runs each group twice (the second time in reverse order) as the references,
  the corrupted class as the program under test, the gold class again for false alarms;
- *in the envelope*: the constructor's and the method's literal arguments of every call of the
  method in the class's kept tests (every ``TestCase``; ClassEval has no separate private set,
  so this envelope holds the seeds') bound what counts as exposure.

A test whose setup still needs the ``TestCase`` (``self.assertRaises`` as a context manager,
``self.fixture()`` ...) or that never calls the method gives no site; a problem without sites
is recorded as not synthesisable, with the reasons. Nothing here runs the class in this
process: the parent only parses the tests with :mod:`ast`.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from utdebug.benchmarks.classeval_debug import method_call_in, unittest_methods
from utdebug.data.datasets import ClassFixProblem
from utdebug.expected_values import expected_value
from utdebug.literals import LiteralError
from utdebug.sandbox.config import StagedTest
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.values import describe
from utdebug.synth import Envelope, Reference, exposing_inputs, reduce_suite, validate
from utdebug.synth.oracle import PROGRAM_LIMITS, REFERENCE_LIMITS, Validation
from utdebug.synth.pipeline import synthesize_valid
from utdebug.synth.receivers import unself
from utdebug.synth.values import Unencodable, check_encodable

__all__ = [
    "ARGS",
    "MAX_GROUPS",
    "Group",
    "Site",
    "expose_class_problem",
    "groups_of",
    "sites_of",
]

ARGS = "_utd_a"
"""The name each input's arguments go under in a group's test."""
MAX_GROUPS = 8
"""Groups synthesised a problem at most (the ones with the most seeds; the rest are noted)."""

_STATE = """def plain(v, depth=0):
    if depth > 30:
        return False
    t = type(v)
    if v is None or t is bool or t is int or t is float or t is str or t is bytes:
        return True
    if t is list or t is tuple or t is set or t is frozenset:
        return all(plain(x, depth + 1) for x in v)
    if t is dict:
        return all(plain(k, depth + 1) and plain(x, depth + 1) for k, x in v.items())
    return False


def state(o):
    try:
        items = vars(o).items()
    except TypeError:
        return None
    return {k: v for k, v in sorted(items) if plain(v)}
"""

_HELPERS = f"""_utd_defs = {{}}
exec({_STATE!r}, _utd_defs)
_utd_state = _utd_defs["state"]
import gc as _utd_gc
import os as _utd_os
import tempfile as _utd_tempfile

if _utd_os.path.isdir("/proc/self/fd") and len(_utd_os.listdir("/proc/self/fd")) > 24:
    _utd_gc.collect()
_utd_os.chdir(_utd_tempfile.mkdtemp())
"""
"""Run before each group's setup: ``_utd_state`` (the receiver's instance attributes that are
plain data, what the sandbox can send back and compare), and a fresh working folder for each
input (in the child's private ``/tmp``), so that a file or an sqlite database one input wrote
is not what the next one reads: an outcome does not depend on which inputs ran before it.
The helpers live in a namespace of their own: a function defined in the test's namespace would
hold it (and the objects of every input, their open files and connections) in a cycle. Objects
an earlier input left in cycles (sqlite connections) are collected when more than 24 files are
open, so that no input fails for want of a file descriptor (the child has 64)."""


@dataclass(frozen=True, slots=True)
class Site:
    """One call of the method in one test, its literal arguments taken out."""

    test: str
    """``TestCase.test_method``."""
    setup: str
    """The statements before the call, the constructor's literal arguments as ``_utd_a[k]``."""
    call: str
    """The outcome's expression: the call (its literal arguments as ``_utd_a[k]``), with the
    receiver's state when the receiver is a name."""
    args: tuple[Any, ...]
    """The literal values, in ``_utd_a`` order: the constructor's, then the call's."""
    labels: tuple[str, ...]
    """What each value is: ``init:0``, ``init:name`` (a keyword), ``call:0`` ..."""
    imports: str = ""
    """The test code's own imports (``unittest`` aside): what its setup may use."""


@dataclass
class Group:
    """Sites that differ only in their literal arguments: one test with setup."""

    setup: str
    call: str
    labels: tuple[str, ...]
    seeds: list[tuple[Any, ...]] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    imports: str = ""

    def staged(self) -> StagedTest:
        setup = "\n".join(x for x in (_HELPERS, self.imports, self.setup) if x)
        return StagedTest(setup=setup, call=self.call, bound=100, args=ARGS)

    def text(self, args: Sequence[Any], width: int = 300) -> str:
        """The setup and call with ``args`` written in (for records)."""

        def put(m: re.Match[str]) -> str:
            k = int(m.group(1))
            return describe(args[k], 120) if k < len(args) else m.group(0)

        body = "; ".join(line for line in self.setup.splitlines() if line.strip())
        call = _ARG_RE.sub(put, self.call)
        return describe_text(_ARG_RE.sub(put, body) + ("; " if body else "") + call, width)


_ARG_RE = re.compile(re.escape(ARGS) + r"\[(\d+)\]")


def describe_text(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


# --- reading the sites -------------------------------------------------------------------------


def _uses_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node))


def _literal(node: ast.expr) -> tuple[bool, Any]:
    if isinstance(node, ast.Starred):
        return False, None
    try:
        value = expected_value(ast.unparse(node))
    except (LiteralError, RecursionError, ValueError, SyntaxError):
        return False, None
    # only what the synthesiser can vary and the sandbox can send (``math.pi`` stays code)
    try:
        check_encodable((value,))
    except Unencodable:
        return False, None
    return True, value


class _Params:
    """Takes the literal arguments of calls out as ``_utd_a[k]``, in order."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.labels: list[str] = []

    def take(self, call: ast.Call, kind: str) -> None:
        for i, arg in enumerate(call.args):
            ok, value = _literal(arg)
            if ok:
                call.args[i] = self._slot(value, f"{kind}:{i}")
        for kw in call.keywords:
            if kw.arg is None:
                continue
            ok, value = _literal(kw.value)
            if ok:
                kw.value = self._slot(value, f"{kind}:{kw.arg}")

    def _slot(self, value: Any, label: str) -> ast.expr:
        k = len(self.values)
        self.values.append(value)
        self.labels.append(label)
        return ast.Subscript(ast.Name(ARGS, ast.Load()), ast.Constant(k), ast.Load())


def _is_class(node: ast.expr, class_name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == class_name) or (
        isinstance(node, ast.Attribute) and node.attr == class_name
    )


def _setup_statement(stmt: ast.stmt) -> ast.stmt | str | None:
    """A statement before the call as the setup holds it: an assertion keeps its first operand
    (its side effects); ``None``: dropped; a string: why the site cannot be used."""
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute)
        and isinstance(stmt.value.func.value, ast.Name)
        and stmt.value.func.value.id == "self"
    ):
        args = stmt.value.args
        if not stmt.value.func.attr.startswith("assert"):
            return f"the setup calls self.{stmt.value.func.attr}"
        if (
            args
            and not _uses_self(args[0])
            and any(isinstance(n, ast.Call) for n in ast.walk(args[0]))
        ):
            return ast.Expr(args[0])
        return None
    if _uses_self(stmt):
        return "the setup needs the TestCase (self)"
    return stmt


def _take_setup(stmt: ast.stmt, receiver: str, params: _Params) -> None:
    """The literal arguments of the receiver's own calls in a setup statement
    (``obj.add("a", 3)``, ``x = obj.add(1)``), the literal values assigned to its attributes
    (``obj.limit = 3``) and to names (``request = {"path": "/api"}``)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == receiver
        ):
            ok, value = _literal(stmt.value)
            if ok:
                stmt.value = params._slot(value, f"attr:{target.attr}")
                return
        if isinstance(target, ast.Name) and target.id != receiver:
            ok, value = _literal(stmt.value)
            if ok:
                stmt.value = params._slot(value, f"var:{target.id}")
                return
    if isinstance(stmt, ast.Expr | ast.Assign):
        value = stmt.value
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == receiver
        ):
            params.take(value, f"setup:{value.func.attr}")


def _site(body: list[ast.stmt], test: str, class_name: str, method: str) -> Site | str:
    for i, stmt in enumerate(body):
        call = method_call_in(stmt, method)
        if call is None:
            continue
        setup: list[ast.stmt] = []
        for s in body[:i]:
            kept = _setup_statement(s)
            if isinstance(kept, str):
                return kept
            if kept is not None:
                setup.append(kept)
        if _uses_self(call):
            return "the call needs the TestCase (self)"
        assert isinstance(call.func, ast.Attribute)
        receiver = call.func.value
        params = _Params()
        # the constructor that built the receiver: in the call (Cls(1).m()) or assigned to it
        ctor: ast.Call | None = None
        if isinstance(receiver, ast.Call) and _is_class(receiver.func, class_name):
            ctor = receiver
        elif isinstance(receiver, ast.Name):
            for s in setup:
                if (
                    isinstance(s, ast.Assign)
                    and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Name)
                    and s.targets[0].id == receiver.id
                    and isinstance(s.value, ast.Call)
                    and _is_class(s.value.func, class_name)
                ):
                    ctor = s.value
                    break
        if ctor is not None:
            params.take(ctor, "init")
        if isinstance(receiver, ast.Name):
            for s in setup:
                _take_setup(s, receiver.id, params)
        params.take(call, "call")
        text = ast.unparse(call)
        stateful = isinstance(receiver, ast.Name) and receiver.id != class_name
        outcome = f"({text}, _utd_state({ast.unparse(receiver)}))" if stateful else text
        return Site(
            test,
            "\n".join(ast.unparse(s) for s in setup),
            outcome,
            tuple(params.values),
            tuple(params.labels),
        )
    return f"does not call {method}"


def sites_of(
    problem: ClassFixProblem, tests: Sequence[tuple[str, str]]
) -> tuple[list[Site], dict[str, int]]:
    """The sites of ``problem``'s method in ``tests`` (``(TestCase, method)``), and how many
    tests gave none, by reason. Pure :mod:`ast`."""
    method = problem.target.method
    class_name = problem.target.class_name
    try:
        tree = ast.parse(problem.test_code)
    except (SyntaxError, ValueError, RecursionError):
        return [], {"the test code does not parse": len(tests)}
    wanted = set(tests)
    out: list[Site] = []
    skipped: dict[str, int] = {}
    imports = "\n".join(
        ast.unparse(n)
        for n in tree.body
        if (isinstance(n, ast.Import) and all(a.name != "unittest" for a in n.names))
        or (isinstance(n, ast.ImportFrom) and n.module != "unittest")
    )
    for cls, fn, stmts in unittest_methods(tree, wanted):
        body = unself(stmts)
        found = _site(body, f"{cls.name}.{fn.name}", class_name, method)
        if isinstance(found, str):
            skipped[found] = skipped.get(found, 0) + 1
        else:
            out.append(dataclasses.replace(found, imports=imports))
    return out, skipped


def groups_of(sites: Sequence[Site]) -> list[Group]:
    """Sites grouped by their setup and call (literal arguments aside), the groups with the
    most seeds first; each seed once."""
    groups: dict[tuple[str, str], Group] = {}
    for s in sites:
        g = groups.setdefault(
            (s.setup, s.call), Group(s.setup, s.call, s.labels, imports=s.imports)
        )
        if s.args not in g.seeds:
            g.seeds.append(s.args)
        g.tests.append(s.test)
    return sorted(groups.values(), key=lambda g: -len(g.seeds))


def _private_envelopes(
    problem: ClassFixProblem,
) -> dict[tuple[str, ...], Envelope]:
    """Per argument layout: the envelope of the literal arguments of every call of the method
    in the class's kept tests."""
    sites, _ = sites_of(problem, problem.tests)
    by_layout: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for s in sites:
        by_layout.setdefault(s.labels, []).append(s.args)
    return {k: Envelope.learn(v) for k, v in by_layout.items() if k}


# --- measuring ---------------------------------------------------------------------------------


@dataclass
class _GroupRun:
    group: Group
    validation: Validation
    sources: list[str]
    exposing: list[int]
    alarms: list[int]
    in_env: list[int]
    valid_in_env: int
    rounds: list[dict[str, Any]]
    notes: list[str]
    cpu_valid: float
    wall_valid: float
    cpu_children: float


def expose_class_problem(
    sb: Sandbox, p: ClassFixProblem, count: int, seed: int, per_problem: float, synth_share: float
) -> dict[str, Any]:
    """One record's body for a ClassEval+Fix problem (the keys of a function split's record,
    plus ``groups``, ``not_synthesisable`` and ``skipped_tests``)."""
    t0, p0 = time.monotonic(), time.process_time()
    own = [p.tests[i] for i in p.target_tests]
    sites, skipped = sites_of(p, own)
    groups = groups_of(sites)
    notes: list[str] = []
    if len(groups) > MAX_GROUPS:
        left_out = groups[MAX_GROUPS:]
        notes.append(
            f"{len(left_out)} more setups ({sum(len(g.seeds) for g in left_out)} seeds) not "
            f"synthesised: at most {MAX_GROUPS} a problem"
        )
        groups = groups[:MAX_GROUPS]
    private = _private_envelopes(p)
    runs: list[_GroupRun] = []
    n = max(1, len(groups))
    for g in groups:
        budget = per_problem * synth_share / n
        runs.append(
            _run_group(sb, p, g, max(10, count // n), seed, budget, per_problem / n, private)
        )
    reason = None
    if not groups:
        reason = (
            "no test of the method gives a call to synthesise for ("
            + "; ".join(f"{k}: {v}" for k, v in sorted(skipped.items()))
            + ")"
        )
    elif not any(r.validation.valid_indices for r in runs):
        reason = "the gold class accepted no input (every seed and synthesised input failed)"
    return _record(p, groups, runs, sites, skipped, notes, reason, t0, p0, per_problem)


def _run_group(
    sb: Sandbox,
    p: ClassFixProblem,
    g: Group,
    count: int,
    seed: int,
    budget: float,
    per_group: float,
    private: dict[tuple[str, ...], Envelope],
) -> _GroupRun:
    t0, p0 = time.monotonic(), time.process_time()
    test = g.staged()
    cls = p.target.class_name
    refs = [
        Reference(p.gold, cls, "gold", test=test),
        Reference(p.gold, cls, "gold (reversed)", reverse=True, test=test),
    ]
    notes: list[str] = []
    rounds: list[dict[str, Any]] = []
    if g.labels:
        vs = synthesize_valid(
            sb, refs, g.seeds, count=count, seed=seed, time_budget=budget, names=g.labels
        )
        val, sources = vs.validation, [c.source for c in vs.candidates]
        rounds = [dataclasses.asdict(r) for r in vs.rounds]
        notes += vs.notes
    else:  # nothing literal to vary: the test itself is the only input
        limits = dataclasses.replace(REFERENCE_LIMITS, batch=max(1.0, budget))
        val = validate(sb, refs, [()], limits=limits)
        sources = ["seed"]
        notes.append("no literal argument to synthesise: the seed alone")
    wall_valid = time.monotonic() - t0
    cpu_valid = time.process_time() - p0 + val.cpu_seconds
    stats: dict[str, float] = {}
    left = max(1.0, per_group - cpu_valid)
    run = _exposing(sb, val, test, cls, left, stats)
    exposing = run(p.code)
    alarms = run(p.gold)
    env = private.get(g.labels)

    def inside(args: tuple[Any, ...]) -> bool:
        return env.contains(args) if env is not None else not g.labels

    in_env = [i for i in exposing if inside(val.inputs[i])]
    valid_in_env = sum(1 for i in val.valid_indices if inside(val.inputs[i]))
    return _GroupRun(
        g,
        val,
        sources,
        exposing,
        alarms,
        in_env,
        valid_in_env,
        rounds,
        notes,
        cpu_valid,
        wall_valid,
        stats.get("cpu_seconds", 0.0),
    )


def _exposing(
    sb: Sandbox, val: Validation, test: StagedTest, cls: str, left: float, stats: dict[str, float]
) -> Callable[[str], list[int]]:
    """Runs a version of the class over the group's valid inputs: the exposing ones."""

    def run(code: str) -> list[int]:
        return exposing_inputs(
            sb,
            code,
            cls,
            val,
            limits=dataclasses.replace(PROGRAM_LIMITS, batch=max(1.0, left / 2)),
            stats=stats,
            test=test,
        )

    return run


def _record(
    p: ClassFixProblem,
    groups: list[Group],
    runs: list[_GroupRun],
    sites: list[Site],
    skipped: dict[str, int],
    notes: list[str],
    reason: str | None,
    t0: float,
    p0: float,
    per_problem: float,
) -> dict[str, Any]:
    inputs: list[tuple[Any, ...]] = []
    texts: list[str] = []
    in_env: list[int] = []
    sources: dict[str, int] = {}
    reasons: dict[str, int] = {}
    alarm_texts: list[str] = []
    for r in runs:
        base = len(inputs)
        inputs += r.validation.inputs
        texts += [r.group.text(a) for a in r.validation.inputs]
        in_env += [base + i for i in r.in_env]
        for i in r.in_env:
            sources[r.sources[i]] = sources.get(r.sources[i], 0) + 1
        for k, v in r.validation.reason_counts().items():
            reasons[k] = reasons.get(k, 0) + v
        alarm_texts += [r.group.text(r.validation.inputs[i], 200) for i in r.alarms]
        notes += [x for x in r.notes if x not in notes]
    suite = reduce_suite({"buggy": in_env}, inputs)
    cpu_valid = time.process_time() - p0 + sum(r.validation.cpu_seconds for r in runs)
    cpu_total = cpu_valid + sum(r.cpu_children for r in runs)
    return {
        "seeds": sum(len(g.seeds) for g in groups),
        "emitted": sum(len(r.validation.inputs) for r in runs),
        "valid": sum(len(r.validation.valid_indices) for r in runs),
        "valid_in_envelope": sum(r.valid_in_env for r in runs),
        "disagree": sum(len(r.validation.disagreements) for r in runs),
        "rounds": [x for r in runs for x in r.rounds],
        "exposed": any(r.exposing for r in runs),
        "exposed_in_envelope": bool(in_env),
        "exposing_sources": sources,
        "false_alarm": any(r.alarms for r in runs),
        "alarm_inputs": alarm_texts[:3],
        "suite": [texts[i] for i in suite],
        "wall_synth_valid": round(sum(r.wall_valid for r in runs), 4),
        "cpu_synth_valid": round(sum(r.cpu_valid for r in runs), 4),
        "wall_total": round(time.monotonic() - t0, 4),
        "cpu_total": round(cpu_total, 4),
        "over_budget": cpu_total > per_problem,
        "notes": notes,
        "invalid_reasons": reasons,
        "not_synthesisable": reason,
        "sites": len(sites),
        "skipped_tests": skipped,
        "groups": [
            {
                "setup": r.group.setup,
                "call": r.group.call,
                "labels": list(r.group.labels),
                "seeds": len(r.group.seeds),
                "tests": r.group.tests,
                "emitted": len(r.validation.inputs),
                "valid": len(r.validation.valid_indices),
                "exposed": len(r.exposing),
                "exposed_in_envelope": len(r.in_env),
            }
            for r in runs
        ],
    }
