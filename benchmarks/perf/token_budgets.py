"""What the token budgets and natural ends of utdebug's requests do to real model replies.

Run from the repository root::

    .venv/bin/python benchmarks/perf/token_budgets.py          # every corpus, ~1 min
    .venv/bin/python benchmarks/perf/token_budgets.py --corpus FILE --show cut

Every reply of the corpora of real replies (``--corpus``, repeatable; default every
``*.jsonl`` in ``$UTDEBUG_CORPORA``, else ``../shared/corpora`` next to the repository; read in
place) is read as ``benchmarks/perf/parse_corpus.py`` reads it, by purpose and target kind: a
test proposal (``ut``: a call and an output; ``program-ut``: pytest functions, rows about a
ClassEval method), an output vote (``vote``, ``program-vote``), an edit (``debug``). A reply is
*readable* when the engine's parser for its purpose reads it (a call, a value, a test, merged
code). Then, with the budgets and natural ends of ``agents/roles.py`` and
``agents/endings.py``:

- **to end**: the reply's tokens up to its natural end (where a streamed reply is closed), or
  all of them when it has none;
- **kept at end**: the reply up to its natural end is still readable (for ``program-ut``: the
  tests it holds there, against the whole reply's);
- **cut**: its tokens to end exceed the purpose's budget (``max_tokens``; an edit's grows with
  the code, :func:`utdebug.agents.roles.edit_token_cap`), so the server would stop it first.
  A reply the corpus already has cut at its token limit (``finish_reason: length``) counts
  as cut when that limit is above the budget.

Tokens are counted with ``cl100k_base`` (the tokenizer litellm bundles; Qwen2.5's is not on
this machine): on the corpus's replies cut at a known limit (512 and 1,536 Qwen2.5 tokens) it
counts 512-513 and 1,536. Printed: one line per purpose, the replies cut and the readable ones
that lose their answer at the natural end (``--show cut`` lists them). Exit status 0; 2 for a
missing corpus or dataset; 3 when the sandbox cannot start.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from utdebug.agents import parsing
from utdebug.agents.endings import reached
from utdebug.agents.roles import DEBUG_SAMPLING, UT_SAMPLING, VOTE_SAMPLING, edit_token_cap
from utdebug.data.datasets import DatasetError, Split
from utdebug.data.splits import load_split
from utdebug.sandbox import Sandbox, SandboxUnavailable

REPO = Path(__file__).resolve().parent.parent.parent


def _sibling(name: str) -> Any:
    """The script ``name`` beside this one, as a module."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


pc = _sibling("parse_corpus")  # how each reply is read

EXIT_OK, EXIT_USAGE, EXIT_SANDBOX = 0, 2, 3
ENDS = {"ut": "ut", "vote": "vote", "program-ut": "program", "program-vote": "vote"}
KINDS = ("ut", "program-ut", "vote", "program-vote", "debug")
CANDIDATE_STOPS = (
    "\n### Explanation",
    "\n## Explanation",
    "\nExplanation:",
    "\n### Conclusion",
    "\nif __name__",
    "\n# Example usage",
    "\n# Test the",
    "\n# Run the test",
    "\n### Correct Implementation",
    "\n## Hypothesis",
    "\n### Unit Test",
)
"""Strings that could end a reply at the server (``stop``): each is measured for the readable
replies it would break (cut before their answer, or before some of their tests) and the
tokens it would save."""


