"""Parse rates of the reply parsers on a corpus of real model replies.

Run from the repository root::

    .venv/bin/python benchmarks/perf/parse_corpus.py                  # the default corpus, ~2 s
    .venv/bin/python benchmarks/perf/parse_corpus.py --show refused   # every refusal's reason
    git show HEAD:agents/parsing.py > /tmp/parsing_before.py
    .venv/bin/python benchmarks/perf/parse_corpus.py --parser /tmp/parsing_before.py

The corpus (``--corpus``, default ``$UTDEBUG_CORPUS``, else
``../shared/corpora/qwen2.5-coder-0.5b-hard.jsonl`` next to the repository) holds one JSON
object a line: ``task_id`` (a MBPP+Fix (Hard) problem or null), ``entry_point``,
``purpose_guess`` (``ut``, ``vote`` or ``debug``), ``finish_reason`` and ``reply``. Every reply
goes the engine's way for its purpose:

- **ut** (a test proposal): ``parse_call`` (given the entry point's parameter names where the
  parser takes them), the pending arguments computed in a real :class:`Sandbox`
  (``resolve_pending``), keyword arguments bound with ``bind_arguments`` against the problem's
  buggy code from the Hard split (``--data-dir``, default ``$UTDEBUG_DATA_DIR``, else
  ``../shared/datasets``). A reply counts as parsed only when all three succeed.
- **vote** (an output prediction): ``parse_output``, a pending value computed in the sandbox.
- **debug** (an edit): ``utdebug.agents.edits.take_edit`` against the problem's buggy code
  (parsed when it gives merged code), or ``extract_code`` where that module is absent.

``purpose_guess`` is checked against the reply's shape, and each correction is printed: a reply
that opens with an answer block is a vote (a continued ``### Output``); a guessed edit in the
UT format (a ``Hypothesis`` and a ``Unit Test`` heading) is a test proposal; a guessed edit
that speaks of a "final answer" (the prediction prompt's wording) is a vote; a guessed proposal
with no test of its own (no heading at its start, no ``Unit Test`` / ``Input Arguments``
section, no ``Arguments:`` label, no fenced call) is a vote.

**Tests with setup** (rows whose ``task_id`` is ``classeval/<class id>/<method>``, from
``utdebug bench --split classeval``) are read as the engine reads them, each line with its
purpose as recorded (``purpose_guess`` is not corrected for them), against the class's
ClassEval canonical solution (``ClassEval_data.json`` in the data folder; the parsers only
read the code's names and classes from it):

- **ut**: ``reply_tests.parse_program_tests`` (every test a person can read in the reply);
  parsed when it gives one or more. Each test read is then checked as the engine admits it
  before any vote (``utdebug.engine.admission``: it calls the method as written, its setup
  runs once in the sandbox): the ``tests`` line counts the tests read and those that can run.
- **vote**: ``reply_votes.parse_vote`` with the expression the vote answers. The corpus does
  not record the test, so the expression is the one the reply names ("the value of `...`"),
  else none; a value (computed in the sandbox when it is not a literal) or ``raises X``.
- **debug**: ``take_edit`` merged into the class's solution (``class_name`` given).

Rows without a ``task_id`` (no single entry point occurs in the reply): a vote needs no entry
point and is counted; a test proposal or an edit cannot be parsed or merged against a function,
so they are reported on their own line (``ut-unattributed``), with the corpus problems each
would parse as a test of, and left out of the rates.

**No answer**: a reply the model layer would not take as an answer (``agents/cache.py``'s
``short_of``: empty, or a fragment a server cut off, which the engine asks again) is counted
apart before any parser reads it, neither parsed nor refused; the rate is of the answers.
**Methods**: a row whose ``entry_point`` is ``Class.method`` or whose ``target_kind`` is not
``function`` is read as the ClassEval rows are (votes with ``parse_vote``, proposals and edits
against the row's ``code``; without it, a vote only).

``--parser FILE`` loads another version of ``agents/parsing.py`` (for example the one before a
change) in place of the installed one. Printed: one ``PURPOSE`` line per purpose (replies,
no answer, parsed, refused, the rate of the answers), the no-answer and refusal reasons by
count, and with ``--show refused`` (or ``all``)
one line per reply. Exit status: 0, 2 for a missing corpus or dataset, 3 when the sandbox cannot
start.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import inspect
import json
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from utdebug.data.datasets import DatasetError, Split
from utdebug.data.splits import load_split
from utdebug.literals import LiteralError, literal_value
from utdebug.sandbox import Sandbox, SandboxUnavailable

REPO = Path(__file__).resolve().parent.parent.parent
CORPUS_NAME = "qwen2.5-coder-0.5b-hard.jsonl"
EXIT_OK, EXIT_USAGE, EXIT_SANDBOX = 0, 2, 3
PURPOSES = ("ut", "vote", "debug")
_HEADING = r"(?im)^[ \t]*(?:#{1,6}[ \t]*|(?:\d+[.)][ \t]+)?\*\*)?"
_HYPOTHESIS = re.compile(_HEADING + r"hypothesis\b")
_UT_SECTION = re.compile(
    r"(?im)^[ \t]*(?:(?:#{1,6}|(?:\d+[.)][ \t]+)?\*\*)[^\n]*\bunit[ \t]+tests?\b"
    r"|unit[ \t]+tests?[ \t]*:|(?:#{1,6}[ \t]*|(?:\d+[.)][ \t]+)?\*\*)?input[ \t]+arguments?\b)"
)
_STARTS_AS_TEST = re.compile(r"(?i)\A\s*(?:#|\*\*|hypothesis\b)")
_ARGUMENTS_LABEL = re.compile(r"(?i)\barguments?\b[*_ \t]*:")
_OPENING_BLOCK = re.compile(r"\A\s*```([^\n`]*)\n?(.*?)```", re.S)


def default_corpus() -> Path:
    env = os.environ.get("UTDEBUG_CORPUS")
    return Path(env) if env else REPO.parent / "shared" / "corpora" / CORPUS_NAME


def default_data_dir() -> Path:
    env = os.environ.get("UTDEBUG_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "datasets"


def checked_purpose(row: dict[str, Any]) -> str:
    """The purpose of a reply, checked against its shape (see the module docstring)."""
    guess = str(row.get("purpose_guess"))
    text = str(row["reply"])
    entry = row.get("entry_point")
    if guess in ("ut", "debug") and _opens_with_value(text):
        return "vote"  # a continued ``### Output``: the answer first
    if guess == "debug":
        if _HYPOTHESIS.search(text) and _UT_SECTION.search(text):
            return "ut"  # the UT prompt's format
        if "final answer" in text.lower():
            return "vote"  # the output-prediction prompt's wording
    if guess == "ut" and not (
        _STARTS_AS_TEST.match(text)
        or _UT_SECTION.search(text)
        or _ARGUMENTS_LABEL.search(text)
        or (entry and re.search(r"```[^`]*\b" + re.escape(str(entry)) + r"\(", text))
    ):
        return "vote"  # prose that goes on after ``### Output`` without a test of its own
    return guess


def _opens_with_value(text: str) -> bool:
    m = _OPENING_BLOCK.match(text)
    if m is None:
        return False
    tag, body = m.group(1).strip(), m.group(2).strip()
    source = (
        body
        if tag.isidentifier() and tag.lower() in ("python", "py", "text")
        else (f"{tag}\n{body}".strip())
    )
    try:
        literal_value(source)
    except LiteralError:
        return False
    return True


def load_parser(path: Path | None) -> ModuleType:
    if path is None:
        from utdebug.agents import parsing

        return parsing
    spec = importlib.util.spec_from_file_location("utdebug_parsing_under_test", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(slots=True)
class Outcome:
    line: int
    purpose: str
    task_id: str | None
    finish: str
    ok: bool
    detail: str
    program: bool = False
    """A reply about a test with setup (a ClassEval+Fix method, or a method row)."""
    answered: bool = True
    """False for a reply that is no answer (empty, or a fragment a server cut off): counted
    apart, neither parsed nor refused."""


def _classes(rows: list[dict[str, Any]], data_dir: Path) -> dict[str, Any] | str:
    """ClassEval's classes by id, when the corpus has rows about them (else empty); the
    error's text when the dataset file cannot be read."""
    if not any(str(r.get("task_id") or "").startswith("classeval/") for r in rows):
        return {}
    from utdebug.data.classeval import parse_classeval
    from utdebug.data.datasets import CLASSEVAL_FILE

    path = data_dir / CLASSEVAL_FILE
    if not path.is_file():
        return f"{CLASSEVAL_FILE} is not in {data_dir}"
    tasks, _ = parse_classeval(path)
    return {t.task_id: t for t in tasks}


