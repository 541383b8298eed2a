"""What DiscreteSAC and MaskedDQN share beyond SB3: the update ratio and a fast optimiser setting."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import torch as th


def update_schedule(update_ratio: float) -> tuple[int, int]:
    """(train_freq, gradient_steps) giving ``update_ratio`` gradient steps per env step.

    0.25 → one gradient step every 4 env steps; 2 → two per env step; 1.5 → three every two. The ratio is
    approximated by a fraction with denominator ≤ 16.
    """
    if not update_ratio > 0:
        raise ValueError(f"update_ratio={update_ratio} is invalid: expected a number > 0 (gradient steps per env step)")
    fraction = Fraction(update_ratio).limit_denominator(16)
    if fraction == 0:
        raise ValueError(f"update_ratio={update_ratio} is below 1/16: expected a number >= 0.0625")
    return fraction.denominator, fraction.numerator


def fast_optimizer_kwargs(optimizer_class: type[th.optim.Optimizer], kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``kwargs`` with ``fused=True`` for Adam/AdamW unless the caller chose ``fused`` or ``foreach``.

    The fused kernel updates every parameter in one call; on this project's 2-core CPU machine it makes an
    Adam step of a 256-256 MLP about 5x cheaper than the default per-tensor loop (same arithmetic).
    """
    kwargs = dict(kwargs or {})
    if optimizer_class in (th.optim.Adam, th.optim.AdamW) and "fused" not in kwargs and "foreach" not in kwargs:
        kwargs["fused"] = True
    return kwargs