def encoder() -> Any:
    """cl100k_base from the copy litellm ships (no network; litellm itself is not imported)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("litellm is not installed: its bundled tokenizer is what counts tokens")
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils/tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


@dataclass
class Row:
    corpus: str
    line: int
    kind: str
    finish: str
    tokens: int
    to_end: int
    ended: bool
    budget: int
    readable: bool
    kept_at_end: bool
    tests: tuple[int, int] = (0, 0)
    """(program-ut) tests read in the whole reply, and up to its natural end."""
    needed: int = 0
    """(readable) the fewest tokens of the reply that are readable (with all its tests)."""
    stops: dict[str, tuple[bool, int]] | None = None
    """(readable) per candidate stop string found in it: (breaks it, tokens it saves)."""

    @property
    def cut(self) -> bool:
        return self.to_end > self.budget or (self.finish == "length" and self.tokens > self.budget)


def corpora(args: argparse.Namespace) -> list[Path]:
    if args.corpus:
        return list(args.corpus)
    env = os.environ.get("UTDEBUG_CORPORA")
    folder = Path(env) if env else REPO.parent / "shared" / "corpora"
    return sorted(folder.glob("*.jsonl"))


def read(
    sb: Sandbox, kind: str, text: str, target: tuple[str, str, str | None]
) -> tuple[bool, int]:
    """Whether ``text`` is readable for ``kind`` (and the tests it holds, for program-ut)."""
    code, entry, class_name = target
    if kind == "program-ut":
        from utdebug.agents.reply_tests import parse_program_tests

        found = parse_program_tests(text, entry, module_source=code)
        return isinstance(found, list) and bool(found), len(found) if isinstance(found, list) else 0
    if kind == "program-vote":
        return pc._program_vote(sb, parsing, text, code)[0], 0
    if kind == "vote":
        return pc._parse_vote(parsing, sb, text)[0], 0
    if kind == "ut":
        return pc._parse_ut(parsing, sb, text, code, entry)[0], 0
    if class_name is not None:
        return pc._parse_debug(parsing, text, code, entry, class_name)[0], 0
    return pc._parse_debug(parsing, text, code, entry)[0], 0


def _needed(
    sb: Sandbox,
    enc: Any,
    kind: str,
    ids: list[int],
    target: tuple[str, str, str | None],
    tests: int,
) -> int:
    """The fewest leading tokens of a readable reply that still read (every test, for
    program-ut): what a budget must leave it (a binary search over prefix lengths)."""
    lo, hi = 1, len(ids)
    while lo < hi:
        mid = (lo + hi) // 2
        ok, found = read(sb, kind, enc.decode(ids[:mid]), target)
        if ok and found >= tests:
            hi = mid
        else:
            lo = mid + 1
    return hi


def budget(kind: str, code: str) -> int:
    if kind in ("ut", "program-ut"):
        return UT_SAMPLING.max_tokens
    if kind in ("vote", "program-vote"):
        return VOTE_SAMPLING.max_tokens
    return edit_token_cap(code, DEBUG_SAMPLING.max_tokens)


def measure(
    sb: Sandbox, enc: Any, path: Path, problems: dict[str, Any], data_dir: Path
) -> tuple[list[Row], int]:
    """The rows of one corpus, and how many were left out (no problem to read them against)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    classes = pc._classes(rows, data_dir)
    if isinstance(classes, str):
        raise DatasetError(classes)
    out: list[Row] = []
    left_out = 0
    for line, row in enumerate(rows, 1):
        text, finish = str(row["reply"]), str(row.get("finish_reason") or "stop")
        program = pc._program_target(row, classes)
        target: tuple[str, str, str | None]
        if program is not None:
            kind = "program-" + str(row.get("purpose_guess"))
            kind = "debug" if kind == "program-debug" else kind
            target = program
        else:
            kind = pc.checked_purpose(row)
            problem = problems.get(str(row.get("task_id")))
            if problem is None and kind != "vote":
                left_out += 1
                continue
            target = (problem.code, problem.entry_point, None) if problem else ("", "", None)
        end = reached(ENDS.get(kind), text)
        readable, tests = read(sb, kind, text, target)
        kept, tests_at_end = readable, tests
        if end is not None and readable:
            kept, tests_at_end = read(sb, kind, text[:end], target)
        ids = enc.encode(text)
        tokens = len(ids)
        to_end = tokens if end is None else len(enc.encode(text[:end]))
        needed = _needed(sb, enc, kind, ids, target, tests) if readable else 0
        stops: dict[str, tuple[bool, int]] = {}
        for stop in CANDIDATE_STOPS if readable else ():
            at = text.find(stop)
            if at < 0:
                continue
            ok, found = read(sb, kind, text[:at], target)
            stops[stop] = (not ok or found < tests, max(0, to_end - len(enc.encode(text[:at]))))
        out.append(
            Row(
                path.name,
                line,
                kind,
                finish,
                tokens,
                to_end,
                end is not None,
                budget(kind, target[0]),
                readable,
                kept,
                (tests, tests_at_end),
                needed,
                stops,
            )
        )
    return out, left_out


