"""utdebug: find and fix bugs in a Python function with generated unit tests.

Subpackages (imported lazily, so ``import utdebug`` stays cheap):

- ``utdebug.sandbox``: runs untrusted code in confined children; verdicts are decided here,
  in the trusted parent.
- ``utdebug.benchmarks``: datasets (MBPP+Fix (Hard), MBPP+Fix, HE+Fix), the evaluator on
  private tests, run records.
- ``utdebug.agents``: the model layer.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
