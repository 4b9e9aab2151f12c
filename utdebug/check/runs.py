"""Run both versions of a function on the same inputs, each twice, in two sandboxes.

Each of the two sandboxes (:class:`Runners`) has its own zygote: its own hash seed, memory
layout, process ids; its children run at other moments. Run 1 runs the base then the checked
version in the first sandbox, run 2 the checked version then the base in the second, in the
reverse input order, so a version's two runs of an input differ in hash seed, pid, clock
and the inputs run before it, while the two versions of one run share a hash seed: an
outcome that depends on those differs between the runs of one version (nondeterministic,
:mod:`utdebug.check.comparison`), never only between the versions. Each child imports the
module afresh, so a value made at import is made again in each run. Many inputs run in one
child (a batch), as everywhere in the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from utdebug.check.loading import Copies, version_context
from utdebug.check.versions import NotCompared, Pair
from utdebug.sandbox.outcomes import Outcome, Status

if TYPE_CHECKING:
    from utdebug.sandbox import Limits, Sandbox, SandboxConfig
    from utdebug.synth.differential import DiffSettings
    from utdebug.synth.oracle import Reference

__all__ = ["RUNS", "Run", "Runners", "Runs", "rerun", "run_twice"]

RUNS = 2
"""Runs of each version on each input (one per sandbox)."""

LATER_RUNS_CPU = 15.0
"""CPU seconds the base's first run may have spent on the inputs the three later runs take:
the cheapest inputs first, the rest left out (a slow function costs about four times this
more, not four full batches)."""

SECOND_RUN_BATCH = 2 * LATER_RUNS_CPU
"""The CPU budget of each version's second run (its first has its limits' own): inputs not
reached when it is spent are cut short, left out of the comparison."""


@dataclass(frozen=True, slots=True)
class Run:
    """One version's outcomes on some of the inputs, in one sandbox."""

    outcomes: Mapping[int, Outcome]
    """Input index -> outcome."""
    load_error: str | None = None
    cpu_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Runs:
    """Both versions' runs on the same inputs (the run stage's value)."""

    inputs: tuple[tuple[Any, ...], ...]
    chosen: tuple[int, ...]
    """The inputs the base answered or raised a clean exception on: the ones compared."""
    base: tuple[Run, ...]
    head: tuple[Run, ...]
    left_out: int = 0
    """Inputs the base answered but the later runs left out (:data:`LATER_RUNS_CPU`)."""


class Runners:
    """The two sandboxes the versions run in (started on first use, closed with
    :meth:`close`), and how a version is put at its one path: bound there per child, or,
    when the sandbox has no mount namespace per child, a link switched between runs."""

    def __init__(self, config: SandboxConfig, copies: Copies, env_paths: Sequence[str]) -> None:
        from utdebug.sandbox import Sandbox

        copies.make_place()
        mounts = [str(copies.head), str(copies.place), *env_paths]
        if copies.base is not None:
            mounts.insert(1, str(copies.base))
        self.copies = copies
        self.env_paths = tuple(env_paths)
        self.sandboxes: tuple[Sandbox, ...] = tuple(
            Sandbox(replace(config, mounts=tuple(mounts))) for _ in range(RUNS)
        )
        self.binds: bool | None = None
        """Whether a child can bind a version at its path (known once started)."""

    def start(self) -> None:
        """Start both sandboxes; :class:`~utdebug.check.options.CheckError` when one cannot."""
        from utdebug.check.options import CheckError
        from utdebug.sandbox import Layer, SandboxError, SandboxUnavailable

        if self.binds is not None:
            return
        # one after the other, from this thread: a zygote dies with the thread that started
        # it (PR_SET_PDEATHSIG is a thread's), so never from a short-lived worker thread
        try:
            layers = [sb.start() for sb in self.sandboxes]
        except (SandboxUnavailable, SandboxError) as e:
            raise CheckError(f"sandbox: {e}") from None
        self.binds = all(Layer.SCRATCH in r.active() for r in layers)

    def run(
        self,
        which: int,
        pair: Pair,
        base: bool,
        inputs: Sequence[tuple[Any, ...]],
        chosen: Sequence[int],
        limits: Limits,
    ) -> Run:
        """One version (``base`` or the checked one) of ``pair`` on the inputs at ``chosen``,
        in sandbox ``which`` (its second run takes the inputs in reverse order)."""
        from utdebug.synth.oracle import run_chosen

        sandbox, program = self.program(which, pair, base)
        outcomes, load_error, _, cpu = run_chosen(sandbox, program, inputs, chosen, limits)
        return Run(outcomes, load_error, cpu)

    def program(self, which: int, pair: Pair, base: bool) -> tuple[Sandbox, Reference]:
        """Sandbox ``which`` and one version of ``pair`` put at its path there, ready to run."""
        from utdebug.synth.oracle import Reference

        self.start()
        side = pair.base if base else pair.head
        if not self.binds:
            self.copies.point_place(base)
        context = version_context(
            self.copies,
            pair.target.path,
            side.module,
            base=base,
            bind=bool(self.binds),
            env_paths=self.env_paths,
        )
        code = "" if context.imported else side.text
        name = "base" if base else "head"
        program = Reference(code, pair.target.qualname, name, which % 2 == 1, context)
        return self.sandboxes[which], program

    def close(self) -> None:
        for sb in self.sandboxes:
            sb.close()