def _program_target(
    row: dict[str, Any], classes: dict[str, Any]
) -> tuple[str | None, str, str] | None:
    """(code, method, class name) of a row about a method (a ClassEval+Fix method, an
    ``entry_point`` written ``Class.method`` or a ``target_kind`` other than ``function``,
    with the row's ``code`` when it has one), else ``None``: a function's row."""
    parts = str(row.get("task_id") or "").split("/")
    if len(parts) == 3 and parts[0] == "classeval" and parts[1] in classes:
        task = classes[parts[1]]
        return task.solution, parts[2], task.class_name
    entry = str(row.get("entry_point") or "")
    kind = str(row.get("target_kind") or "function")
    if "." not in entry and kind == "function":
        return None
    class_name, _, method = entry.rpartition(".")
    code = row.get("code")
    return (str(code) if code else None), method or entry, class_name


def _program_row(
    sb: Sandbox,
    p: ModuleType,
    line: int,
    row: dict[str, Any],
    code: str | None,
    method: str,
    class_name: str,
    tallies: dict[str, int],
) -> Outcome:
    purpose = str(row.get("purpose_guess"))
    reply, finish = str(row["reply"]), str(row.get("finish_reason") or "stop")
    no_answer = _no_answer(reply, purpose, finish)
    if no_answer is not None:
        return Outcome(line, purpose, row.get("task_id"), finish, False, no_answer, True, False)
    if code is None and purpose != "vote":  # nothing to read a test or merge an edit against
        detail = "no code: a method's row without the class it belongs to"
        return Outcome(line, f"{purpose}-unattributed", row.get("task_id"), finish, False, detail)
    if purpose == "ut":
        assert code is not None
        ok, detail, read, runnable = _program_ut(sb, reply, code, method, class_name)
        tallies["read"] += read
        tallies["can_run"] += runnable
    elif purpose == "vote":
        ok, detail = _program_vote(sb, p, reply, code)
    else:
        assert code is not None
        ok, detail = _parse_debug(p, reply, code, method, class_name)
    if not ok and finish == "length":
        detail = f"cut at the token limit: {detail}"
    return Outcome(line, purpose, row.get("task_id"), finish, ok, detail, program=True)


