"""Our strong UEC-v0 heuristics (rung 3 of the reference ladder) — OURS, not from the RESCUE paper.

All three price what an assignment consumes and take the safe SSP with the best profit net of that price:

| name                  | score of SSP (k, l) for device j at slot t                                      |
|-----------------------|---------------------------------------------------------------------------------|
| ``opportunity_greedy``  | R_jkl(t) − λ·W_kl(t), W = expected tera-MAC the task holds on k within the horizon |
| ``value_bid_price``     | R_jkl(t) − θ·(B_k(t+1) − Σ_d Pr(d_l = d)·B_k(t+d)), B from RESCUE's value functions |
| ``lp_bid_price``        | R_jkl(t) − θ·Σ_s S_l(s)·μ_k(t+s−1), μ the duals of P1-LP's capacity rows (3b)         |

A task is accepted on the best-scoring SSP if its score is positive (and R > 0), else rejected. Like the
paper's baselines they consider only the SSPs of ``info["safe_action_mask"]`` (server idle and its reserved
tasks stay satisfiable for the profile's longest duration), so they are never pre-empted. All are
deterministic. They read the instance (``env.unwrapped.instance``) for R_jkl(t), the duration pmf and the
capacities; ``value_bid_price`` also reads RESCUE's cached offline solution (``offline.uec.values``) and
``lp_bid_price`` the duals of the same LP (``offline.uec.duals``, one more HiGHS solve per instance).

``lp_bid_price`` is the one that adapts to the load: its prices are zero where the LP leaves capacity idle and
grow with the load, so one θ (tuned at mean arrival probabilities 0.2, 0.45 and 0.9 at once) serves them all;
λ of ``opportunity_greedy`` is a fixed price, best near 0.003 at P̄ = 0.2 and above 0.015 at P̄ = 0.9.

Their parameters (λ, θ) are tuned by ``python -m offline.tuning env=UEC-v0 policy=<name>`` on the tuning
instances (``offline.partition``) and read from ``offline/uec/tuned.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.uec.types import Instance
from offline.ladder_spec import tuned_params
from offline.registry import register_policy
from offline.uec.baselines import safe_mask
from offline.uec.duals import capacity_duals, ssp_bid_prices
from offline.uec.policies import ENV_ID, UECPolicy
from offline.uec.values import rescue_solution

__all__ = [
    "LP_BID_DEFAULTS",
    "OPPORTUNITY_DEFAULTS",
    "VALUE_BID_DEFAULTS",
    "LPBidPricePolicy",
    "NetScoreGreedyPolicy",
    "OpportunityGreedyPolicy",
    "ValueBidPricePolicy",
    "expected_work",
    "value_opportunity_cost",
]

_PACKAGE = Path(__file__).parent
#: Untuned defaults (tuned.yaml overrides them): λ in profit units per tera-MAC, θ dimensionless.
OPPORTUNITY_DEFAULTS: dict[str, Any] = {"price": 0.01}
VALUE_BID_DEFAULTS: dict[str, Any] = {"scale": 1.0}
LP_BID_DEFAULTS: dict[str, Any] = {"scale": 1.0}


def _by_time(table: np.ndarray) -> np.ndarray:
    """(J, K, L, T) -> contiguous (T, J, K·L), the layout the policies index with (t, j)."""
    J, K, L, T = table.shape
    return np.ascontiguousarray(table.reshape(J, K * L, T).transpose(2, 0, 1))


def expected_work(instance: Instance) -> np.ndarray:
    """(K, L, T) W_kl(t) = Σ_d Pr(d_l = d)·(C_k[min(t + d, T)] − C_k[t]): the expected capacity (tera-MAC)
    a task started at t on (k, l) holds inside the horizon (capacity past T serves no later arrival)."""
    T = instance.horizon
    cum = instance.cumulative_capacity[:, : T + 1]  # (K, T + 1)
    pmf = instance.duration_pmf  # (L, D)
    D = pmf.shape[1]
    starts = np.arange(T)
    ends = np.minimum(starts[:, None] + np.arange(1, D + 1)[None, :], T)  # (T, D)
    held = cum[:, ends] - cum[:, starts][:, :, None]  # (K, T, D)
    return np.einsum("ktd,ld->klt", held, pmf, optimize=True)


def value_opportunity_cost(instance: Instance) -> np.ndarray:
    """(K, L, T) B_k(t+1) − Σ_d Pr(d_l = d)·B_k(t+d): what RESCUE's value functions say blocking server k
    from t for a duration of profile l costs in future profit (A_jkl(t) − B_k(t+1) = R_jkl(t) − this)."""
    solution = rescue_solution(instance)
    profit = instance.expected_profit
    cost = profit[0] - solution.activation[0] + solution.baseline[:, None, 1:]  # j-independent; (K, L, T)
    return np.maximum(cost, 0.0)


class NetScoreGreedyPolicy(UECPolicy):
    """Base of our greedies: the safe SSP maximising R_jkl(t) − cost_kl(t); accept if that is > 0. ``weight``
    (named ``weight_name`` in errors) scales the price each subclass computes."""

    name = "net_score_greedy"
    weight_name = "weight"

    def __init__(self, weight: float) -> None:
        super().__init__()
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(f"{self.weight_name}={weight!r} is invalid: expected a finite number >= 0")
        self.weight = float(weight)

    def cost(self, instance: Instance) -> np.ndarray:
        """(K, L, T) the price charged for an assignment."""
        raise NotImplementedError

    def _prepare(self, instance: Instance) -> None:
        profit = instance.expected_profit
        cost = self.cost(instance)
        net = profit - cost[None]
        self._net = _by_time(np.where(profit > 0, net, -1.0))
        self._candidate = _by_time(np.broadcast_to(profit > 0, profit.shape))
        K, L, T = cost.shape
        self._price = np.ascontiguousarray(cost.reshape(K * L, T).T)  # (T, K·L)

    def scores(self, info: dict[str, Any]) -> np.ndarray:
        """(K·L,) what :meth:`act` maximises at this decision: R_jkl(t) − cost_kl(t) for each safe SSP with
        R > 0, −1 elsewhere (exposed for learners that start from this policy, ``agents.uec.prior``)."""
        return np.where(safe_mask(info)[1:] > 0, self._net[info["time"], info["device"]], -1.0)

    def net_scores(self, info: dict[str, Any]) -> np.ndarray:
        """(K·L,) R_jkl(t) − cost_kl(t) of every SSP with R > 0, safe or not; −1 where R ≤ 0."""
        return self._net[info["time"], info["device"]]

    def useful(self, info: dict[str, Any]) -> np.ndarray:
        """(K·L,) bool: the SSPs the env allows now with R_jkl(t) > 0, including those reserved work may pre-empt
        (the action set of the rollout reference ``uec_rollout_preempt`` and of learners that imitate it)."""
        return (np.asarray(info["action_mask"])[1:] > 0) & self._candidate[info["time"], info["device"]]

    def candidates(self, info: dict[str, Any]) -> np.ndarray:
        """(K·L,) bool: the SSPs :meth:`act` may choose (safe and R_jkl(t) > 0)."""
        return (safe_mask(info)[1:] > 0) & self._candidate[info["time"], info["device"]]

    def prices(self, info: dict[str, Any]) -> np.ndarray:
        """(K·L,) the price cost_kl(t) charged for each SSP at this decision's slot."""
        return self._price[info["time"]]

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        scores = self.scores(info)
        best = int(np.argmax(scores))
        return 1 + best if scores[best] > 0 else 0


