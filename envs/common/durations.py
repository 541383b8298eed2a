"""Discrete duration distributions on {1, ..., d_cap}: the four families of RESCUE's Fig. 8.

Each family is parameterised by its mean μ (slots). Continuous laws are discretised by rounding to
the nearest slot (mass of [d - ½, d + ½)) on {1, ..., ⌈3μ⌉}, renormalised, and the tail beyond the
99.9 % quantile is cut off (``TAIL_MASS``): a retraining profile has a hard longest duration, which is
what the env's reserved-task mask must block for, and a far tail of mass 1e-9 would otherwise set it
(⌈3μ⌉ for the normal family instead of ≈ 1.8μ). The families:

* ``normal``: N(μ, (0.25μ)²);
* ``uniform``: uniform on {⌈0.5μ⌉, ..., ⌊1.5μ⌋} (at least {1});
* ``bimodal``: ½·N(0.6μ, (0.1μ)²) + ½·N(1.4μ, (0.1μ)²);
* ``heavy_tail``: log-normal with σ = 1 whose location is solved so that the *discretised,
  truncated* pmf has mean μ (truncation at 3μ would otherwise lower the mean by ~15 %).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from envs.common.validation import check_choice, check_in_range

DURATION_FAMILIES: tuple[str, ...] = ("normal", "uniform", "bimodal", "heavy_tail")

#: σ of the log-normal used by the ``heavy_tail`` family.
HEAVY_TAIL_SIGMA = 1.0
#: Probability mass cut from the upper tail (durations beyond the 99.9 % quantile never occur).
TAIL_MASS = 1e-3


def support_cap(mean: float) -> int:
    """Largest duration any family may reach at this mean: ⌈3μ⌉ (before the tail cut)."""
    return max(1, math.ceil(3.0 * mean - 1e-9))


def _rounded_mass(cdf, cap: int) -> np.ndarray:
    """Mass of each integer d ∈ {1..cap} under rounding: F(d + ½) - F(d - ½), renormalised."""
    edges = np.arange(0.5, cap + 1.0, 1.0)
    mass = np.diff(cdf(edges))
    total = mass.sum()
    if not total > 0:
        raise ValueError("duration pmf has no mass on its support")
    return mass / total


def _normal_cdf(mean: float, std: float):
    return lambda x: ndtr((x - mean) / std)


def cut_tail(pmf: np.ndarray, tail_mass: float = TAIL_MASS) -> np.ndarray:
    """Drop the durations beyond the (1 - tail_mass)-quantile and renormalise."""
    last = int(np.searchsorted(np.cumsum(pmf), 1.0 - tail_mass - 1e-12)) + 1
    kept = pmf[: min(last, pmf.size)]
    return kept / kept.sum()


def duration_pmf(family: str, mean: float) -> np.ndarray:
    """Pmf over durations 1..d_max (index 0 is duration 1) of ``family`` with mean ``mean`` slots,
    d_max ≤ ⌈3μ⌉ being its 99.9 % quantile (the heavy tail keeps the whole ⌈3μ⌉ support)."""
    return cut_tail(_untruncated_pmf(family, mean))


def _untruncated_pmf(family: str, mean: float) -> np.ndarray:
    check_choice("duration_family", family, DURATION_FAMILIES)
    check_in_range("mean duration", mean, 1.0, 1e4)
    cap = support_cap(mean)
    if family == "normal":
        return _rounded_mass(_normal_cdf(mean, 0.25 * mean), cap)
    if family == "uniform":
        lo = max(1, math.ceil(0.5 * mean - 1e-9))
        hi = max(lo, math.floor(1.5 * mean + 1e-9))
        pmf = np.zeros(cap)
        pmf[lo - 1 : hi] = 1.0 / (hi - lo + 1)
        return pmf
    if family == "bimodal":
        low, high = _normal_cdf(0.6 * mean, 0.1 * mean), _normal_cdf(1.4 * mean, 0.1 * mean)
        return _rounded_mass(lambda x: 0.5 * low(x) + 0.5 * high(x), cap)

    sigma = HEAVY_TAIL_SIGMA

    def lognormal_pmf(location: float) -> np.ndarray:
        return _rounded_mass(lambda x: ndtr((np.log(x) - location) / sigma), cap)

    support = np.arange(1, cap + 1)

    def mean_error(location: float) -> float:
        return float(lognormal_pmf(location) @ support) - mean

    low, high = math.log(mean) - 3.0, math.log(mean) + 3.0
    if mean_error(low) >= 0.0:  # μ ≈ 1: the smallest mean the support allows is already above μ
        return lognormal_pmf(low)
    return lognormal_pmf(brentq(mean_error, low, high, xtol=1e-12))


def duration_table(family: str, means: np.ndarray) -> np.ndarray:
    """Pmfs of several means stacked into an (L, D) array, zero-padded to the largest support D."""
    pmfs = [duration_pmf(family, float(m)) for m in means]
    table = np.zeros((len(pmfs), max(p.size for p in pmfs)))
    for row, pmf in enumerate(pmfs):
        table[row, : pmf.size] = pmf
    return table


def survival(pmf_table: np.ndarray) -> np.ndarray:
    """Pr(d ≥ s) for s = 1..D along the last axis (index 0 is s = 1, which is 1)."""
    tail = np.cumsum(pmf_table[..., ::-1], axis=-1)[..., ::-1]
    return np.clip(tail, 0.0, 1.0)
