"""A per-action output network for SB3 learners on UEC-v0: one set of weights scores every SSP (k, l).

A flat MLP over UEC-v0's observation must learn separately, for each of the K·L output units, that
"server k with profile l" is worth the profit in entry ``ssp_profit[k·L + l]``. Here the score of SSP
(k, l) is one MLP applied to (the state, server k's features and budget, SSP (k, l)'s profit and duration
[and, with LPFeatures, A_jkl(t) and B_k(t+1)]), so what is learnt for one SSP holds for all of them (the
state enters through the mean and max of the servers' features: relabelling servers relabels their
scores); the reject action has its own MLP over the whole observation. The first layer is split by what its inputs
depend on (state / server / SSP), so it costs B·H + B·K·H + B·K·L·H multiply-adds instead of
B·K·L·(all inputs)·H.

**Starting as the strongest heuristic.** Under ``offline.uec.features.NetScoreFeatures`` the observation
carries, per SSP, the net score that ``lp_bid_price`` maximises (R − LP-dual bid price, / max R; −1 where the
heuristic may not choose). The head then adds ``w·score`` to each SSP's output (w = exp(log w) learnt, from
``prior_scale``) and its last layers start at zero: the untrained actor's greedy action is the heuristic's,
argmax of w·score against reject's 0, and SAC learns a correction instead of the whole policy. The critics
start from the same term (Q(s, SSP) − Q(s, reject) ≈ net score is what the bid price estimates).

Used by :class:`agents.sac.DiscreteSAC` (and MaskedDQN) through ``policy_kwargs.head``; the env's
observation layout is filled in by :meth:`UECActionScorer.kwargs_for_env`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import create_mlp
from torch import nn

from envs.uec.env import ObservationLayout


class UECActionScorer(nn.Module):
    """Observation ``[B, D]`` → one output per action ``[B, 1 + K·L]`` (logits for an actor, Q for a critic).

    :param features_dim: observation size (the flat UEC-v0 observation; checked against the layout)
    :param n_outputs: 1 + K·L
    :param net_arch: hidden sizes; the first is the width of the per-SSP embedding
    :param num_servers, num_devices, num_profiles, lp_features, score_features: the env's
        :class:`ObservationLayout`
    :param prior_scale: initial w of the ``w·score`` term (only with ``score_features``; logits per unit of
        score / max R)
    """

    def __init__(self, features_dim: int, n_outputs: int, net_arch: list[int], activation_fn: type[nn.Module],
                 num_servers: int, num_devices: int, num_profiles: int, lp_features: bool = False,
                 score_features: bool = False, prior_scale: float = 10.0) -> None:
        super().__init__()
        if not prior_scale > 0:
            raise ValueError(f"prior_scale={prior_scale!r} is invalid: expected a number > 0")
        self.layout = ObservationLayout(num_servers, num_devices, num_profiles, lp_features, score_features)
        kl = num_servers * num_profiles
        if self.layout.size != features_dim or n_outputs != 1 + kl:
            raise ValueError(f"UECActionScorer for layout {self.layout} expects {self.layout.size} observation "
                             f"entries and {1 + kl} actions; got {features_dim} and {n_outputs}")
        hidden = list(net_arch) or [64]
        width = hidden[0]
        self.slices = self.layout.slices
        state_dim = 2 + num_devices + 2 + 10  # time, device, task (w, a), mean and max of the servers' features
        self.state_in = nn.Linear(state_dim, width)
        self.server_in = nn.Linear(6 + int(lp_features), width, bias=False)  # budget, 5 features (+ B_k)
        # profit, duration (+ A_jkl) (+ net score)
        self.ssp_in = nn.Linear(2 + int(lp_features) + int(score_features), width, bias=False)
        self.activation = activation_fn()
        self.body = nn.Sequential(*create_mlp(width, 1, hidden[1:], activation_fn))
        self.reject = nn.Sequential(*create_mlp(features_dim, 1, hidden, activation_fn))
        if score_features:  # start as the heuristic: the learnt parts output 0
            self.register_buffer("prior_scale", th.tensor(float(prior_scale)))
            self.log_prior = nn.Parameter(th.tensor(float(np.log(prior_scale))))
            for net in (self.body, self.reject):
                nn.init.zeros_(net[-1].weight)
                nn.init.zeros_(net[-1].bias)

    @staticmethod
    def kwargs_for_env(env: Any) -> dict[str, Any]:
        """The layout arguments of ``env`` (any wrapper of UEC-v0 exposing ``layout``)."""
        layout = env.get_wrapper_attr("layout") if hasattr(env, "get_wrapper_attr") else env.layout
        return {"num_servers": layout.num_servers, "num_devices": layout.num_devices,
                "num_profiles": layout.num_profiles, "lp_features": layout.lp_features,
                "score_features": layout.score_features}

    @property
    def has_prior(self) -> bool:
        """Whether :meth:`prior_logits` exists (the observation carries the heuristic's scores)."""
        return self.layout.score_features

    def prior_logits(self, obs: th.Tensor) -> th.Tensor:
        """``[B, 1 + K·L]`` the fixed prior the head starts as: 0 for reject, ``prior_scale·score`` per SSP
        (SAC keeps its policy near it by a KL penalty, :class:`agents.sac.DiscreteSAC`'s ``target_kl``)."""
        score = obs[:, self.slices["score"]]
        return th.cat([th.zeros_like(score[:, :1]), self.prior_scale * score], dim=1)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        sl, batch = self.slices, obs.shape[0]
        k, l_ = self.layout.num_servers, self.layout.num_profiles
        task, servers = obs[:, sl["task"]], obs[:, sl["servers"]]
        per_server = servers.reshape(batch, k, 5)
        state = th.cat([obs[:, sl["time"]], obs[:, sl["device"]], task[:, :2], per_server.mean(dim=1),
                        per_server.amax(dim=1)], dim=1)
        server = [task[:, 2:].unsqueeze(-1), per_server]
        ssp = [obs[:, sl["ssp_profit"]].reshape(batch, k, l_, 1), obs[:, sl["ssp_duration"]].reshape(batch, k, l_, 1)]
        if self.layout.lp_features:
            lp = obs[:, sl["lp"]]
            ssp.append(lp[:, : k * l_].reshape(batch, k, l_, 1))
            server.append(lp[:, k * l_:].unsqueeze(-1))
        if self.layout.score_features:
            ssp.append(obs[:, sl["score"]].reshape(batch, k, l_, 1))
        h = (self.state_in(state)[:, None, None, :] + self.server_in(th.cat(server, dim=-1))[:, :, None, :]
             + self.ssp_in(th.cat(ssp, dim=-1)))
        scores = self.body(self.activation(h)).reshape(batch, k * l_)
        if self.layout.score_features:
            scores = scores + self.log_prior.exp() * obs[:, sl["score"]]
        return th.cat([self.reject(obs), scores], dim=1)
