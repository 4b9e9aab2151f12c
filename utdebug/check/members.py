"""``utdebug check``'s comparison of what a plain call cannot reach: a method, property, class
or static method of a module-level class, an async function, a generator, or a function whose
values are iterators (:mod:`utdebug.synth.members` builds the receivers and call sequences).

Both versions are loaded as :mod:`utdebug.check.loading` loads a function's (imported by their
dotted name at one path, bound per child) and compared once in each of the run's two sandboxes:
a change is a finding only where both comparisons found it alike; one found in one run only,
or differently, is nondeterministic (docs/check.md, "Methods, properties, async functions and
generators").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from utdebug.check.report import Comparison, Differential, Unstable
from utdebug.check.versions import NotCompared, read_source
from utdebug.engine.target_kinds import KINDS, Comparing

if TYPE_CHECKING:
    from utdebug.check.differ import DiffOutcome, DiffRun
    from utdebug.check.targets import Target
    from utdebug.synth.differential import Finding, Version
    from utdebug.synth.members import MemberComparison

__all__ = ["compare_member", "is_member"]


def is_member(target: Target) -> bool:
    """Whether ``target`` is compared by :func:`compare_member` (a class's member, or a
    module-level function whose kind is compared so: :data:`~utdebug.engine.target_kinds.KINDS`,
    async functions and generators, their values awaited or consumed in the child)."""
    if "." in target.qualname:
        return True
    return target.shape is not None and KINDS[target.shape].comparing is Comparing.MEMBERS


def compare_member(run: DiffRun, target: Target) -> DiffOutcome | NotCompared:
    """``target`` at the checked revision against its base version, on receivers and call
    sequences (or awaited, or consumed)."""
    from utdebug.check.differ import DiffOutcome, change
    from utdebug.synth import members

    copies, path, qualname = run.copies, target.path, target.qualname
    head_text = read_source(copies.head / path)
    if head_text is None:
        return NotCompared(f"{path} cannot be read at the checked revision")
    if copies.base is None or copies.base_sha is None:
        return NotCompared("there is no base revision")
    base_text = read_source(copies.base / path)
    if base_text is None:
        return NotCompared(f"new file (no base version of {path})")
    run.runners.start()
    base = _version(run, target, base_text, base=True)
    head = _version(run, target, head_text, base=False)
    runs = [
        members.compare_member(
            sandbox,
            f"{path}::{qualname}",
            qualname,
            base,
            head,
            run.tests,
            copies.head,
            settings=run.settings,
            accepts=run.accepts,
        )
        for sandbox in run.runners.sandboxes
    ]
    got, res = runs[0], runs[0].result
    if not res.compared:
        return NotCompared(res.message, seeds=got.seeds)
    stable, unstable = _stable(runs, qualname)
    notes = list(res.notes)
    if unstable and len(unstable) >= len(stable):  # nondeterministic as a whole
        if stable:
            notes.append(
                f"{len(stable)} input(s) gave a changed outcome alike in both runs, not "
                "reported: the function is nondeterministic"
            )
        stable = ()
    changes = tuple(change(f, qualname, got.call_text) for f in stable)
    accepted = tuple(change(f, qualname, got.call_text) for f in res.accepted)
    if unstable and not stable:
        outcome = Comparison.NONDETERMINISTIC
        message = (
            f"nondeterministic: {len(unstable)} of {res.inputs} inputs changed in one run and "
            "not the same way in the other"
        )
    else:
        outcome = Comparison.CHANGED if changes else Comparison.UNCHANGED
        message = f"{len(changes)} changed outcome(s) on {res.inputs} inputs" + (
            f" ({len(unstable)} nondeterministic)" if unstable else ""
        )
    return DiffOutcome(
        Differential(
            True,
            message,
            copies.base_sha,
            res.inputs,
            got.seeds,
            changes,
            accepted,
            tuple(notes),
            tuple(unstable),
            outcome,
        ),
        stable,
    )


def _stable(
    runs: Sequence[MemberComparison], qualname: str
) -> tuple[tuple[Finding, ...], list[Unstable]]:
    """The changed outcomes every run found alike (the same input, the same words on both
    sides), and the inputs that changed in some run but not alike in all (nondeterministic)."""
    from utdebug.synth.values import canonical, input_key

    def key(f: Finding) -> tuple[Any, str, str]:
        return (input_key(f.args), f.before, f.after)

    later = [{key(f) for f in r.result.findings} for r in runs[1:]]
    first = runs[0]
    stable = tuple(f for f in first.result.findings if all(key(f) in seen for seen in later))
    kept = {input_key(f.args) for f in stable}
    unstable: dict[Any, Unstable] = {}
    for n, r in enumerate(runs):
        for f in r.result.findings:
            k = input_key(f.args)
            if k in kept or k in unstable:
                continue
            call = first.call_text(f.args) if first.call_text else qualname
            unstable[k] = Unstable(
                call,
                canonical(f.args),
                "base or head",
                f"run {n + 1}: was {f.before}, now {f.after}",
                "another run: not this change",
            )
    return stable, list(unstable.values())


def _version(run: DiffRun, target: Target, text: str, *, base: bool) -> Version:
    """One version of the target's module, loaded at the run's one path when a child can
    bind it there, else at its own copy (both run in one sandbox, one after the other)."""
    from utdebug.check.loading import import_name, version_context
    from utdebug.project import sandbox_context
    from utdebug.synth.differential import Version

    copies = run.copies
    copy = copies.root(base)
    if run.runners.binds:
        module = import_name(target.path, copy)
        context = version_context(
            copies, target.path, module, base=base, bind=True, env_paths=run.runners.env_paths
        )
    else:
        context = sandbox_context(
            copy / target.path, copy, program=False, env_paths=run.runners.env_paths
        )
    revision = (copies.base_sha or "") if base else copies.head_revision
    return Version(text, target.qualname, revision, context)
