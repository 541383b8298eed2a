"""Typed containers of ASET-v0: the Instance (what the generator draws) and the simulator State.

Indices: ``s`` schedulers (one per antenna), ``n`` clusters, ``v`` model variants, ``w`` workers
(a worker is one (variant, cluster) pair with ``replicas`` copies of the variant), ``a`` application
classes. Times are in milliseconds inside the latency model and in seconds for rates/lifetimes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: The seven static scheduling policies of the paper (Section III-C), in action order.
POLICY_NAMES: tuple[str, ...] = (
    "closest",
    "load_balancing",
    "farthest",
    "cheaper",
    "random_latency",
    "random_load",
    "least_impedance",
)


@dataclass(frozen=True)
class Instance:
    """Topology, deployed workers and workload parameters; everything the episode does not change.

    The ``*_sw`` arrays are scheduler x worker tables precomputed once per instance, so that a
    stream's binding only indexes them.
    """

    topology: str
    cluster_names: tuple[str, ...]
    cluster_tiers: tuple[str, ...]          # "antenna" | "co" | "dc" | "cloud"
    variant_names: tuple[str, ...]
    worker_cluster: np.ndarray              # (W,) int, cluster of worker w
    worker_variant: np.ndarray              # (W,) int, variant of worker w
    worker_replicas: np.ndarray             # (W,) int
    replica_capacity_qps: np.ndarray        # (W,) C_v of one replica
    worker_capacity_qps: np.ndarray         # (W,) replicas * C_v: the worker's capacity in (2)
    worker_delay_ms: np.ndarray             # (W,) processing delay D_v
    worker_accuracy: np.ndarray             # (W,) accuracy A_m of the variant's model
    delay_ms: np.ndarray                    # (S, N) mean one-way delay d_n^s
    sigma_ms: np.ndarray                    # (S, N) its deviation sigma_n^s
    net_key_sw: np.ndarray                  # (S, W) d + 2 sigma towards the worker's cluster
    e2e_key_sw: np.ndarray                  # (S, W) 2 (d + 2 sigma) + D_v  (cheaper / least impedance)
    rtt_ms_sw: np.ndarray                   # (S, W) 2 d: mean round-trip propagation
    jitter_sd_ms_sw: np.ndarray             # (S, W) 2 sigma: sd of the round-trip jitter 2 eps
    # workload
    lam: float                              # clients per minute per antenna (base rate)
    rate_variation: float                   # relative amplitude of the per-antenna rate swing
    rate_period_windows: int
    rate_phase: np.ndarray                  # (S,) phase of each antenna's rate swing
    app_names: tuple[str, ...]
    app_latency_ms: np.ndarray              # (A,) D^i of each application class
    app_probs: np.ndarray                   # (S, A) application mix of each antenna
    fps_choices: np.ndarray                 # frame rates rho_i (queries/s)
    frame_kb: tuple[float, float]           # frame size zeta_i ~ U[lo, hi] kB
    accuracy_choices: np.ndarray            # minimum accuracy A^i
    uplink_mbps: float                      # b_i = 1 / uplink
    mean_lifetime_s: float
    access_delay_ms: tuple[float, float]    # delta_i ~ U[lo, hi]
    queueing: str                           # "per_replica" | "pooled" | "none" (dynamics.worker_wait_ms)
    service_headroom: float                 # replica service rate mu = service_headroom * C_v
    window_s: float
    sub_windows: int

    @property
    def num_schedulers(self) -> int:
        return int(self.delay_ms.shape[0])

    @property
    def num_workers(self) -> int:
        return int(self.worker_cluster.shape[0])

    @property
    def num_apps(self) -> int:
        return len(self.app_names)

    @property
    def sub_window_s(self) -> float:
        return self.window_s / self.sub_windows

    def worker_labels(self) -> list[str]:
        """``variant@cluster`` for every worker (for plots and logs)."""
        return [
            f"{self.variant_names[v]}@{self.cluster_names[n]}"
            for v, n in zip(self.worker_variant, self.worker_cluster)
        ]


def _empty(dtype: type) -> np.ndarray:
    return np.zeros(0, dtype=dtype)


@dataclass
class Streams:
    """Structure of arrays over the live streams (bound or rejected), vectorised by the simulator."""

    scheduler: np.ndarray = field(default_factory=lambda: _empty(np.int64))
    app: np.ndarray = field(default_factory=lambda: _empty(np.int64))
    rate: np.ndarray = field(default_factory=lambda: _empty(np.float64))          # queries/s
    bound_ms: np.ndarray = field(default_factory=lambda: _empty(np.float64))      # D^i
    worker: np.ndarray = field(default_factory=lambda: _empty(np.int64))          # -1 = rejected
    start_sub: np.ndarray = field(default_factory=lambda: _empty(np.int64))       # first active sub-window
    end_sub: np.ndarray = field(default_factory=lambda: _empty(np.int64))         # last active sub-window
    base_ms: np.ndarray = field(default_factory=lambda: _empty(np.float64))       # 2(delta+d)+b*zeta+D_v
    jitter_sd_ms: np.ndarray = field(default_factory=lambda: _empty(np.float64))  # 2 sigma of its cluster
    class_bin: np.ndarray = field(default_factory=lambda: _empty(np.int64))       # 0..15 state class

    FIELDS = (
        "scheduler", "app", "rate", "bound_ms", "worker", "start_sub", "end_sub",
        "base_ms", "jitter_sd_ms", "class_bin",
    )

    def __len__(self) -> int:
        return int(self.rate.shape[0])

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the streams where ``mask`` is true."""
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name)[mask])

    def extend(self, other: Streams) -> None:
        """Append ``other``'s streams."""
        for name in self.FIELDS:
            setattr(self, name, np.concatenate([getattr(self, name), getattr(other, name)]))


@dataclass
class State:
    """What changes during an episode: the live streams and the clock (in windows and sub-windows)."""

    streams: Streams = field(default_factory=Streams)
    window: int = 0

    def sub_index(self, instance: Instance, k: int) -> int:
        """Global index of sub-window ``k`` of the current window."""
        return self.window * instance.sub_windows + k


#: Worker tiers a cluster may have (``Instance.cluster_tiers``).
CLUSTER_TIERS = ("antenna", "co", "dc", "cloud")