def _no_answer(reply: str, purpose: str, finish: str) -> str | None:
    """Why a reply is no answer, as the model layer decides before any parser reads it
    (:func:`utdebug.agents.cache.short_of`: empty, or a fragment a server cut off, which the
    engine asks again), else ``None``."""
    try:
        from utdebug.agents.cache import short_of
    except ImportError:  # an older model layer: only an empty reply is none
        return None if reply.strip() else "an empty reply"
    return short_of(reply, purpose, finish)


def _parse_ut(p: ModuleType, sb: Sandbox, reply: str, code: str, entry: str) -> tuple[bool, str]:
    kwargs: dict[str, Any] = {}
    if "params" in inspect.signature(p.parse_call).parameters and hasattr(p, "parameter_names"):
        kwargs["params"] = p.parameter_names(code, entry)
    call = p.parse_call(reply, entry, **kwargs)
    if isinstance(call, p.ParsedCall):
        call = p.resolve_pending(sb, call)
    if isinstance(call, p.ParseFailure):
        return False, call.reason
    bound = p.bind_arguments(call.args, call.kwargs, code, entry)
    if isinstance(bound, p.ParseFailure):
        return False, bound.reason
    return True, f"{entry}{tuple(bound)!r}"


def _parse_vote(p: ModuleType, sb: Sandbox, reply: str) -> tuple[bool, str]:
    value = p.parse_output(reply)
    if isinstance(value, p.ParsedValue):
        value = p.resolve_pending(sb, value)
    if isinstance(value, p.ParseFailure):
        return False, value.reason
    return True, repr(value.value)


_SUBJECT = re.compile(r"value of `([^`\n]+)`")


def _program_ut(
    sb: Sandbox, reply: str, code: str, entry: str, class_name: str
) -> tuple[bool, str, int, int]:
    """(parsed, detail, tests read, tests that can run) for a test proposal with setup."""
    from utdebug.agents import reply_tests

    many = getattr(reply_tests, "parse_program_tests", None)
    found: Any
    if many is not None:
        found = many(reply, entry, module_source=code)
    else:  # an older reply_tests: one test a reply
        one = reply_tests.parse_program_test(reply, entry, module_source=code)
        found = [one] if isinstance(one, reply_tests.ParsedProgram) else one
    if not isinstance(found, list):
        return False, found.reason, 0, 0
    runnable, why = _admitted(sb, found, code, entry, class_name)
    shown = "; ".join(f"{t.call} -> {t.raises or t.expected.source}" for t in found[:3])
    note = f"{len(found)} test(s), {runnable} can run: {shown}"
    return True, note + (f" (not run: {why})" if why else ""), len(found), runnable


