"""A session's synthesised inputs: the queue the test sets take from, its snapshot, and the
inputs that tell candidate edits apart (``Settings.candidates > 1``).

The code in force and a round's distinct candidate edits run on the first inputs of the queue;
the inputs on which their outcomes differ move to the front, so the next test set votes on them
first. See docs/synth.md.
"""

from __future__ import annotations

import contextlib
from asyncio import gather
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from utdebug.engine.execution import Executor
from utdebug.engine.model import CandidateInput, valid_input_source
from utdebug.engine.voting import answer_key
from utdebug.expected_values import expected_value
from utdebug.literals import canonical_repr
from utdebug.sandbox.config import Limits
from utdebug.sandbox.outcomes import Outcome, Status


def checked_queue(inputs: Sequence[CandidateInput]) -> list[CandidateInput]:
    """``inputs`` as a session's queue; ``ValueError`` for a source that is not
    ``synth:<name>``."""
    for _, source in inputs:
        if not source.startswith("synth:") or not valid_input_source(source):
            raise ValueError(f"a candidate input's source must be synth:<name>, got {source!r}")
    return [(tuple(a), s) for a, s in inputs]


def queue_json(queue: Sequence[CandidateInput]) -> list[list[str]]:
    """The queue in a snapshot: each input's canonical text and its source."""
    return [[canonical_repr(a), s] for a, s in queue]


def queue_from_json(data: Any, code: str) -> list[CandidateInput]:
    """A snapshot's queue read back (values as expected values are, with ``code``'s classes;
    an input that does not read back is left out)."""
    queue: list[CandidateInput] = []
    for text, source in data or []:
        with contextlib.suppress(ValueError, TypeError):
            args = expected_value(str(text), module_source=code)
            if isinstance(args, tuple) and valid_input_source(str(source)):
                queue.append((args, str(source)))
    return queue


@dataclass(frozen=True, slots=True)
class Reordered:
    queue: list[CandidateInput]
    """The queue with the disagreement inputs first (in their order), then the rest."""
    programs: int
    """The programs compared (those that load)."""
    checked: int
    found: list[CandidateInput]


async def disagreements_first(
    executor: Executor,
    entry_point: str,
    programs: Sequence[str],
    queue: Sequence[CandidateInput],
    count: int,
    limits: Limits,
) -> Reordered:
    """Run ``programs`` on the first ``count`` inputs of ``queue`` (time-outs cut to 0.1 s
    after two); a program that does not load is left out; a time-out and a crash are outcomes
    like a value or an exception's type."""
    pool = list(queue[:count])
    inputs = [args for args, _ in pool]
    cut = replace(limits, cut_after=2, cut_limit=0.1)
    runs = await gather(*(executor.batch(code, entry_point, inputs, cut) for code in programs))
    loaded = [res.outcomes for res in runs if res.load_error is None]
    differ = [i for i in range(len(pool)) if len({outcome_key(o, i) for o in loaded}) > 1]
    found = [pool[i] for i in differ]
    rest = [c for i, c in enumerate(pool) if i not in set(differ)]
    return Reordered([*found, *rest, *queue[count:]], len(loaded), len(pool), found)


def outcome_key(outcomes: Sequence[Outcome], i: int) -> str:
    """What tells two programs' outcomes on one input apart: the value (as votes compare
    values), the exception's type, a time-out or a crash."""
    if i >= len(outcomes):
        return "missing"
    o = outcomes[i]
    if o.status is Status.OK:
        return "value " + answer_key(o.value)
    if o.status is Status.ERROR:
        return f"raised {o.error_type}"
    return o.status.value
