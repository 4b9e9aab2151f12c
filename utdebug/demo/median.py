"""utdebug's bundled demo: a function with a bug that only some inputs reveal."""


def median(values: list[float]) -> float:
    """Return the median of a non-empty list of numbers (the mean of the two middle
    values when the list has an even length)."""
    s = sorted(values)
    n = len(s)
    return s[n // 2]
