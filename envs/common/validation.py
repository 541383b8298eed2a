"""Argument checks that raise ValueError naming the parameter and its allowed values."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np


def check_in_range(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    integer: bool = False,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> None:
    """Raise ValueError unless ``low <= value <= high`` (bounds optionally exclusive; optionally integer)."""
    lo_br, hi_br = ("[" if low_inclusive else "("), ("]" if high_inclusive else ")")
    kind = "an integer" if integer else "a number"
    allowed = f"{kind} in {lo_br}{low}, {high}{hi_br}"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}={value!r} is invalid: expected {allowed}")
    if integer and not float(value).is_integer():
        raise ValueError(f"{name}={value!r} is invalid: expected {allowed}")
    if not np.isfinite(value):
        raise ValueError(f"{name}={value!r} is invalid: expected {allowed}")
    below = value < low if low_inclusive else value <= low
    above = value > high if high_inclusive else value >= high
    if below or above:
        raise ValueError(f"{name}={value!r} is out of range: expected {allowed}")


def check_interval(name: str, value: Any, low: float, high: float) -> tuple[float, float]:
    """Check a ``(lo, hi)`` pair with ``low <= lo <= hi <= high`` and return it as floats."""
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is invalid: expected a pair (lo, hi) within [{low}, {high}]") from None
    if not (low <= lo <= hi <= high):
        raise ValueError(f"{name}={value!r} is out of range: expected a pair (lo, hi) with {low} <= lo <= hi <= {high}")
    return lo, hi


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Raise ValueError unless ``value`` is one of ``choices``."""
    allowed = list(choices)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is invalid: expected one of {allowed}")
    return value