def _admitted(
    sb: Sandbox, tests: list[Any], code: str, entry: str, class_name: str
) -> tuple[int, str]:
    """How many of ``tests`` the engine admits (calls as written, setup runs), and the first
    reason one was not."""
    try:
        from utdebug.engine import admission
        from utdebug.engine.execution import Executor
    except ImportError:  # an older engine: no admission
        return len(tests), ""
    from utdebug.sandbox.config import Limits

    async def check() -> list[str | None]:
        ex = Executor(sb, workers=2)
        try:
            out: list[str | None] = []
            for t in tests:
                why = admission.call_problem(
                    t.setup, t.call, t.then, code=code, entry_point=entry, class_name=class_name
                )
                if why is None:
                    why = await admission.setup_problem(
                        ex, code, t.setup, t.call, t.then, Limits(per_input=2.0)
                    )
                out.append(why)
            return out
        finally:
            ex.close()

    reasons = asyncio.run(check())
    first = next((r for r in reasons if r is not None), "")
    return sum(r is None for r in reasons), first


def _program_vote(sb: Sandbox, p: ModuleType, reply: str, code: str | None) -> tuple[bool, str]:
    from utdebug.agents.reply_votes import parse_vote

    named = _SUBJECT.findall(reply)
    value = parse_vote(reply, named[-1] if named else "", module_source=code)
    if isinstance(value, str):
        return True, f"raises {value}"
    if isinstance(value, p.ParsedValue):
        value = p.resolve_pending(sb, value)
    reason = getattr(value, "reason", None)  # a ParseFailure (of ``p`` or reply_syntax)
    if reason is not None:
        return False, str(reason)
    return True, repr(getattr(value, "value", None))


