"""Output comparison, decided in the trusted parent.

Two semantics are implemented:

- ``Semantics.DATASET`` (the default): the benchmark file's own ``assertion(out, exp, atol)``
  helper, with the per-test ``atol`` of the loop, the rows whose helper wraps both sides in
  ``set()``, and the two rows (MBPP 737 and 794) whose helper never asserts.
- ``Semantics.REFERENCE``: the UTDebug authors' ``eval_exact_match`` (atol ignored,
  1e-6 only when the expected side is float(s), set comparison whenever ``' set('`` occurs
  in the test text, literal comparison everywhere else).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from utdebug.sandbox._runner import distinct_hashes
from utdebug.sandbox.values import (
    ByRepr,
    Opaque,
    Structured,
    describe,
)


class Semantics(StrEnum):
    DATASET = "dataset"
    REFERENCE = "reference"


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """How one problem's private tests compare an output with the expected value."""

    atol: float = 0.0
    """The ``atol`` argument of the dataset's test loop (``assertion(f(*inp), exp, atol)``)."""
    set_compare: bool = False
    """The dataset's ``assertion`` helper wraps both sides in ``set()`` (MBPP 7, 232, 579, 769)."""
    never_asserts: bool = False
    """The dataset's helper computes a result but never asserts it (MBPP 737, 794)."""
    reference_use_set: bool = False
    """``' set(' in test``: the authors' harness compares as sets (adds MBPP 473)."""
    poly_root: bool = False
    """HumanEval/32 ``find_zero``: pass iff ``|poly(xs, out)| <= atol`` (EvalPlus's check)."""


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------
#
# Both semantics are re-statements of Python code that runs ``==``, ``!=``, ``set()``,
# ``bool()`` and ``np.allclose`` on the values. The values reaching the parent are plain data
# (decoded by the sandbox codec), so running the very same operations here is safe and is the
# most faithful way to reproduce every corner case (numpy truth values, broadcasting, nan, ...).
# Outcomes therefore follow the installed numpy (2.x: comparing arrays of mismatched shapes
# raises instead of returning a scalar), exactly as a re-run of the original code would.

_FLOAT_TOL = 1e-6
"""Tolerance both helpers switch to when ``atol == 0`` and the expected value "is floats"."""
_RTOL = 1e-07
"""The ``rtol`` both helpers pass to ``np.allclose``."""


def _is_floats(x: object) -> bool:
    """The ``is_floats`` helper of the dataset and of the authors' ``utils.py`` (identical).

    Quirk (every row with an empty expected list, e.g. MBPP 161, 308, 589, 725, 754, 769):
    ``all()`` of an empty list is True, so ``[]`` and ``()`` count as "floats"; the tolerance
    becomes 1e-6 and ``np.allclose`` then broadcasts shape ``(0,)`` against any scalar or
    one-element output and returns True without looking at the values, so ``5``, ``[5]`` and
    even ``None`` pass against an expected ``[]`` (``[1, 2]`` or a str do not).
    (Newer evalplus adds ``and x``; neither the dataset text nor the authors' code has it.)
    """
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return bool(x.dtype == np.float64 or x.dtype == np.float32)
    return False


def contains_opaque(value: object) -> bool:
    """Whether ``value`` is or contains (at any depth) an :class:`Opaque`, also inside arrays
    of objects."""
    return _contains(value, Opaque, arrays=True)


def _contains_by_repr(value: object) -> bool:
    """Whether ``value`` is or contains (at any depth) a :class:`ByRepr`."""
    return _contains(value, ByRepr, arrays=False)


