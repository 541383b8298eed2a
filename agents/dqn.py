"""Masked DQN: stable-baselines3's DQN with the action mask applied where it matters.

The mask (contract 6: the last ``mask_dim`` observation entries) is applied (a) in greedy action selection,
(b) in ε-greedy exploration and the warm-up (uniform over the feasible actions) and (c) in the target
``max_a' Q'(s', a')``, which only ranges over actions feasible in s'. All three follow from one change:
the Q-network returns a very negative value for infeasible actions. With ``mask_dim=0`` it is plain SB3 DQN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.type_aliases import PyTorchObs
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork

from agents.masking import FeasibleWarmupMixin, mask_from_obs, sample_feasible
from agents.off_policy import fast_optimizer_kwargs, update_schedule

#: Q-value given to infeasible actions (finite, so no inf − inf or 0 · inf appears in any loss).
INFEASIBLE_Q = -1e9


class MaskedQNetwork(QNetwork):
    """SB3's Q-network whose output is ``INFEASIBLE_Q`` at actions masked out by the observation."""

    def __init__(self, *args: Any, mask_dim: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mask_dim = int(mask_dim)

    def forward(self, obs: PyTorchObs) -> th.Tensor:
        q_values = super().forward(obs)
        feasible = mask_from_obs(obs, self.mask_dim)
        if feasible is None:
            return q_values
        feasible = feasible | ~feasible.any(dim=1, keepdim=True)  # no feasible action: leave all unmasked
        return q_values.masked_fill(~feasible, INFEASIBLE_Q)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "mask_dim": self.mask_dim}


class MaskedDQNPolicy(DQNPolicy):
    """DQN policy building :class:`MaskedQNetwork` (``mask_dim`` trailing observation entries)."""

    def __init__(self, *args: Any, mask_dim: int = 0, **kwargs: Any) -> None:
        self.mask_dim = int(mask_dim)
        kwargs["optimizer_kwargs"] = fast_optimizer_kwargs(kwargs.get("optimizer_class", th.optim.Adam),
                                                           kwargs.get("optimizer_kwargs"))
        super().__init__(*args, **kwargs)

    def make_q_net(self) -> MaskedQNetwork:
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        return MaskedQNetwork(**net_args, mask_dim=self.mask_dim).to(self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "mask_dim": self.mask_dim}


class MaskedDQN(FeasibleWarmupMixin, DQN):
    """SB3 DQN with masked greedy/ε-greedy actions and a masked target max.

    :param mask_dim: trailing observation entries that hold the action mask (0 = none)
    :param update_ratio: gradient steps per env step; when given it sets ``train_freq`` and ``gradient_steps``
    """

    policy_aliases = {"MlpPolicy": MaskedDQNPolicy}

    def __init__(self, policy: Any, env: Any, *args: Any, mask_dim: int = 0, update_ratio: float | None = None,
                 **kwargs: Any) -> None:
        self.mask_dim = int(mask_dim)
        if update_ratio is not None:
            kwargs["train_freq"], kwargs["gradient_steps"] = update_schedule(update_ratio)
        super().__init__(policy, env, *args, **kwargs)

    def _setup_model(self) -> None:
        self.policy_kwargs = {**self.policy_kwargs, "mask_dim": self.mask_dim}
        super()._setup_model()

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Greedy masked action, or with probability ε a uniformly random *feasible* one."""
        if not deterministic and np.random.rand() < self.exploration_rate:  # noqa: NPY002 (SB3 seeds it)
            vectorized = self.policy.is_vectorized_observation(observation)
            obs = np.asarray(observation)
            batch = obs if vectorized else obs[None]
            action = sample_feasible(self.action_space, batch, self.mask_dim)
            return (action if vectorized else action[0]), state
        return self.policy.predict(observation, state, episode_start, deterministic)
