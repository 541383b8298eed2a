"""Shared pieces of the learners that start AS a heuristic and learn a correction (``agents.uec.prior``,
``agents.oinc.prior``; the SAC head ``agents.uec.sac_head`` does the same inside SAC).

logit(a) = α·prior(a) + f_θ(features of a): f_θ is one small MLP shared by every action whose last layer
starts at zero, so before training the greedy policy is the heuristic's, decision for decision.
"""

from __future__ import annotations

from torch import nn


def correction_mlp(in_features: int, hidden: int, layers: int) -> nn.Sequential:
    """``layers`` tanh layers of width ``hidden`` and a linear output that is 0 for every input at the start."""
    modules: list[nn.Module] = []
    width = in_features
    for _ in range(layers):
        modules += [nn.Linear(width, hidden), nn.Tanh()]
        width = hidden
    last = nn.Linear(width, 1)
    nn.init.zeros_(last.weight)
    nn.init.zeros_(last.bias)
    return nn.Sequential(*modules, last)
