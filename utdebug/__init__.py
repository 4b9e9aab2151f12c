"""utdebug: find and fix bugs in a Python function with generated unit tests.

Subpackages are imported lazily, so ``import utdebug`` stays cheap. Their layers, from the
sandbox at the bottom to the front ends at the top, are in docs/architecture.md.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
