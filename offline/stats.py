"""Small statistics helpers shared by evaluate.py, the experiments and the tests."""

from __future__ import annotations

import numpy as np
from scipy import stats


def mean_ci95(values: np.ndarray | list[float]) -> tuple[float, float]:
    """Mean and half-width of its two-sided 95 % Student-t confidence interval (0 for a single value)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("mean_ci95 needs at least one value")
    mean = float(x.mean())
    if x.size < 2:
        return mean, 0.0
    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, half