def _contains(value: object, kind: type, *, arrays: bool) -> bool:
    """Whether ``value`` is or contains (at any depth) an instance of ``kind``; ``arrays``:
    look inside numpy arrays of objects too.

    Iterative (no recursion limit) and cycle-safe (each container is visited once).
    """
    stack: list[object] = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, kind):
            return True
        if isinstance(item, (list, tuple, set, frozenset, dict, Structured, np.ndarray)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif arrays and isinstance(item, np.ndarray) and item.dtype == object:
            stack.extend(item.flat)
        elif isinstance(item, Structured):
            stack.extend(v for _, v in item.fields)
    return False


_REPR_LIMIT = 100_000
"""Longest text compared when values are compared by repr."""

# ---------------------------------------------------------------------------------------------
# The judging budget: what the parent spends on comparing a result is bounded by the size of
# the expected value, never by what the program chose to return.
# ---------------------------------------------------------------------------------------------

SIZE_FACTOR = 16
"""A result may be this many times the size of the expected value (see :func:`value_size`)
before it fails without being compared."""
SIZE_FLOOR = 10_000
"""... plus this many units, so that small expected values leave room for any honest
result of about their size."""
BROADCAST_FACTOR = 4
"""``np.allclose`` and an array's ``!=`` broadcast shapes that differ; the parent compares
only when the broadcast shape holds at most this many times the larger side's elements
(a (N, 1) result against (M,) expected values would otherwise build N x M elements)."""


def value_size(value: object, cap: int) -> int:
    """A measure of ``value``'s size (1 per container, element, number or object field; a
    string, bytes or big int 1 per 64 characters, bytes or digits of 64 bits; an array its
    elements), counted in one iterative walk that stops once past ``cap`` (the result is then
    some number above ``cap``). Cycle-safe; costs at most about ``cap`` steps."""
    total = 0
    stack: list[object] = [value]
    seen: set[int] = set()
    while stack and total <= cap:
        item = stack.pop()
        total += 1
        t = type(item)
        if t is str or t is bytes or t is bytearray:
            total += len(item) >> 6  # type: ignore[arg-type]
        elif t is int:
            total += item.bit_length() >> 6  # type: ignore[attr-defined]
        elif isinstance(item, np.ndarray):
            total += int(item.size)
        elif isinstance(item, (list, tuple, set, frozenset, dict, Structured)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, Structured):
                stack.extend(v for _, v in item.fields)
            else:
                stack.extend(item)
    return total


def budget_applies(check: CheckSpec, semantics: Semantics) -> bool:
    """Whether a result's size is held to the judging budget: always, but for the dataset's
    helper that never asserts (MBPP 737/794), which passes any value."""
    return not (check.never_asserts and semantics is Semantics.DATASET)


def within_budget(actual: object, expected: object) -> bool:
    """Whether ``actual`` is small enough, next to ``expected``, to be compared with it (see
    :data:`SIZE_FACTOR`): a result far larger than expected fails without a full comparison,
    whatever the comparison would have said (a list of a million copies of the expected set's
    one element, compared as sets, fails here)."""
    cap = SIZE_FACTOR * value_size(expected, 10 * SIZE_FLOOR) + SIZE_FLOOR
    return value_size(actual, cap) <= cap


def _broadcast_ok(a: object, b: object) -> bool:
    """Whether comparing ``a`` with ``b`` elementwise (``np.allclose``, an array's ``!=``) stays
    within :data:`BROADCAST_FACTOR` x the larger side's elements. Shapes that do not broadcast
    are left to numpy (it raises at once, and the comparison fails)."""
    try:
        sa, sb = np.shape(a), np.shape(b)  # type: ignore[call-overload]
    except Exception:  # ragged nesting: numpy would raise too
        return True
    if sa == sb:
        return True
    try:
        out = np.broadcast_shapes(sa, sb)
    except ValueError:
        return True
    size = math.prod(out)
    return bool(size <= BROADCAST_FACTOR * max(math.prod(sa), math.prod(sb), 1))


def compared_by_repr(actual: object, expected: object) -> bool:
    """Whether ``actual`` and ``expected`` are compared by their repr: the result holds a
    value the sandbox could not encode (an :class:`Opaque`), or the expected value holds one
    known only by its source text (a :class:`ByRepr`)."""
    return contains_opaque(actual) or _contains_by_repr(expected)


def _repr_match(actual: object, expected: object) -> bool:
    """The comparison by repr. An :class:`Opaque` never equals a plain or structural expected
    value: its text is the program's ``__repr__``, which could claim anything. Against an
    expected value holding a :class:`ByRepr`, both sides' texts (an Opaque's repr, a ByRepr's
    source, the repr of everything else) must be the same text."""
    if not _contains_by_repr(expected):
        return False
    a = describe(actual, _REPR_LIMIT)
    e = describe(expected, _REPR_LIMIT)
    if len(a) >= _REPR_LIMIT or len(e) >= _REPR_LIMIT:
        return False
    return a == e


def _set_of(x: Any) -> set[Any]:
    """``set(x)``, refusing (ValueError, so the comparison fails) an iterable whose elements'
    hashes collide en masse: a child's value could otherwise make this set quadratic to build
    (ints, floats and tuples of them have hashes anyone can choose)."""
    if isinstance(x, (set, frozenset)):
        return set(x)  # copied with its stored hashes: no comparisons
    return set(distinct_hashes(list(x)))


def _dataset_assertion(out: object, exp: object, atol: float, set_compare: bool) -> bool:
    """The dataset's ``assertion(out, exp, atol)`` helper; True iff it does not raise.

    - ``atol`` is the loop's value: 0 in 167 Hard rows, ``0.0001`` in MBPP 120, 137 and 293.
    - ``is_floats(exp)`` is decided on the *original* expected value, before any ``set()``.
    - ``set_compare`` (MBPP 7, 232, 579, 769): ``out = set(out); exp = set(exp)`` with no
      ``try``: an output that ``set()`` rejects (an int, None, a list of lists) fails; a str
      output becomes its set of characters; order and duplicates are ignored.
      If the tolerance is non-zero (a float expected list) and the sets differ,
      ``np.allclose`` on two sets raises, so float sets pass only when exactly equal.
    - ``if out != exp and atol != 0`` takes the truth value of ``out != exp``: for a numpy
      array with more than one element (or none) that raises, so the test fails; a
      one-element array stands for its element. Same for ``assert out == exp``.
    - ``np.allclose(out, exp, rtol=1e-07, atol=atol)`` broadcasts: a scalar output can match
      an expected list of identical floats, and nan never matches (``equal_nan=False``),
      while ``inf`` matches ``inf`` of the same sign.
    - A tuple never equals a list (``(1, 2) != [1, 2]``), but with a non-zero tolerance
      ``np.allclose`` accepts it: ``(1.0, 2.0)`` passes against ``[1.0, 2.0]``.
    """
    if atol == 0 and _is_floats(exp):
        atol = _FLOAT_TOL
    if set_compare:
        out = _set_of(out)
        exp = _set_of(exp)
    return bool(_equal_or_close(out, exp, atol))


def _equal_or_close(out: object, exp: object, atol: float) -> object:
    """Both helpers' last step: ``np.allclose(out, exp, rtol=1e-7, atol)`` when ``out != exp``
    and ``atol != 0``, else ``out == exp`` (either result as it comes, a numpy value
    included); False for arrays whose shapes may not be broadcast (see ``_broadcast_ok``)."""
    if _arrays(out, exp) and not _broadcast_ok(out, exp):
        return False
    if out != exp and atol != 0:
        if not _broadcast_ok(out, exp):
            return False
        return np.allclose(out, exp, rtol=_RTOL, atol=atol)  # type: ignore[arg-type]
    return out == exp


def _arrays(a: object, b: object) -> bool:
    """Whether ``a != b`` is numpy's elementwise comparison (one side is an array)."""
    return isinstance(a, np.ndarray) or isinstance(b, np.ndarray)


def _poly(xs: Any, x: Any) -> Any:
    """EvalPlus's ``_poly`` oracle for HumanEval/32: ``sum(coeff * math.pow(x, i))``."""
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def _poly_root_check(out: object, args: Sequence[object], atol: float) -> bool:
    """EvalPlus's find_zero oracle: ``assert abs(_poly(*inp, out)) <= atol`` (HumanEval/32).

    The expected value is ignored. ``math.pow`` rejects non-real roots (complex, str, None,
    arrays of more than one element) and raises OverflowError for huge ones; nan and inf fail
    the ``<=``. ``atol`` is used as given: the caller passes HumanEval+'s ``atol`` (1e-4 for
    HumanEval/32); with ``atol == 0`` only an exact root passes.
    """
    if len(args) != 1:  # ``_poly(*inp, out)`` with another arity raises TypeError
        return False
    return bool(abs(_poly(args[0], out)) <= atol)


def _dataset_match(
    actual: object, expected: object, check: CheckSpec, args: Sequence[object]
) -> bool:
    if check.poly_root:
        return not contains_opaque(actual) and _poly_root_check(actual, args, check.atol)
    if check.never_asserts:
        # MBPP 737, 794: the helper computes ``exact_match`` and never asserts it, so any
        # value the function returns (a ``re.Match``, None, a wrong bool) passes.
        return True
    if compared_by_repr(actual, expected):
        return _repr_match(actual, expected)
    return _dataset_assertion(actual, expected, check.atol, check.set_compare)


def _reference_eval_exact_match(out: object, exp: object, use_set: bool) -> object:
    """The authors' ``eval_exact_match(out, exp, atol=0, use_set)`` (utils.py), quirks included.

    - Both str and ``'error' in out.lower()``: the code then evaluates ``'error' in exp.lower``
      (the method, not called), which raises TypeError; the caller counts a failure even for
      equal strings. No Hard ``results`` contain such strings; generated UTs might.
    - ``atol`` is always 0 on entry (the loop's 1e-4 of MBPP 120/137/293 is ignored); it
      becomes 1e-6 only when the *expected* side is floats (``is_floats``, see above).
    - ``use_set`` (``' set(' in test``: MBPP 7, 232, 579, 769 and 473, where ``set()`` only
      appears in ``results``): ``out = set(out)`` then ``exp = set(exp)`` inside a bare
      ``try``; on failure it silently goes on. If only ``set(exp)`` fails, ``out`` stays a
      set and ``exp`` keeps its type. So MBPP 473's list-of-tuples output matches a ``set``
      of tuples in ``results``, and unhashable outputs fall back to literal comparison.
    - Both str containing ``'Error'`` (capital E, after the set step): True. Unreachable in
      practice: such an ``out`` also contains ``'error'`` in lower case, so the TypeError of
      the first clause wins and ``"Error: a"`` vs ``"Error: a"`` fails.
    - ``np.allclose(out, exp, rtol=1e-7, atol)`` only when ``out != exp`` and ``atol != 0``;
      else ``out == exp``. The truth value of an array ``out != exp`` may raise here.
    """
    if isinstance(out, str) and isinstance(exp, str) and "error" in out.lower():
        raise TypeError("argument of type 'builtin_function_or_method' is not iterable")
    atol = 0.0
    if _is_floats(exp):
        atol = _FLOAT_TOL
    if use_set:
        try:
            out = _set_of(out)
            exp = _set_of(exp)
        except Exception:
            pass
    if isinstance(out, str) and isinstance(exp, str) and "Error" in out and "Error" in exp:
        return True
    return _equal_or_close(out, exp, atol)


def _reference_match(actual: object, expected: object, check: CheckSpec) -> bool:
    """The authors' per-input verdict: ``eval_exact_match`` plus the caller's reduction.

    A result that is not a ``bool`` (a numpy ``bool_`` or array from ``==``) is reduced with
    ``.all()``; if that raises, the input fails. ``never_asserts`` does not apply (MBPP 737/794
    compare the canonical ``re.Match`` with True/False literally and fail), nor ``poly_root``
    (HumanEval/32 compares the root with ``results`` at 1e-6), nor the per-test ``atol``.
    """
    if compared_by_repr(actual, expected):
        return _repr_match(actual, expected)
    result = _reference_eval_exact_match(actual, expected, check.reference_use_set)
    if not isinstance(result, bool):
        result = getattr(result, "all")()  # noqa: B009 - AttributeError means fail, as in the original
    return bool(result)


def outputs_match(
    actual: object,
    expected: object,
    check: CheckSpec,
    semantics: Semantics = Semantics.DATASET,
    args: Sequence[object] = (),
    *,
    sized: bool = False,
) -> bool:
    """Whether the (decoded, plain) return value ``actual`` passes one private test.

    ``expected`` is the dataset's expected value and ``args`` the test's positional arguments
    (only ``poly_root`` reads them). Any exception raised while comparing means failure, as in
    both original harnesses; this function never raises for any value (it raises ValueError only
    for a ``semantics`` that is not a :class:`Semantics`). An :class:`Opaque` anywhere in
    ``actual`` never equals anything; only the DATASET helper of MBPP 737/794, which never
    asserts, passes it. This is a deliberate departure from both originals in one corner: there
    the real object reaches ``np.allclose``, which accepts *anything* against an empty expected
    list or tuple (the ``is_floats([])`` quirk; e.g. MBPP 308, 310, 413, 445, 589, 754).
    A result over the judging budget fails (:func:`budget_applies`, :func:`within_budget`);
    ``sized``: the caller has checked that already.
    """
    mode = Semantics(semantics)
    if not sized and budget_applies(check, mode) and not within_budget(actual, expected):
        return False
    try:
        with np.errstate(all="ignore"):
            if mode is Semantics.REFERENCE:
                return _reference_match(actual, expected, check)
            return _dataset_match(actual, expected, check, args)
    except Exception:
        return False
