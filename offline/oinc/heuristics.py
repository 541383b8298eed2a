"""Our strong OINC-v0 heuristic (rung 3 of the ladder; ours, not from the paper): ``slo_liu``.

``slo_liu`` keeps Liu's assignment (least total latency of the KKT split, ``offline.oinc.policies.LiuPolicy``)
and the square-root bandwidth split, but splits each edge's inference compute **SLO first**: the tasks that
can still meet their SLO after the upload are admitted cheapest first while their needs
c_i / (SLO_i - upload_i), times (1 + ``slo_margin``) for the rounding to the four share levels, fit into the
edge's inference capacity f_j^t f_j; they get their needs and the rest of the edge is split in proportion to
sqrt(c) among all of the edge's tasks. Meeting more SLOs with the same compute lets the retraining side take a
larger share before the hit rate falls below the ladder's threshold.

The ladder's rung-3 pair is ``slo_liu+<controller>`` (``PAIR``) with a tuned ``retraining_share`` (the
controller's share, routed to the pair's env by ``offline.oinc.evaluation``) and a tuned ``slo_margin``; both
are read from ``offline/oinc/tuned.yaml`` (``tuned_pair_kwargs``) by default wherever the pair's name is played
(``pair_defaults``; explicit kwargs override them). The policy reads ``env.unwrapped.instance``,
the current tasks and f_j^t, and acts only through ``env.step``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.oinc import dynamics as dyn
from offline.ladder_spec import tuned_params
from offline.oinc.policies import ENV_ID, LiuPolicy
from offline.oinc.slot import current_slot, slot_rewards
from offline.registry import register_policy

__all__ = ["DEFAULTS", "LS_PAIR", "PAIR", "TUNED_PAIRS", "SloLiuLocalSearchPolicy", "SloLiuPolicy", "pair_defaults",
           "tuned_pair_kwargs"]

#: The rung-3 pair (inference policy + retraining controller), the name ``offline.oinc.evaluation`` accepts.
PAIR = "slo_liu+ekya"
#: The same pair with ``slo_liu_ls`` (``SloLiuLocalSearchPolicy``), at ``PAIR``'s tuned share and margin.
LS_PAIR = "slo_liu_ls+ekya"
#: Untuned values: the controller's retraining share (its cap for aret/kalmia, its fixed share otherwise)
#: and the safety margin on the SLO needs.
DEFAULTS: dict[str, Any] = {"retraining_share": 0.8, "slo_margin": 0.3}


def tuned_pair_kwargs(pair: str = PAIR) -> dict[str, Any]:
    """``pair``'s kwargs from ``tuned.yaml``: the retraining share goes to the pair's env, ``slo_margin`` to the
    policy factory. Where ``pair`` has no entry: ``PAIR``'s tuned values, then ``DEFAULTS``."""
    folder = Path(__file__).parent
    base = tuned_params(folder, PAIR, DEFAULTS)
    return base if pair == PAIR else tuned_params(folder, pair, base)


#: The pairs with tuned values (each a ``TuningSpec`` of ``offline.oinc.ladder``).
TUNED_PAIRS = (PAIR, LS_PAIR)


def pair_defaults(label: str) -> dict[str, Any]:
    """The default kwargs of the pair ``label`` wherever it is played (evaluate.py, the ladder, tuning, score):
    its tuned values for a pair of ``TUNED_PAIRS``, else none. Explicit kwargs override them, so the name
    ``slo_liu+ekya`` means one policy (its tuned retraining share and margin) everywhere."""
    if label == "oinc_rollout+ekya":  # the online reference (offline.oinc.online) at the local-search pair's values
        return tuned_pair_kwargs(LS_PAIR)
    return tuned_pair_kwargs(label) if label in TUNED_PAIRS else {}