def _parse_debug(
    p: ModuleType, reply: str, code: str, entry: str, class_name: str | None = None
) -> tuple[bool, str]:
    try:
        from utdebug.agents.edits import take_edit
    except ImportError:
        return (True, "code block") if p.extract_code(reply) is not None else (False, "no code")
    taken = (
        take_edit(reply, code, entry, class_name=class_name)
        if class_name
        else take_edit(reply, code, entry)
    )
    if hasattr(taken, "code"):
        return True, f"merged code, {len(taken.code)} characters"
    return False, str(getattr(taken, "reason", taken))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=None, help="the corpus file (JSON lines)")
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="folder with MBPP+Fix_hard_test.jsonl (default: $UTDEBUG_DATA_DIR, "
        "else ../shared/datasets)",
    )
    ap.add_argument("--parser", type=Path, default=None, help="another agents/parsing.py to use")
    ap.add_argument("--show", choices=("none", "refused", "all"), default="none")
    ap.add_argument("--json", action="store_true", help="the numbers as one JSON object")
    args = ap.parse_args()

    corpus = args.corpus or default_corpus()
    if not corpus.is_file():
        print(f"corpus not found: {corpus} (set --corpus or UTDEBUG_CORPUS)", file=sys.stderr)
        return EXIT_USAGE
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    data_dir = args.data_dir or default_data_dir()
    try:
        loaded = load_split(Split.HARD, data_dir=data_dir, download=False)
    except DatasetError as e:
        print(f"dataset error: {e}", file=sys.stderr)
        return EXIT_USAGE
    problems = {p.task_id: p for p in loaded.problems}
    classes = _classes(rows, data_dir)
    if isinstance(classes, str):
        print(f"dataset error: {classes}", file=sys.stderr)
        return EXIT_USAGE
    parser = load_parser(args.parser)
    out = sys.stderr if args.json else sys.stdout

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    digest = hashlib.sha256(corpus.read_bytes()).hexdigest()[:12]
    say(f"parse_corpus: {corpus} ({len(rows)} replies, sha256 {digest})")
    say(f"parser: {args.parser or 'utdebug.agents.parsing'}")
    try:
        sb = Sandbox()
        sb.start()
    except SandboxUnavailable as e:
        print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
        return EXIT_SANDBOX
    outcomes: list[Outcome] = []
    relabelled: list[str] = []
    corpus_tasks = sorted({str(r["task_id"]) for r in rows if r.get("task_id") in problems})
    unique = 0
    tallies = {"read": 0, "can_run": 0}
    t0 = time.perf_counter()
    with sb:
        for line, row in enumerate(rows, 1):
            program_target = _program_target(row, classes)
            if program_target is not None:
                outcomes.append(_program_row(sb, parser, line, row, *program_target, tallies))
                continue
            purpose = checked_purpose(row)
            if purpose != row.get("purpose_guess"):
                relabelled.append(f"line {line}: {row.get('purpose_guess')} -> {purpose}")
            reply, task_id = str(row["reply"]), row.get("task_id")
            finish = str(row.get("finish_reason") or "stop")
            problem = problems.get(task_id) if task_id else None
            no_answer = _no_answer(reply, str(row.get("purpose_guess")), finish)
            if no_answer is not None:  # under the purpose it was asked for (a cut proposal)
                outcomes.append(Outcome(line, purpose, task_id, finish, False, no_answer))
                outcomes[-1].answered = False
                continue
            if purpose == "vote":
                ok, detail = _parse_vote(parser, sb, reply)
            elif problem is None:
                purpose, ok, detail = f"{purpose}-unattributed", False, "no task_id"
                if purpose == "ut-unattributed":
                    fits = [
                        tid
                        for tid in corpus_tasks
                        if _parse_ut(
                            parser, sb, reply, problems[tid].code, problems[tid].entry_point
                        )[0]
                    ]
                    detail = f"no task_id; parses as a test of {', '.join(fits) or 'none'}"
                    unique += len(fits) == 1
            elif purpose == "ut":
                ok, detail = _parse_ut(parser, sb, reply, problem.code, problem.entry_point)
            else:
                ok, detail = _parse_debug(parser, reply, problem.code, problem.entry_point)
            if not ok and finish == "length":
                detail = f"cut at the token limit: {detail}"
            outcomes.append(Outcome(line, purpose, task_id, finish, ok, detail))
    wall = time.perf_counter() - t0

    for note in relabelled:
        say(f"purpose_guess corrected, {note}")
    summary: dict[str, Any] = {"corpus": str(corpus), "sha256": digest, "purposes": {}}
    for purpose in (*PURPOSES, *(f"{p}-unattributed" for p in PURPOSES)):
        mine = [o for o in outcomes if o.purpose == purpose]
        if not mine:
            continue
        parsed = sum(o.ok for o in mine)
        cut = sum(o.finish == "length" for o in mine)
        if purpose.endswith("-unattributed"):
            fitting = (
                f"; {unique} parse as a test of exactly one of the corpus's problems"
                if purpose == "ut-unattributed"
                else ""
            )
            say(
                f"PURPOSE {purpose} replies {len(mine):>3}  not counted in the rates (no task_id: "
                f"no entry point to parse or merge against; {cut} cut at the token limit"
                f"{fitting})"
            )
            summary["purposes"][purpose] = {"replies": len(mine), "unique_fit": unique}
            continue
        none = sum(not o.answered for o in mine)
        answers = len(mine) - none
        rate = parsed / answers if answers else 0.0
        say(
            f"PURPOSE {purpose:<6} replies {len(mine):>3}  no answer {none:>3}  parsed "
            f"{parsed:>3}  refused {answers - parsed:>3}  rate {rate * 100:5.1f} % of the "
            f"answers  ({cut} cut at the token limit)"
        )
        summary["purposes"][purpose] = {
            "replies": len(mine),
            "no_answer": none,
            "parsed": parsed,
            "refused": answers - parsed,
            "rate": round(rate, 4),
            "cut": cut,
        }
    if any(o.program for o in outcomes):
        say(
            f"TESTS read {tallies['read']:>3}  can run {tallies['can_run']:>3}  (tests with "
            f"setup: every test the proposals hold, and those the engine admits before voting)"
        )
        summary["tests"] = dict(tallies)
    reasons = Counter(
        re.sub(r"`[^`]*`", "`...`", o.detail)
        for o in outcomes
        if not o.ok and o.answered and not o.purpose.endswith("-unattributed")
    )
    unanswered = Counter(re.sub(r"\d+", "N", o.detail) for o in outcomes if not o.answered)
    say("no answer (counted apart: the engine asks again):")
    for reason, count in unanswered.most_common():
        say(f"  {count:>3}  {reason[:110]}")
    say("refusal reasons (code spans elided):")
    for reason, count in reasons.most_common():
        say(f"  {count:>3}  {reason[:110]}")
    if args.show != "none":
        for o in outcomes:
            if args.show == "all" or not o.ok:
                verdict = "parsed " if o.ok else "REFUSED" if o.answered else "NO ANSWER"
                say(f"line {o.line:>3} {o.purpose:<6} {o.task_id} {verdict} {o.detail[:150]}")
    say(f"WALL {wall:.2f} s")
    summary["wall_s"] = round(wall, 3)
    summary["refused"] = [
        {"line": o.line, "purpose": o.purpose, "reason": o.detail}
        for o in outcomes
        if not o.ok and o.answered
    ]
    summary["no_answer"] = [
        {"line": o.line, "purpose": o.purpose, "reason": o.detail}
        for o in outcomes
        if not o.answered
    ]
    if args.json:
        print(json.dumps(summary, indent=1))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
