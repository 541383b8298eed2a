"""Argument checks that raise ValueError naming the parameter and its allowed values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def check_bool(name: str, value: Any) -> bool:
    """Raise ValueError unless ``value`` is a bool (Python or numpy); return it as a Python bool.

    Strings such as ``"false"`` are rejected rather than read as truthy.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} is invalid: expected True or False")
    return bool(value)


def check_seed(name: str, value: Any, *, allow_none: bool = True) -> int | None:
    """Raise ValueError unless ``value`` is a non-negative integer seed (or None if ``allow_none``).

    Python and numpy integers are accepted (returned as a Python int); bools, floats and strings are not.
    """
    if value is None and allow_none:
        return None
    allowed = "a non-negative integer" + (" or None" if allow_none else "")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}={value!r} is invalid: expected {allowed}")
    if value < 0:
        raise ValueError(f"{name}={value!r} is out of range: expected {allowed}")
    return int(value)


def check_reset_options(options: Any, valid: Iterable[str]) -> dict[str, Any]:
    """``reset``'s ``options`` as a new dict; ValueError naming unknown keys and listing the valid ones."""
    allowed = sorted(valid)
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"options={options!r} is invalid: expected None or a dict with keys among {allowed}")
    unknown = sorted((key for key in options if key not in allowed), key=repr)
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; valid options: {allowed}")
    return dict(options)


def check_discrete_action(action: Any, n: int, names: Iterable[str] | None = None) -> int:
    """A Discrete(n) action as a Python int: an int, numpy integer or 0-d integer array in [0, n).

    Anything else (bools, floats — even integral ones —, strings, arrays of another shape) raises
    ValueError naming ``action`` and the allowed values (``names`` lists what each action means).
    """
    if type(action) is int and 0 <= action < n:  # the fast path of every step
        return action
    ok = (
        (isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)))
        or (isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer))
    ) and 0 <= int(action) < n
    if not ok:
        meaning = f" ({', '.join(names)})" if names is not None else ""
        raise ValueError(f"action={action!r} is invalid: expected an integer in [0, {n - 1}]{meaning}")
    return int(action)