def _answered(o: Outcome, errors: bool) -> bool:
    """The base answered (or, with ``errors``, raised a clean exception): worth comparing."""
    return o.status is Status.OK or (errors and o.status is Status.ERROR)


def run_twice(
    runners: Runners, pair: Pair, inputs: Sequence[tuple[Any, ...]], cfg: DiffSettings
) -> Runs | NotCompared:
    """Both versions on ``inputs``, each once in each sandbox (the base first runs them all;
    the rest only the ones it answered): see the module docstring."""
    everything = list(range(len(inputs)))
    base1 = runners.run(0, pair, True, inputs, everything, cfg.base_limits)
    if base1.load_error:
        return NotCompared(f"the base version does not load: {base1.load_error}")
    answered = [i for i in everything if _answered(base1.outcomes[i], cfg.errors)]
    if not answered:
        return NotCompared(
            f"the base version raised, timed out or crashed on every input ({len(inputs)})"
        )
    chosen = _affordable(answered, base1)
    head1 = runners.run(0, pair, False, inputs, chosen, cfg.head_limits)
    if head1.load_error:
        return NotCompared(f"the checked version does not load: {head1.load_error}", error=True)
    head2 = runners.run(1, pair, False, inputs, chosen, _second(cfg.head_limits))
    base2 = runners.run(1, pair, True, inputs, chosen, _second(cfg.base_limits))
    for version, run in (("base", base2), ("checked", head2)):
        if run.load_error:
            return NotCompared(
                f"the {version} version loaded in one run but not in the other: {run.load_error}",
                error=version == "checked",
            )
    left_out = len(answered) - len(chosen)
    return Runs(tuple(inputs), tuple(chosen), (base1, base2), (head1, head2), left_out)


def _second(limits: Limits) -> Limits:
    """A second run's limits: its batch budget at most :data:`SECOND_RUN_BATCH`."""
    batch = SECOND_RUN_BATCH if limits.batch is None else min(limits.batch, SECOND_RUN_BATCH)
    return replace(limits, batch=batch)


def _affordable(answered: list[int], base1: Run) -> list[int]:
    """The inputs the later runs take: all, unless the base's first run spent more than
    :data:`LATER_RUNS_CPU` on them; then the cheapest ones up to that (in input order)."""
    costs = {i: base1.outcomes[i].seconds for i in answered}
    if sum(costs.values()) <= LATER_RUNS_CPU:
        return answered
    kept: set[int] = set()
    spent = 0.0
    for i in sorted(answered, key=lambda i: (costs[i], i)):
        spent += costs[i]
        if spent > LATER_RUNS_CPU:
            break
        kept.add(i)
    return [i for i in answered if i in kept]


def rerun(
    runners: Runners, pair: Pair, runs: Runs, chosen: Sequence[int], cfg: DiffSettings
) -> Runs:
    """``runs`` with one more run of each version in each sandbox on the inputs at
    ``chosen`` (to confirm changes when some inputs were nondeterministic)."""
    extra_base: list[Run] = []
    extra_head: list[Run] = []
    for which in range(RUNS):
        base_limits, head_limits = _second(cfg.base_limits), _second(cfg.head_limits)
        extra_base.append(runners.run(which, pair, True, runs.inputs, chosen, base_limits))
        extra_head.append(runners.run(which, pair, False, runs.inputs, chosen, head_limits))
    ok_base = [r for r in extra_base if not r.load_error]
    ok_head = [r for r in extra_head if not r.load_error]
    return replace(runs, base=(*runs.base, *ok_base), head=(*runs.head, *ok_head))
