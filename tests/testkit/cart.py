"""A shopping cart with a buggy method (``Cart.total`` skips the first item) for the tests of
tests with setup, and the replies a scripted model gives on it; the ``module_executor``
fixture (conftest.py) runs programs as its module ``cart``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from utdebug.engine.model import Task
from utdebug.workspace import load_function

CART = '''\
import dataclasses


@dataclasses.dataclass
class Item:
    price: int


class Cart:
    """A shopping cart."""

    count = 0

    def __init__(self):
        self.items = []
        Cart.count += 1

    def add(self, item):
        self.items.append(item)

    def total(self):
        return sum(i.price for i in self.items[1:])  # bug: skips the first item

    @property
    def size(self):
        return len(self.items)

    async def atotal(self):
        return self.total()

    def prices(self):
        for i in self.items:
            yield i.price

    def __len__(self):
        return len(self.items)
'''

FIXED_TOTAL = """\
class Cart:
    def total(self):
        return sum(i.price for i in self.items)
"""


def pytest_reply(body: str) -> str:
    return f"The bug: the first item is skipped.\n```python\n{body}```\n"


def votes(value: str, k: int = 4) -> list[str]:
    return [f"Adding the prices.\nOutput: ```{value}```"] * k


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def cart_task(tmp_path: Path, name: str = "Cart.total") -> tuple[Path, Task]:
    path = tmp_path / "cart.py"
    path.write_text(CART, encoding="utf-8")
    return path, load_function(path, name).to_task()
