"""A tiny Scoring-Verifiers file (three problems, their solutions ranked by score) for the
tests of ``utdebug bench verify``."""

from __future__ import annotations

from typing import Any


def _stub(sig: str, doc: str) -> str:
    return f'def {sig}:\n    """{doc}"""\n'


def _sol(rank: int, score: float, code: str) -> dict[str, Any]:
    return {
        "rank": rank,
        "average_test_score": score,
        "average_time_taken": 0.001,
        "solution": {"canonical_solution": code},
    }


ROWS: list[dict[str, Any]] = [
    {
        "task_id": "Toy/0",
        "prompt": _stub("add(a, b)", "Return a + b."),
        "entry_point": "add",
        "canonical_solution": "    return a + b\n",
        "base_input": [[1, 2], [3, 4], [-1, 5], [-2, -3]],
        "plus_input": [],
        "all_solutions": [
            _sol(1, 1.0, "def add(a, b):\n    return a + b\n"),
            _sol(2, 0.5, "def add(a, b):\n    return a + b if a >= 0 else 0\n"),
            _sol(3, 0.0, "def add(a, b):\n    return 0\n"),
        ],
    },
    {
        "task_id": "Toy/1",
        "prompt": _stub("is_even(n)", "Return True if n is even."),
        "entry_point": "is_even",
        "canonical_solution": "    return n % 2 == 0\n",
        "base_input": [[2], [7], [9], [0]],
        "plus_input": [],
        "all_solutions": [
            _sol(1, 1.0, "def is_even(n):\n    return n % 2 == 0\n"),
            _sol(2, 0.75, "def is_even(n):\n    return n % 2 == 0 and n > 0\n"),
            _sol(3, 0.5, "def is_even(n):\n    return True\n"),
            _sol(4, 0.0, "def is_even(n):\n    return n % 2 == 1\n"),
        ],
    },
    {
        "task_id": "Toy/2",
        "prompt": _stub("neg(x)", "Return -x."),
        "entry_point": "neg",
        "canonical_solution": "    return -x\n",
        "base_input": [[1], [-3]],
        "plus_input": [],
        "all_solutions": [
            _sol(1, 1.0, "def neg(x):\n    return -x\n"),
            _sol(2, 0.5, "def neg(x):\n    return -x if x > 0 else x\n"),
            _sol(3, 0.0, "def neg(x):\n    return x\n"),
        ],
    },
]