class OpportunityGreedyPolicy(NetScoreGreedyPolicy):
    """Ours: opportunity-cost greedy with one price λ per tera-MAC of capacity the task is expected to hold
    within the horizon, R_jkl(t) − λ·W_kl(t) (reads the instance). λ = 0 is PickConfigs."""

    name = "opportunity_greedy"

    weight_name = "price"

    @property
    def price(self) -> float:
        return self.weight

    def cost(self, instance: Instance) -> np.ndarray:
        return self.price * expected_work(instance)


class ValueBidPricePolicy(NetScoreGreedyPolicy):
    """Ours: bid-price control on RESCUE's value functions, deterministic: the safe SSP maximising
    R_jkl(t) − θ·(B_k(t+1) − E[B_k(t+d_l)]) (θ = 1: A_jkl(t) − B_k(t+1), Alg. 1's test without its random
    draw of the SSP). Reads the instance and RESCUE's cached offline solution."""

    name = "value_bid_price"

    weight_name = "scale"

    @property
    def scale(self) -> float:
        return self.weight

    def cost(self, instance: Instance) -> np.ndarray:
        return self.scale * value_opportunity_cost(instance)


class LPBidPricePolicy(NetScoreGreedyPolicy):
    """Ours: bid-price control on the duals of RESCUE's P1-LP: the safe SSP maximising
    R_jkl(t) − θ·Σ_s S_l(s)·μ_k(t+s−1), μ_k(t) the dual price of server k's capacity row at slot t
    (``offline.uec.duals``). The prices follow the load by construction (zero where the LP leaves capacity
    idle, so θ = 0 or a slack instance is PickConfigs). Reads the instance and solves P1-LP once per instance."""

    name = "lp_bid_price"

    weight_name = "scale"

    @property
    def scale(self) -> float:
        return self.weight

    def cost(self, instance: Instance) -> np.ndarray:
        return self.scale * ssp_bid_prices(instance, capacity_duals(instance))


@register_policy(ENV_ID, "opportunity_greedy")
def make_opportunity_greedy(env: gym.Env, price: float | None = None) -> OpportunityGreedyPolicy:
    """Ours: opportunity-cost greedy, R − λ·(expected tera-MAC held); λ from tuned.yaml by default."""
    params = tuned_params(_PACKAGE, "opportunity_greedy", OPPORTUNITY_DEFAULTS)
    return OpportunityGreedyPolicy(params["price"] if price is None else price)


@register_policy(ENV_ID, "value_bid_price")
def make_value_bid_price(env: gym.Env, scale: float | None = None) -> ValueBidPricePolicy:
    """Ours: bid-price control on RESCUE's value functions, R − θ·(B_k(t+1) − E[B_k(t+d)]); θ from tuned.yaml."""
    params = tuned_params(_PACKAGE, "value_bid_price", VALUE_BID_DEFAULTS)
    return ValueBidPricePolicy(params["scale"] if scale is None else scale)


@register_policy(ENV_ID, "lp_bid_price")
def make_lp_bid_price(env: gym.Env, scale: float | None = None) -> LPBidPricePolicy:
    """Ours: bid-price control on P1-LP's capacity duals, R − θ·Σ_s S_l(s)·μ_k(t+s−1); θ from tuned.yaml."""
    params = tuned_params(_PACKAGE, "lp_bid_price", LP_BID_DEFAULTS)
    return LPBidPricePolicy(params["scale"] if scale is None else scale)