def report(rows: list[Row], show: str) -> None:
    for kind in KINDS:
        mine = [r for r in rows if r.kind == kind]
        if not mine:
            continue
        readable = [r for r in mine if r.readable]
        lengths = sorted(r.to_end for r in readable) or [0]
        needed = sorted(r.needed for r in readable) or [0]
        p95 = lengths[min(len(lengths) - 1, round(0.95 * (len(lengths) - 1)))]
        saved = sum(r.tokens - r.to_end for r in mine) / max(1, sum(r.tokens for r in mine))
        budgets = sorted({r.budget for r in mine})
        shown = str(budgets[0]) if len(budgets) == 1 else f"{budgets[0]}-{budgets[-1]}"
        print(
            f"PURPOSE {kind:<12} replies {len(mine):>3}  readable {len(readable):>3}  "
            f"budget {shown:>9}  readable tokens to end: median {statistics.median(lengths):>5.0f}"
            f"  p95 {p95:>5}  max {lengths[-1]:>5}  needed max {needed[-1]:>5}"
            f"  readable cut {sum(r.cut for r in readable):>2}"
            f"  all cut {sum(r.cut for r in mine):>2}  ended early {sum(r.ended for r in mine):>3}"
            f" ({saved:.0%} of the tokens not generated)  readable losing the answer at the end "
            f"{sum(not r.kept_at_end for r in readable)}"
        )
        if kind == "program-ut":
            whole = sum(r.tests[0] for r in readable)
            at_end = sum(r.tests[1] for r in readable)
            print(f"TESTS program-ut: {whole} read in the whole replies, {at_end} up to the end")
    for kind in KINDS:
        readable = [r for r in rows if r.kind == kind and r.readable]
        total = sum(r.to_end for r in readable)
        for stop in CANDIDATE_STOPS:
            hits = [r.stops[stop] for r in readable if r.stops and stop in r.stops]
            if hits:
                print(
                    f"STOP {kind:<12} {stop!r:<30} in {len(hits):>3} readable, breaks "
                    f"{sum(b for b, _ in hits):>2}, saves {sum(t for _, t in hits) / total:4.0%}"
                )
    for r in rows:
        if show == "all" or (show == "cut" and (r.cut or (r.readable and not r.kept_at_end))):
            print(
                f"  {r.corpus}:{r.line} {r.kind} {r.finish} tokens {r.tokens} to end {r.to_end} "
                f"budget {r.budget} readable {r.readable} kept at end {r.kept_at_end}"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, action="append", default=[], help="a corpus file")
    ap.add_argument("--data-dir", type=Path, default=None, help="the datasets folder")
    ap.add_argument("--show", choices=("none", "cut", "all"), default="none")
    args = ap.parse_args()
    paths = corpora(args)
    missing = [p for p in paths if not p.is_file()]
    if not paths or missing:
        print(f"corpus not found: {missing or 'no *.jsonl'}", file=sys.stderr)
        return EXIT_USAGE
    data_dir = args.data_dir or pc.default_data_dir()
    enc = encoder()
    rows: list[Row] = []
    sb = Sandbox()
    try:
        hard = load_split(Split.HARD, data_dir=data_dir, download=False)
        problems = {p.task_id: p for p in hard.problems}
        sb.start()
        for path in paths:
            got, left_out = measure(sb, enc, path, problems, data_dir)
            print(f"corpus {path} ({len(got)} replies read, {left_out} with no problem named)")
            rows += got
    except DatasetError as e:
        print(f"dataset error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SandboxUnavailable as e:
        print(f"SANDBOX UNAVAILABLE: {e}", file=sys.stderr)
        return EXIT_SANDBOX
    finally:
        sb.close()
    report(rows, args.show)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
