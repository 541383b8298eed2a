"""The UEC baselines of RESCUE's Section VI-A, at the full strength of the paper's wording (uec.md "Baselines").

Every baseline reads the instance (``env.unwrapped.instance``) for R_jkl(t) (the one profit table,
``Instance.expected_profit``), E[d_l] and c_k(t), and acts through ``env.step``. It considers only the SSPs
that keep every reserved task satisfiable, ``info["safe_action_mask"]``: server k idle and its longest
feasible block from now covers profile l's longest duration (the rule ``reserved_priority="mask"``
enforces, given in both modes). The paper says so of PickConfigs ("while ensuring all reserved tasks can
be completed") and of Random ("a valid SSP"); SRS, Sumita and CVS are silent, and we give them the same
check, so no baseline accepts a task the env would later pre-empt for nothing (tested: 0 pre-emptions,
and the same profit as in "mask" mode).

| name          | rule                                                                                    |
|---------------|-----------------------------------------------------------------------------------------|
| ``pickconfigs`` | the safe SSP with the highest R_jkl(t); accept if R > 0 (Ekya's greedy)               |
| ``srs``         | the safe SSP with the highest R_jkl(t)/E[d_l] (profit per expected slot); R > 0        |
| ``sumita``      | server k drawn from y* as RESCUE does (Σ_l y*_jkl(t)/p_j(t), reject with the rest),   |
|                 | then the safe profile on k with the highest R_jkl(t); accept if R > 0, no threshold     |
| ``cvs``         | the safe SSP with the highest R_jkl(t)/(E[d_l]·c̄_k), c̄_k = mean_t c_k(t); R > 0       |
| ``random``      | with probability ½ a uniformly drawn safe SSP, else reject                              |

Ties go to the lowest action index.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs.uec.types import Instance
from offline.registry import register_policy
from offline.uec.policies import ENV_ID, UECPolicy, selection_cdf
from offline.uec.values import rescue_solution


def safe_mask(info: dict[str, Any]) -> np.ndarray:
    """The SSPs that keep every reserved task satisfiable now (UEC-v0's ``info["safe_action_mask"]``)."""
    try:
        return info["safe_action_mask"]
    except KeyError:
        raise ValueError("the UEC baselines need info['safe_action_mask'] (UEC-v0 gives it in both modes)") from None


def _by_time(table: np.ndarray) -> np.ndarray:
    """(J, K, L, T) -> contiguous (T, J, K·L), the layout the policies index with (t, j)."""
    J, K, L, T = table.shape
    return np.ascontiguousarray(table.reshape(J, K * L, T).transpose(2, 0, 1))


class GreedyScorePolicy(UECPolicy):
    """Accept the feasible SSP with the highest score if its profit is positive (reads the instance).

    ``score(instance)`` returns a (J, K, L, T) table ≥ 0 that is positive exactly where R_jkl(t) > 0.
    """

    name = "greedy_score"

    def score(self, instance: Instance) -> np.ndarray:
        raise NotImplementedError

    def _prepare(self, instance: Instance) -> None:
        self._score = _by_time(self.score(instance))

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        scores = np.where(safe_mask(info)[1:] > 0, self._score[info["time"], info["device"]], -1.0)
        best = int(np.argmax(scores))
        return 1 + best if scores[best] > 0 else 0


class PickConfigsPolicy(GreedyScorePolicy):
    """PickConfigs (Ekya): the safe SSP with the highest expected profit R_jkl(t), "while ensuring all reserved
    tasks can be completed" (the paper's words; reads the instance)."""

    name = "pickconfigs"

    def score(self, instance: Instance) -> np.ndarray:
        return instance.expected_profit


class SRSPolicy(GreedyScorePolicy):
    """SRS: the safe SSP with the highest profit per expected slot R_jkl(t)/E[d_l] (reads the instance)."""

    name = "srs"

    def score(self, instance: Instance) -> np.ndarray:
        return instance.expected_profit / instance.mean_duration[None, None, :, None]


class CVSPolicy(GreedyScorePolicy):
    """Cost-Value Selection: the safe SSP with the highest profit per unit of resource,
    R_jkl(t)/(E[d_l]·c̄_k) with c̄_k the server's mean capacity per slot (reads the instance)."""

    name = "cvs"

    def score(self, instance: Instance) -> np.ndarray:
        resource = instance.mean_duration[None, :] * instance.capacity.mean(axis=1)[:, None]  # (K, L)
        return instance.expected_profit / resource[None, :, :, None]


class SumitaPolicy(UECPolicy):
    """Sumita et al.: the server from RESCUE's y* (drawn with Σ_l y*_jkl(t)/p_j(t), reject with the rest),
    then greedily the safe profile with the highest R_jkl(t) on it, with no value threshold
    (reads the instance and RESCUE's cached LP solution)."""

    name = "sumita"

    def _prepare(self, instance: Instance) -> None:
        solution = rescue_solution(instance)
        self._num_servers, self._num_profiles = instance.num_servers, instance.num_profiles
        self._server_cdf = np.ascontiguousarray(selection_cdf(solution.y.sum(axis=2), instance.arrival_prob))
        self._profit = _by_time(instance.expected_profit)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        t, j = info["time"], info["device"]
        server = int(np.searchsorted(self._server_cdf[t, j], self._rng.random(), side="right"))
        if server >= self._num_servers:
            return 0
        span = slice(server * self._num_profiles, (server + 1) * self._num_profiles)
        feasible = safe_mask(info)[1:][span] > 0
        profits = np.where(feasible, self._profit[t, j, span], -1.0)
        best = int(np.argmax(profits))
        return 1 + span.start + best if profits[best] > 0 else 0


class RandomPolicy(UECPolicy):
    """Random: with probability ½ a uniformly drawn safe ("valid") SSP, otherwise reject (reads the instance
    only to check it is a UEC env)."""

    name = "random"

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        if self._rng.random() >= 0.5:
            return 0
        feasible = np.flatnonzero(safe_mask(info)[1:])
        if feasible.size == 0:
            return 0
        return 1 + int(feasible[self._rng.integers(feasible.size)])


BASELINES: dict[str, type[UECPolicy]] = {
    "pickconfigs": PickConfigsPolicy,
    "srs": SRSPolicy,
    "sumita": SumitaPolicy,
    "cvs": CVSPolicy,
    "random": RandomPolicy,
}


def _register(name: str, cls: type[UECPolicy]) -> None:
    @register_policy(ENV_ID, name)
    def factory(env: gym.Env, **kwargs: Any) -> UECPolicy:
        if kwargs:
            raise ValueError(f"{name} takes no options, got {sorted(kwargs)}")
        return cls()

    factory.__doc__ = cls.__doc__


for _name, _cls in BASELINES.items():
    _register(_name, _cls)
