"""The model-free synthesiser: seeds -> envelope -> candidates from type-aware mutation,
Hypothesis strategies inferred from the seeds' values, and strategies from type hints.

Everything is generated in this process from data (seeds, hints read from source); nothing
runs the code under test. The result is the same for the same arguments and ``seed`` in every
process, as long as the time budget is not what stops it (``count`` is reached first).
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from utdebug.synth.envelope import Envelope
from utdebug.synth.mutate import Ingredients, Mutator
from utdebug.synth.strategies import HintError, args_strategy, draw, hint_strategy
from utdebug.synth.values import Unencodable, check_encodable, input_key

__all__ = ["Candidate", "SynthSettings", "Synthesis", "synthesize"]

SOURCES = ("seed", "mutation", "hypothesis", "hint")


@dataclass(frozen=True, slots=True)
class Candidate:
    args: tuple[Any, ...]
    source: str
    """``seed``, ``mutation``, ``hypothesis`` (inferred from the seeds' values), ``hint`` (from
    type hints) or the name of an extra source."""
    outer: bool = False
    """Outside the core widening of the seeds' envelope (inside its outer bounds)."""


@dataclass
class Synthesis:
    candidates: list[Candidate]
    envelope: Envelope
    """Learned from the seeds as they are."""
    bounds: Envelope
    """What was emitted within: the envelope's outer widening (or, with no seeds, nothing
    known). Most inputs are drawn from the core widening, ``core``; ``outer_share`` of them
    from these bounds."""
    core: Envelope | None = None
    notes: list[str] = field(default_factory=list)
    """What could not be done and why (no seeds, untyped seeds, a failing source ...)."""
    rejected: dict[str, int] = field(default_factory=dict)
    """Values generated but not emitted, by reason."""
    seconds: float = 0.0

    @property
    def inputs(self) -> list[tuple[Any, ...]]:
        return [c.args for c in self.candidates]

    def by_source(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.candidates:
            out[c.source] = out.get(c.source, 0) + 1
        return out


class _Emitter:
    def __init__(self, bounds: Envelope | None, count: int, core: Envelope | None = None) -> None:
        self.bounds = bounds
        self.core = core
        self.count = count
        self.out: list[Candidate] = []
        self.keys: set[str] = set()
        self.rejected: dict[str, int] = {}
        self.unencodable: dict[str, str] = {}
        self.accept: Envelope | None = None
        self.outer_count = 0
        self.outer_cap = count

    def full(self) -> bool:
        return len(self.out) >= self.count

    def reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1

    def offer(self, args: Any, source: str, *, bounded: bool = True) -> bool:
        if self.full():
            return False
        if not isinstance(args, tuple):
            if isinstance(args, list):
                args = tuple(args)
            else:
                self.reject(f"{source}: not an argument tuple")
                return False
        try:
            check_encodable(args)
        except Unencodable as exc:
            self.reject(f"{source}: not encodable")
            self.unencodable.setdefault(source, str(exc))
            return False
        if bounded and self.bounds is not None and not self.bounds.contains(args):
            self.reject(f"{source}: outside the bounds")
            return False
        if source != "seed" and self.accept is not None and not self.accept.contains(args):
            self.reject(f"{source}: outside what was accepted")
            return False
        try:
            key = input_key(args)
        except (RecursionError, ValueError):
            self.reject(f"{source}: not encodable")
            return False
        if key in self.keys:
            self.reject(f"{source}: duplicate")
            return False
        outer = self.core is not None and source != "seed" and not self.core.contains(args)
        if outer and self.outer_count >= self.outer_cap:
            self.reject(f"{source}: outer share used")
            return False
        self.outer_count += outer
        self.keys.add(key)
        self.out.append(Candidate(args, source, outer))
        return True


def _rng_seed(seed: int, salt: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(salt.encode())) & 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class SynthSettings:
    """How :func:`synthesize` draws, beyond how many and from what (defaults: one round)."""

    hypothesis_share: float = 0.5
    """The part of the generated inputs drawn from strategies inferred from the seeds' values;
    the rest comes from mutation."""
    outer_share: float = 0.2
    """The part of each that may leave the core widening of the envelope for its outer one
    (other signs, big magnitudes, empty values, more characters)."""
    mutation_steps: tuple[int, int] = (1, 5)
    within: Envelope | None = None
    """Bounds to emit within instead of the widenings of the seeds' envelope (for a second
    round: the envelope of the inputs the references accepted); no outer tier."""
    accept: Envelope | None = None
    """A further envelope every generated input must be inside (for a second round: the
    envelope of the inputs the references accepted), the distribution unchanged."""
    parents_extra: Sequence[Sequence[Any]] = ()
    """More inputs to mutate (not emitted themselves)."""
    exclude: Iterable[str] = ()
    """Keys (:func:`~utdebug.synth.values.input_key`) of inputs not to emit again."""
    constants: Sequence[Any] = ()
    """Literals of the code under test (numbers, text): values for mutation to use."""


@dataclass
class _Plan:
    """What one :func:`synthesize` call works from: the usable seeds and the bounds."""

    good: list[tuple[Any, ...]]
    envelope: Envelope
    bounds: Envelope
    core: Envelope | None
    hints: list[Any] | None
    notes: list[str]

    @property
    def typed(self) -> bool:
        return bool(self.hints) and all(h is not None for h in self.hints or ())


def synthesize(
    seeds: Sequence[Sequence[Any]],
    *,
    count: int = 500,
    seed: int = 0,
    hints: Mapping[str, Any] | Sequence[Any] | None = None,
    names: Sequence[str] = (),
    time_budget: float = 5.0,
    extra_sources: Mapping[str, Callable[[], Iterable[Any]]] | None = None,
    settings: SynthSettings | None = None,
) -> Synthesis:
    """Up to ``count`` distinct candidate inputs (argument tuples), the seeds first.

    - ``seeds``: example inputs (tuples of positional arguments). Seeds that cannot be sent to
      the sandbox are dropped with a note; the rest define the envelope, whose widened bounds
      every generated input stays within.
    - ``hints``: type hints of the parameters (a mapping by name, in ``names`` order, or a
      sequence by position). With seeds, ``st.from_type`` values inside the bounds are a small
      extra source; without seeds they are the only source, unbounded (noted).
    - ``extra_sources``: name -> a callable returning an iterable of candidate argument tuples
      (for example a generator program's values); each value is checked like the others, an
      exception or a value that cannot be encoded is noted, never raised.
    - ``time_budget``: seconds of this process's CPU time for generation (CPU time does not
      move with the machine's load, so neither does what comes out).
    - ``settings``: shares, mutation steps and a second round's bounds (:class:`SynthSettings`).
    """
    t0 = time.monotonic()
    cfg = settings or SynthSettings()
    deadline = time.process_time() + max(0.0, time_budget)
    plan = _plan(seeds, hints, names, cfg.within)
    notes = plan.notes
    em = _Emitter(plan.bounds if plan.good else None, count, plan.core)
    em.accept = cfg.accept
    em.outer_cap = max(1, int(count * cfg.outer_share) + 1)
    em.keys.update(cfg.exclude)
    for args in plan.good:
        em.offer(args, "seed", bounded=False)
    n_left = max(0, count - len(em.out))
    n_hyp = int(n_left * cfg.hypothesis_share) if plan.good else 0
    if plan.core is not None and n_hyp:
        _from_values(em, plan, n_hyp, cfg.outer_share, seed, deadline)
    if plan.typed:
        _from_hints(em, plan, n_left, seed, deadline)
    elif plan.hints and any(h is not None for h in plan.hints):
        notes.append("type hints cover only some parameters: not used")
    for name, source in (extra_sources or {}).items():
        _consume(em, name, source, deadline, notes)
    if plan.core is not None:
        _mutate(em, plan, cfg, random.Random(_rng_seed(seed, "mutation")), deadline)
    if em.unencodable:
        for name, why in sorted(em.unencodable.items()):
            notes.append(f"{name}: values that cannot be sent to the sandbox were dropped ({why})")
    return Synthesis(
        _interleave(em.out),
        plan.envelope,
        plan.bounds,
        plan.core,
        notes,
        em.rejected,
        time.monotonic() - t0,
    )


def _plan(
    seeds: Sequence[Sequence[Any]],
    hints: Mapping[str, Any] | Sequence[Any] | None,
    names: Sequence[str],
    within: Envelope | None,
) -> _Plan:
    """The seeds that can be sent, their envelope and the bounds to emit within (notes for
    what is missing)."""
    notes: list[str] = []
    good: list[tuple[Any, ...]] = []
    for i, s in enumerate(seeds):
        args = tuple(s)
        try:
            check_encodable(args)
        except Unencodable as exc:
            notes.append(f"seed {i + 1} dropped: {exc}")
            continue
        good.append(args)
    envelope = Envelope.learn(good, names)
    plan = _Plan(
        good, envelope, Envelope(names=tuple(names)), None, _hint_list(hints, names), notes
    )
    if not good:
        if plan.typed:
            notes.append("no usable seeds: inputs come from the type hints only, with no envelope")
        else:
            notes.append(
                "no usable seeds and no complete type hints: the arguments cannot be typed, "
                "nothing was synthesised beyond the extra sources"
            )
    elif within is not None:
        plan.core = plan.bounds = within
    else:
        plan.core = envelope.widened()
        plan.bounds = envelope.widened(outer=True)
        if len(envelope.arities) > 1:
            notes.append(f"seeds disagree on the number of arguments ({sorted(envelope.arities)})")
        untyped = [i for i, node in enumerate(envelope.params) if not node.kinds]
        if untyped:
            notes.append(f"arguments {untyped} have no seed values")
    return plan


def _from_values(
    em: _Emitter, plan: _Plan, n_hyp: int, outer_share: float, seed: int, deadline: float
) -> None:
    """Hypothesis, inferred from the seeds' values (within the widened bounds)."""
    assert plan.core is not None
    n_outer = int(n_hyp * outer_share)
    for env, n, salt in (
        (plan.core, n_hyp - n_outer, "hypothesis"),
        (plan.bounds, n_outer, "hypothesis-outer"),
    ):
        try:
            values = draw(args_strategy(env), n, _rng_seed(seed, salt), deadline=deadline, batch=10)
        except Exception as exc:  # a strategy Hypothesis refuses: noted, the rest goes on
            plan.notes.append(f"value-inferred strategies failed: {type(exc).__name__}: {exc}")
            values = []
        for v in values:
            em.offer(v, "hypothesis")


def _from_hints(em: _Emitter, plan: _Plan, n_left: int, seed: int, deadline: float) -> None:
    """Type hints: ``from_type`` strategies (bounded when there are seeds)."""
    good = plan.good
    try:
        strategy = st.tuples(*(hint_strategy(h) for h in plan.hints or ()))
        n_hint = max(8, n_left // 8) if good else n_left
        for v in draw(strategy, n_hint, _rng_seed(seed, "hint"), deadline=deadline):
            em.offer(v, "hint", bounded=bool(good))
    except HintError as exc:
        plan.notes.append(f"type hints not used: {exc}")
    except Exception as exc:
        plan.notes.append(f"type-hint strategies failed: {type(exc).__name__}: {exc}")


def _mutate(
    em: _Emitter, plan: _Plan, cfg: SynthSettings, rng: random.Random, deadline: float
) -> None:
    """Mutation (EvalPlus): parents from the pool of seeds and emitted inputs, 1-5 steps."""
    assert plan.core is not None
    pool = Ingredients()
    pool.add_constants(cfg.constants)
    for some in [*(c.args for c in em.out), *cfg.parents_extra]:
        for value in some:
            pool.add(value)
    mutator = Mutator(plan.core, rng, pool)
    outer = Mutator(plan.bounds, rng, pool)
    parents = [c.args for c in em.out if c.source in ("seed", "mutation")] or list(plan.good)
    parents += [tuple(a) for a in cfg.parents_extra]
    attempts = 0
    cap = 30 * em.count + 100
    while not em.full() and attempts < cap:
        attempts += 1
        if attempts % 64 == 0 and time.process_time() > deadline:
            plan.notes.append("mutation stopped at the time budget")
            break
        parent = rng.choice(parents)
        child = parent
        m = outer if rng.random() < cfg.outer_share else mutator
        try:
            for _ in range(rng.randint(*cfg.mutation_steps)):
                child = m.mutate_args(child)
        except Exception as exc:  # an operator that fails on a value: that try is lost
            em.reject(f"mutation: {type(exc).__name__}")
            continue
        if em.offer(child, "mutation"):
            parents.append(child)
            for value in child:
                pool.add(value)


def _interleave(cands: list[Candidate]) -> list[Candidate]:
    """Seeds first, then the core inputs, then the outer ones; within each, the sources taken
    in turn (each in its own order). Inputs that risk errors and time-outs come last, so a
    batch budget spent on them costs no core input."""
    out = [c for c in cands if c.source == "seed"]
    for outer in (False, True):
        groups: dict[str, list[Candidate]] = {}
        for c in cands:
            if c.source != "seed" and c.outer == outer:
                groups.setdefault(c.source, []).append(c)
        lists = [groups[k] for k in sorted(groups)]
        i = 0
        while any(i < len(g) for g in lists):
            out += [g[i] for g in lists if i < len(g)]
            i += 1
    return out


def _hint_list(
    hints: Mapping[str, Any] | Sequence[Any] | None, names: Sequence[str]
) -> list[Any] | None:
    if hints is None:
        return None
    if isinstance(hints, Mapping):
        if not names:
            return list(hints.values()) or None
        return [hints.get(n) for n in names] or None
    return list(hints) or None


def _consume(
    em: _Emitter,
    name: str,
    source: Callable[[], Iterable[Any]],
    deadline: float,
    notes: list[str],
) -> None:
    taken = 0
    try:
        for value in source():
            taken += 1
            em.offer(value, name, bounded=em.bounds is not None)
            if em.full() or taken >= 10 * em.count or time.process_time() > deadline:
                break
    except Exception as exc:  # a generator that raises: a clear line, never a crash
        notes.append(f"{name}: raised {type(exc).__name__}: {str(exc)[:200]} after {taken} values")
