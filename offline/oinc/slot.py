"""One OINC-v0 slot as arrays, and the exact slot reward of any joint inference action in it, batched.

Under a controller whose retraining share does not depend on the inference action (Ekya, Dedas, Zhang: no
pause rule), an inference action changes nothing after its own slot, so eq. (4)'s slot reward scores it
exactly. ``slot_rewards(current_slot(env, action), candidates)`` gives what ``env.step`` would return for each
candidate without stepping; the OINC learner (agents/oinc/prior.py) trains on it and ``slo_liu_ls``
(offline/oinc/heuristics.py) searches with it. Latencies come from ``envs.oinc.dynamics``, as in
``OINCEnv.slot_latency`` when no edge pauses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv

__all__ = ["Slot", "batch_slot_latency", "batch_slot_rewards", "current_slot", "slot_latency", "slot_rewards"]


@dataclass
class Slot:
    """What one slot's decision depends on: the tasks, f^t, the instance's tables and the heuristic's action."""

    data_bits: np.ndarray  # (I,)
    cycles: np.ndarray  # (I,)
    inference_share: np.ndarray  # (J,) f_j^t
    rate: np.ndarray  # (I, J) full-band rates
    cpu_hz: np.ndarray  # (J,)
    slo_s: np.ndarray  # (I,)
    psi: float
    heuristic: np.ndarray  # (3I,) int64, the heuristic's flat action


def current_slot(env: OINCEnv, heuristic_action: np.ndarray) -> Slot:
    """The :class:`Slot` of ``env``'s current slot (reads the instance and the current tasks, like the heuristics)."""
    d, c = env.current_tasks
    inst = env.instance
    return Slot(d, c, env.inference_share, inst.full_rate_bps, inst.cpu_hz, inst.slo_s, env.psi,
                np.asarray(heuristic_action, dtype=np.int64))


def slot_latency(slot: Slot, actions: np.ndarray) -> np.ndarray:
    """(..., I) task latencies of flat actions (..., 3I) in ``slot``, by ``envs.oinc.dynamics`` as
    ``OINCEnv.slot_latency`` computes them when no edge pauses (:func:`batch_slot_latency` of the one slot)."""
    actions = np.asarray(actions, dtype=np.int64)
    flat = actions.reshape(1, -1, actions.shape[-1])
    return batch_slot_latency([slot], flat)[0].reshape(*actions.shape[:-1], -1)


def slot_rewards(slot: Slot, actions: np.ndarray) -> np.ndarray:
    """Eq. (4)'s slot reward of each flat action in ``actions`` (K, 3I): what ``env.step`` returns for it."""
    return np.asarray(dyn.slot_reward(slot_latency(slot, actions), slot.slo_s, slot.psi), dtype=np.float64)


def batch_slot_latency(slots: list[Slot], actions: np.ndarray) -> np.ndarray:
    """(N, K, I) task latencies of flat actions (N, K, 3I), row n in ``slots[n]`` (the per-edge sums are
    ``dyn.group_totals``'s). The result has the memory layout of the actions' edge entries, so the rewards of a
    batch equal those of each slot alone bit for bit (numpy's mean over the devices adds in an order that
    follows the layout)."""
    actions = np.asarray(actions, dtype=np.int64)
    n, k = actions.shape[:2]
    plan = actions.reshape(n, k, -1, 3)
    edge = plan[..., 0]
    num_i, num_j = edge.shape[-1], slots[0].cpu_hz.size
    z, v = dyn.shares_from_levels(edge.reshape(n * k, num_i), plan[..., 1].reshape(n * k, num_i),
                                  plan[..., 2].reshape(n * k, num_i), num_j)
    z, v = z.reshape(edge.shape), v.reshape(edge.shape)
    env_rows = np.arange(n)[:, None, None]
    rate = np.stack([s.rate for s in slots])[env_rows, np.arange(num_i), edge]
    cpu_hz = np.stack([s.cpu_hz for s in slots])[env_rows, edge]
    share = np.stack([s.inference_share for s in slots])[env_rows, edge]
    latency = np.empty_like(edge, dtype=np.float64)  # order="K": the layout of the edge entries
    return np.add(dyn.transmission_time(np.stack([s.data_bits for s in slots])[:, None], rate, v),
                  dyn.computation_time(np.stack([s.cycles for s in slots])[:, None], cpu_hz, z * share), out=latency)


def batch_slot_rewards(slots: list[Slot], actions: np.ndarray) -> np.ndarray:
    """(N, K) eq. (4) slot rewards of flat actions (N, K, 3I), row n in ``slots[n]``: :func:`slot_rewards` of
    each slot, bit for bit."""
    slo = np.stack([s.slo_s for s in slots])[:, None]
    psi = np.array([s.psi for s in slots], dtype=np.float64)[:, None, None]
    return np.asarray(dyn.slot_reward(batch_slot_latency(slots, actions), slo, psi), dtype=np.float64)
