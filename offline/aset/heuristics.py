"""Our adaptive rule for ASET-v0 / ASET-v1 (ours, not from the paper): a tuned threshold switch that reads the load
of the central-office and cloud tiers from the observation and picks one of the seven static policies per window.

Why these features: least_impedance, the best static policy, binds every arrival to the closest fast workers (the
central offices' GPUs) until the capacity check (2) refuses them; at that load their per-replica queues saturate and
queries fail. The best state-blind cycle (``periodic_switch``) relieves them every third window with ``farthest``;
the clairvoyant references relieve them when they are hot, with ``farthest`` while the cloud has room and
``load_balancing`` once it has not. This rule does exactly that, on thresholds tuned by ``python -m offline.tuning
env=ASET-v1 publish=true`` (``offline/aset/ladder.py``'s TuningSpec; values in ``offline/aset/tuned.yaml``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.aset.dynamics import WORKER_FEATURES
from envs.aset.types import POLICY_NAMES
from offline.aset.policies import ENV_IDS
from offline.ladder_spec import tuned_params
from offline.registry import register_policy

THRESHOLD_SWITCH = "threshold_switch"
#: Untuned defaults (overridden by ``offline/aset/tuned.yaml``).
THRESHOLD_DEFAULTS: dict[str, Any] = {
    "co_threshold": 0.9, "cloud_threshold": 0.4, "recent_subwindows": 3, "relief": "farthest",
    "hot_relief": "random_load", "max_relief_run": 1,
}
#: The static policies a relief window may play (what the clairvoyant references play besides least_impedance).
RELIEF_CHOICES: tuple[str, ...] = ("farthest", "random_load", "load_balancing")

LEAST_IMPEDANCE = POLICY_NAMES.index("least_impedance")


class ThresholdSwitchPolicy:
    """Ours: least_impedance while the central offices' utilisation is below ``co_threshold``; otherwise a relief
    window, ``relief`` while the cloud's utilisation is below ``cloud_threshold``, else ``hot_relief``; never more
    than ``max_relief_run`` relief windows in a row (then least_impedance again, so that a load above the one it was
    tuned at cannot lock it out of least_impedance).

    A tier's utilisation is its bound load over its capacity, both summed over the tier's workers, averaged over the
    last ``recent_subwindows`` sub-windows of the observation (rows 2W..3W-1: load / capacity per worker). Reads
    ``env.unwrapped.instance`` at reset for the tier of each worker and the capacities (topology data the
    scheduler knows); a topology without central offices (dc-cloud) uses its data centre as the near tier.
    Non-anticipative: it sees only the observation of the windows played so far.
    """

    name = THRESHOLD_SWITCH

    def __init__(self, co_threshold: float, cloud_threshold: float, recent_subwindows: int, relief: str,
                 hot_relief: str, max_relief_run: int) -> None:
        for key, value in (("co_threshold", co_threshold), ("cloud_threshold", cloud_threshold)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 10.0:
                raise ValueError(f"{key}={value!r} is invalid: expected a number in [0, 10]")
        if isinstance(recent_subwindows, bool) or not isinstance(recent_subwindows, (int, np.integer)) \
                or recent_subwindows < 1:
            raise ValueError(f"recent_subwindows={recent_subwindows!r} is invalid: expected an integer >= 1")
        if isinstance(max_relief_run, bool) or not isinstance(max_relief_run, (int, np.integer)) or max_relief_run < 1:
            raise ValueError(f"max_relief_run={max_relief_run!r} is invalid: expected an integer >= 1")
        for key, value in (("relief", relief), ("hot_relief", hot_relief)):
            if value not in RELIEF_CHOICES:
                raise ValueError(f"{key}={value!r} is invalid: expected one of {list(RELIEF_CHOICES)}")
        self.relief = POLICY_NAMES.index(relief)
        self.hot_relief = POLICY_NAMES.index(hot_relief)
        self.max_relief_run = int(max_relief_run)
        self._relief_run = 0
        self.co_threshold = float(co_threshold)
        self.cloud_threshold = float(cloud_threshold)
        self.recent_subwindows = int(recent_subwindows)
        self._near = self._far = np.zeros(0)
        self._rows = (0, 0)
        self._sub_windows = 1

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        inst = env.unwrapped.instance
        tiers = np.asarray(inst.cluster_tiers)[inst.worker_cluster]
        near_tier = "co" if (tiers == "co").any() else "dc"
        cap = inst.worker_capacity_qps
        # capacity-weighted tier averages of load / capacity = tier load / tier capacity
        self._near = np.where(tiers == near_tier, cap, 0.0) / cap[tiers == near_tier].sum()
        self._far = np.where(tiers == "cloud", cap, 0.0) / max(cap[tiers == "cloud"].sum(), 1e-12)
        n_w = inst.num_workers
        self._rows = (2 * n_w, WORKER_FEATURES * n_w)
        self._sub_windows = inst.sub_windows
        self._relief_run = 0

    def utilisations(self, obs: Any) -> tuple[float, float]:
        """(near tier, cloud) utilisation over the last ``recent_subwindows`` sub-windows of ``obs``."""
        state = np.asarray(obs, dtype=float).reshape(-1, self._sub_windows)
        load = state[self._rows[0]:self._rows[1], -self.recent_subwindows:].mean(axis=1)
        return float(self._near @ load), float(self._far @ load)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        near, cloud = self.utilisations(obs)
        if near < self.co_threshold or self._relief_run >= self.max_relief_run:
            self._relief_run = 0
            return LEAST_IMPEDANCE
        self._relief_run += 1
        return self.relief if cloud < self.cloud_threshold else self.hot_relief


def _threshold_switch(env: gym.Env, **kwargs: Any) -> ThresholdSwitchPolicy:
    params = tuned_params(Path(__file__).parent, THRESHOLD_SWITCH, THRESHOLD_DEFAULTS)
    unknown = sorted(set(kwargs) - set(params))
    if unknown:
        raise ValueError(f"{THRESHOLD_SWITCH} has no parameter(s) {unknown}; valid: {sorted(params)}")
    return ThresholdSwitchPolicy(**{**params, **kwargs})


for _env_id in ENV_IDS:
    register_policy(_env_id, THRESHOLD_SWITCH)(_threshold_switch)