class SloLiuPolicy(LiuPolicy):
    """Ours: Liu's assignment with an SLO-first compute split inside each edge (module docstring)."""

    name = "slo_liu"

    def __init__(self, slo_margin: float = DEFAULTS["slo_margin"], passes: int = 2) -> None:
        super().__init__(passes=passes)
        if not 0.0 <= slo_margin <= 5.0:
            raise ValueError(f"slo_margin={slo_margin!r} is invalid: expected a number in [0, 5]")
        self.slo_margin = float(slo_margin)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        edge, z, v = self.plan()
        return self.env.action_from_shares(edge, z, v)

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        edge, z_sqrt, v = super().plan()
        inst, env = self.env.instance, self.env
        d, c = env.current_tasks
        rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
        window = dyn.compute_window_s(inst.slo_s, dyn.transmission_time(d, rate, v))
        savable = window < dyn.SLOT_S  # compute_window_s gives 1 slot to tasks that cannot meet their SLO
        capacity = env.inference_share * inst.cpu_hz
        need = (1.0 + self.slo_margin) * c / window
        share = np.zeros(inst.num_devices)
        for j in np.unique(edge):
            on_j = np.flatnonzero(edge == j)
            cand = on_j[savable[on_j]]
            cand = cand[np.argsort(need[cand], kind="stable")]
            fits = cand[np.cumsum(need[cand]) <= capacity[j]]
            share[fits] = need[fits] / capacity[j]
            rest = max(1.0 - share[on_j].sum(), 0.0)
            share[on_j] += rest * z_sqrt[on_j]
        return edge, np.maximum(share, 1e-9), v


class SloLiuLocalSearchPolicy(SloLiuPolicy):
    """Ours: ``slo_liu``'s action improved by best-improvement local search on the slot's own reward.

    Every step tries each single-head change (one device's edge, compute level or bandwidth level: I(J + 2W)
    candidates), scores all of them at once with eq. (4)'s exact slot reward (``offline.oinc.slot``) and takes
    the best, until none improves or ``max_moves`` steps. The slot reward is exact under a controller without a
    pause rule (Ekya, Dedas, Zhang): there an inference action changes nothing after its slot. Never worse than
    ``slo_liu`` on the slot's reward.
    """

    name = "slo_liu_ls"

    def __init__(self, slo_margin: float = DEFAULTS["slo_margin"], passes: int = 2, max_moves: int = 100) -> None:
        super().__init__(slo_margin=slo_margin, passes=passes)
        if isinstance(max_moves, bool) or not isinstance(max_moves, int) or max_moves < 0:
            raise ValueError(f"max_moves={max_moves!r} is invalid: expected an integer >= 0")
        self.max_moves = max_moves
        self.last_moves = 0
        self._neighbours: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}  # by (3I, J)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        action = np.asarray(super().act(obs, info), dtype=np.int64)
        key = (action.size, self.env.instance.num_edges)
        if key not in self._neighbours:
            self._neighbours[key] = single_head_changes(*key)
        action, self.last_moves = local_search(current_slot(self.env, action), action, *self._neighbours[key],
                                               self.max_moves)
        return action


def single_head_changes(heads: int, num_edges: int) -> tuple[np.ndarray, np.ndarray]:
    """(head, choice) of every single-head change of a flat action of ``heads`` heads: edges 0..J-1 for edge heads
    (h % 3 == 0), levels for the others."""
    options = [np.arange(num_edges if h % 3 == 0 else dyn.NUM_LEVELS) for h in range(heads)]
    return np.concatenate([np.full(o.size, h) for h, o in enumerate(options)]), np.concatenate(options)


def local_search(slot: Any, action: np.ndarray, heads: np.ndarray, choices: np.ndarray,
                 max_moves: int) -> tuple[np.ndarray, int]:
    """``slo_liu_ls``'s search from ``action`` on ``slot`` (:class:`SloLiuLocalSearchPolicy`): best-improvement
    single-head moves on the exact slot reward; returns (the action, the moves made)."""
    rows = np.arange(heads.size)
    best = float(slot_rewards(slot, action[None])[0])
    moves = 0
    while moves < max_moves:
        candidates = np.repeat(action[None], heads.size, axis=0)
        candidates[rows, heads] = choices
        rewards = slot_rewards(slot, candidates)
        k = int(np.argmax(rewards))
        if not rewards[k] > best + 1e-12 * max(abs(best), 1.0):
            break
        action, best = candidates[k], float(rewards[k])
        moves += 1
    return action, moves


@register_policy(ENV_ID, "slo_liu")
def _slo_liu(env: gym.Env, slo_margin: float | None = None, passes: int = 2, **kwargs: Any) -> SloLiuPolicy:
    margin = tuned_pair_kwargs()["slo_margin"] if slo_margin is None else slo_margin
    return SloLiuPolicy(slo_margin=margin, passes=passes)


@register_policy(ENV_ID, "slo_liu_ls")
def _slo_liu_ls(env: gym.Env, slo_margin: float | None = None, passes: int = 2, max_moves: int = 100,
                **kwargs: Any) -> SloLiuLocalSearchPolicy:
    margin = tuned_pair_kwargs(LS_PAIR)["slo_margin"] if slo_margin is None else slo_margin
    return SloLiuLocalSearchPolicy(slo_margin=margin, passes=passes, max_moves=max_moves)
