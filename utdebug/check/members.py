"""``utdebug check``'s comparison of what a plain call cannot reach: a method, property, class
or static method of a module-level class, an async function, a generator, or a function whose
values are iterators (:mod:`utdebug.synth.members` builds the receivers and call sequences).

Both versions are loaded as :mod:`utdebug.check.loading` loads a function's (imported by their
dotted name at one path, bound per child) and run in the first of the run's two sandboxes, once
each: the second run that tells nondeterminism from a change is made for plain functions only
(docs/check.md, "Methods, properties, async functions and generators").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from utdebug.check.report import Comparison, Differential
from utdebug.check.versions import NotCompared, read_source
from utdebug.engine.targets import TargetKind

if TYPE_CHECKING:
    from utdebug.check.differ import DiffOutcome, DiffRun
    from utdebug.check.targets import Target
    from utdebug.synth.differential import Version

__all__ = ["MEMBER_SHAPES", "compare_member", "is_member"]

MEMBER_SHAPES = frozenset(
    {TargetKind.ASYNC_FUNCTION, TargetKind.GENERATOR, TargetKind.ASYNC_GENERATOR}
)
"""The module-level kinds of function compared as members are (their values are consumed or
awaited in the child)."""


def is_member(target: Target) -> bool:
    """Whether ``target`` is compared by :func:`compare_member` (a class's member, or a
    module-level function of :data:`MEMBER_SHAPES`)."""
    return "." in target.qualname or target.shape in MEMBER_SHAPES


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
    got = members.compare_member(
        run.runners.sandboxes[0],
        f"{path}::{qualname}",
        qualname,
        _version(run, target, base_text, base=True),
        _version(run, target, head_text, base=False),
        run.tests,
        copies.head,
        settings=run.settings,
        accepts=run.accepts,
    )
    res = got.result
    if not res.compared:
        return NotCompared(res.message, seeds=got.seeds)
    changes = tuple(change(f, qualname, got.call_text) for f in res.findings)
    accepted = tuple(change(f, qualname, got.call_text) for f in res.accepted)
    return DiffOutcome(
        Differential(
            True,
            res.message,
            copies.base_sha,
            res.inputs,
            got.seeds,
            changes,
            accepted,
            (*res.notes, _ONE_RUN),
            outcome=Comparison.CHANGED if changes else Comparison.UNCHANGED,
        ),
        tuple(res.findings),
    )


_ONE_RUN = (
    "each version ran once (members, async functions and generators are not run twice yet: "
    "a nondeterministic outcome can read as a change)"
)


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
