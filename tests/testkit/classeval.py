"""Three small classes in ClassEval's format (written for these tests) and a data folder that
holds them: state and methods that call each other, a file in the working folder, sqlite in
memory and the clock, and a test that needs a module that is not installed (excluded: the
canonical solution cannot pass it). The ``small_dir`` fixture (conftest.py) writes it."""

from __future__ import annotations

import json
from pathlib import Path

from utdebug.data.datasets import CLASSEVAL_FILE

CART = """import datetime
import sqlite3


class Cart:
    def __init__(self):
        self.items = {}

    def add(self, name, price, qty=1):
        if qty <= 0:
            return False
        self.items[name] = self.items.get(name, 0) + price * qty
        return True

    def total(self):
        return sum(self.items.values())

    def save(self, path):
        with open(path, "w") as f:
            f.write(str(self.total()))
        return self.total()

    def stamp(self):
        return datetime.date.today().year >= 2024

    def store(self):
        db = sqlite3.connect(":memory:")
        db.execute("create table t (name text, cost integer)")
        db.executemany("insert into t values (?, ?)", sorted(self.items.items()))
        return db.execute("select sum(cost) from t").fetchone()[0]
"""

CART_TESTS = """import unittest


class CartTestAdd(unittest.TestCase):
    def test_add_1(self):
        c = Cart()
        self.assertTrue(c.add("a", 3, 2))
        self.assertEqual(c.items, {"a": 6})

    def test_add_2(self):
        c = Cart()
        self.assertFalse(c.add("a", 3, 0))
        self.assertEqual(c.items, {})

    def test_add_3(self):
        c = Cart()
        c.add("a", 1)
        c.add("a", 2, 3)
        self.assertEqual(c.items, {"a": 7})


class CartTestTotal(unittest.TestCase):
    def setUp(self):
        self.c = Cart()
        self.c.add("a", 2, 2)
        self.c.add("b", 5)

    def test_total_1(self):
        self.assertEqual(self.c.total(), 9)

    def test_total_2(self):
        self.assertEqual(Cart().total(), 0)


class CartTestSave(unittest.TestCase):
    def test_save_1(self):
        c = Cart()
        c.add("a", 4)
        self.assertEqual(c.save("cart.txt"), 4)
        with open("cart.txt") as f:
            self.assertEqual(f.read(), "4")

    def test_save_2(self):
        with open("cart.txt") as f:  # the file the test before wrote
            self.assertEqual(f.read(), "4")


class CartTestStamp(unittest.TestCase):
    def test_stamp(self):
        self.assertTrue(Cart().stamp())


class CartTestStore(unittest.TestCase):
    def test_store(self):
        c = Cart()
        c.add("a", 2)
        c.add("b", 3, 2)
        self.assertEqual(c.store(), 8)

    def test_store_needs_a_missing_module(self):
        import utdebug_no_such_module  # noqa: F401


if __name__ == "__main__":
    unittest.main()
"""

STACK = """class Stack:
    def __init__(self, limit):
        self.limit = limit
        self.data = []

    def push(self, x):
        if len(self.data) >= self.limit:
            raise OverflowError("full")
        self.data.append(x)

    def pop(self):
        if not self.data:
            return None
        return self.data.pop()
"""

STACK_TESTS = """import unittest


class StackTestPush(unittest.TestCase):
    def test_push_1(self):
        s = Stack(2)
        s.push(1)
        s.push(2)
        self.assertEqual(s.data, [1, 2])

    def test_push_2(self):
        s = Stack(1)
        s.push(1)
        with self.assertRaises(OverflowError):
            s.push(2)


class StackTestPop(unittest.TestCase):
    def test_pop_1(self):
        s = Stack(3)
        s.push(1)
        s.push(2)
        self.assertEqual(s.pop(), 2)
        self.assertEqual(s.data, [1])

    def test_pop_2(self):
        self.assertIsNone(Stack(1).pop())
"""


def _row(n: int, name: str, code: str, tests: str, methods: dict[str, str]) -> dict[str, object]:
    return {
        "task_id": f"ClassEval_{n}",
        "class_name": name,
        "solution_code": code,
        "test": tests,
        "methods_info": [{"method_name": m, "test_class": t} for m, t in methods.items()],
    }


ROWS = [
    _row(
        0,
        "Cart",
        CART,
        CART_TESTS,
        {
            "add": "CartTestAdd",
            "total": "CartTestTotal",
            "save": "CartTestSave",
            "stamp": "CartTestStamp",
            "store": "CartTestStore",
        },
    ),
    _row(1, "Stack", STACK, STACK_TESTS, {"push": "StackTestPush", "pop": "StackTestPop"}),
    {"task_id": "ClassEval_2", "class_name": "Broken", "solution_code": "x = 1\n", "test": ""},
]


def small_dir(tmp_path: Path) -> Path:
    """A data folder under ``tmp_path`` with :data:`ROWS` as its ClassEval file."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / CLASSEVAL_FILE).write_text(json.dumps(ROWS), encoding="utf-8")
    return folder
