"""Scenario (validated parameter ranges, named topology presets) -> Instance for ASET-v0.

Topologies and model-variant profiles are data shipped with the package: ``envs/aset/data/topologies/<name>.yaml``
and ``envs/aset/data/variants.yaml``. A user topology is passed by file path (``topology="my/topo.yaml"``)
or as an already-parsed mapping; it uses the same keys as the shipped presets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from envs.aset.types import Instance
from envs.common.validation import check_choice, check_in_range, check_interval

DATA_DIR = Path(__file__).resolve().parent / "data"
TOPOLOGY_DIR = DATA_DIR / "topologies"
VARIANTS_FILE = DATA_DIR / "variants.yaml"

#: The paper's three topologies (Section V-A), shipped as YAML files.
TOPOLOGIES: tuple[str, ...] = ("dc-cloud", "co-dc-cloud", "full-edge")

#: Relations scheduler -> cluster whose one-way delays a topology file must give.
DELAY_RELATIONS: tuple[str, ...] = (
    "own_antenna", "sibling_antenna", "other_antenna", "own_co", "other_co", "dc", "cloud",
)
TIERS: tuple[str, ...] = ("cloud", "dc", "co", "antenna")

#: Application classes (Chen et al. SEC'17 tight latency bounds, see paper-gaps 2.5).
DEFAULT_APPS: tuple[tuple[str, float], ...] = (
    ("pool", 95.0),
    ("ping_pong", 150.0),
    ("work_out", 300.0),
    ("face", 370.0),
    ("lego", 600.0),
)

LAM_RANGE = (1.0, 200.0)

#: Waiting-time models of a worker's queue: one pooled M/D/c queue over the replicas (default),
#: independent M/D/1 replicas fed by a random split, or no waiting at all (the design's literal model).
QUEUEING_MODELS: tuple[str, ...] = ("pooled", "per_replica", "none")


#: ASET-v1's defaults (issue 17; Modelling choices, "ASET-v1"): every replica is its own M/D/1 queue (a model
#: variant's replicas are separate containers, paper Section III-A), served at C_v (headroom 1: C_v is the
#: variant's maximum throughput), and every C_v times 5/3, so the paper's stress load lambda = 100 offers the
#: total capacity the share (88 %) that lambda = 60 offers ASET-v0's (which lambda = 100 overloads: 24,000
#: queries/s against 16,320).
V1_DEFAULTS: dict[str, Any] = {"queueing": "per_replica", "service_headroom": 1.0, "capacity_scale": 5.0 / 3.0}


@dataclass(frozen=True)
class Scenario:
    """Parameter ranges of the workload; every field is validated by :meth:`validate`."""

    lam: float = 60.0                          # clients per minute per antenna
    rate_variation: float = 0.0                # a: lambda_s(t) = lam (1 + a sin(2 pi t / P + phi_s))
    rate_period_windows: int = 60              # P (windows; 60 = 10 minutes)
    app_mix_concentration: float = 0.0         # 0: uniform app mix; > 0: Dirichlet(c * 1) mix per antenna
    fps_choices: tuple[float, ...] = (5.0, 10.0, 15.0, 30.0)
    frame_kb: tuple[float, float] = (20.0, 200.0)
    accuracy_choices: tuple[float, ...] = (0.2, 0.3, 0.5)
    uplink_mbps: float = 50.0
    mean_lifetime_s: float = 60.0
    access_delay_ms: tuple[float, float] = (1.0, 4.0)
    queueing: str = "pooled"                   # waiting-time model, one of QUEUEING_MODELS (dynamics.worker_wait_ms)
    service_headroom: float = 1.0              # mu = headroom * C_v (1: C_v is the maximum service rate)
    capacity_scale: float = 1.0                # every variant's capacity C_v times this (1: the profiles' values)
    window_s: float = 10.0
    sub_windows: int = 20

    def validate(self) -> Scenario:
        """Raise ValueError naming the first bad field and its allowed values; return self."""
        check_in_range("lam", self.lam, *LAM_RANGE)
        check_in_range("rate_variation", self.rate_variation, 0.0, 0.95)
        check_in_range("rate_period_windows", self.rate_period_windows, 1, 100_000, integer=True)
        check_in_range("app_mix_concentration", self.app_mix_concentration, 0.0, 1e6)
        if len(self.fps_choices) == 0:
            raise ValueError("fps_choices=() is invalid: expected a non-empty list of rates in (0, 240]")
        for fps in self.fps_choices:
            check_in_range("fps_choices", fps, 0.0, 240.0, low_inclusive=False)
        check_interval("frame_kb", self.frame_kb, 0.1, 10_000.0)
        if len(self.accuracy_choices) == 0:
            raise ValueError("accuracy_choices=() is invalid: expected a non-empty list of values in [0, 1]")
        for acc in self.accuracy_choices:
            check_in_range("accuracy_choices", acc, 0.0, 1.0)
        check_in_range("uplink_mbps", self.uplink_mbps, 0.1, 100_000.0)
        check_in_range("mean_lifetime_s", self.mean_lifetime_s, 0.5, 3600.0)
        check_interval("access_delay_ms", self.access_delay_ms, 0.0, 1000.0)
        check_choice("queueing", self.queueing, QUEUEING_MODELS)
        check_in_range("service_headroom", self.service_headroom, 1.0, 100.0)
        check_in_range("capacity_scale", self.capacity_scale, 0.01, 100.0)
        check_in_range("window_s", self.window_s, 0.1, 3600.0)
        check_in_range("sub_windows", self.sub_windows, 1, 1000, integer=True)
        return self

    @classmethod
    def from_overrides(
        cls, lam: float, overrides: Mapping[str, Any] | None, defaults: Mapping[str, Any] | None = None
    ) -> Scenario:
        """The default scenario (with a version's ``defaults``, e.g. :data:`V1_DEFAULTS`), ``lam`` and any field
        overrides (unknown names raise ValueError)."""
        overrides = {**dict(defaults or {}), **dict(overrides or {})}
        names = [f.name for f in fields(cls)]
        for key in overrides:
            check_choice("scenario_overrides key", key, names)
        if "lam" in overrides:
            raise ValueError("scenario_overrides['lam'] is invalid: lam is the env's own argument; pass lam=... instead")
        for key in ("fps_choices", "accuracy_choices", "frame_kb", "access_delay_ms"):
            if key in overrides:
                overrides[key] = _float_tuple(key, overrides[key])
        return replace(cls(), lam=lam, **overrides).validate()


def _float_tuple(name: str, value: Any) -> tuple[float, ...]:
    """A list of numbers as a tuple of floats; anything else raises ValueError naming ``name``."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError(f"{name}={value!r} is invalid: expected a list of numbers")
    try:
        return tuple(float(x) for x in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is invalid: expected a list of numbers") from None


# ------------------------------------------------------------------------------------ data loading
def load_variants(path: Path | str = VARIANTS_FILE) -> dict[str, dict[str, Any]]:
    """The model-variant profiles (name -> {model, hardware, delay_ms, capacity_qps, accuracy})."""
    with open(path) as fh:
        variants = yaml.safe_load(fh)
    for name, prof in variants.items():
        for key in ("delay_ms", "capacity_qps", "accuracy"):
            if key not in prof:
                raise ValueError(f"variant {name!r} lacks {key!r}: expected keys delay_ms, capacity_qps, accuracy")
        check_in_range(f"{name}.delay_ms", prof["delay_ms"], 0.0, 1e6, low_inclusive=False)
        check_in_range(f"{name}.capacity_qps", prof["capacity_qps"], 0.0, 1e9, low_inclusive=False)
        check_in_range(f"{name}.accuracy", prof["accuracy"], 0.0, 1.0)
    return variants


def load_topology(topology: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """A topology mapping from a preset name, a YAML file path, or a mapping (validated)."""
    if isinstance(topology, Mapping):
        data = dict(topology)
    else:
        text = str(topology)
        if text in TOPOLOGIES:
            path = TOPOLOGY_DIR / f"{text}.yaml"
        elif text.endswith((".yaml", ".yml")) and Path(text).is_file():
            path = Path(text)
        else:
            raise ValueError(
                f"topology={text!r} is invalid: expected one of {list(TOPOLOGIES)} or the path of a "
                "topology YAML file"
            )
        with open(path) as fh:
            data = yaml.safe_load(fh)
    for key in ("layout", "delays_ms", "workers"):
        if key not in data:
            raise ValueError(f"topology lacks {key!r}: expected keys layout, delays_ms, workers")
    for rel in DELAY_RELATIONS:
        if rel not in data["delays_ms"]:
            raise ValueError(f"topology delays_ms lacks {rel!r}: expected keys {list(DELAY_RELATIONS)}")
        check_in_range(f"delays_ms.{rel}", data["delays_ms"][rel], 0.0, 1e4, low_inclusive=False)
    for tier in data["workers"]:
        check_choice("topology workers key", tier, TIERS)
    check_in_range("layout.central_offices", data["layout"]["central_offices"], 1, 1000, integer=True)
    check_in_range("layout.antennas_per_co", data["layout"]["antennas_per_co"], 1, 1000, integer=True)
    data.setdefault("sigma_fraction", 0.1)
    check_in_range("sigma_fraction", data["sigma_fraction"], 0.0, 10.0, low_inclusive=False)
    data.setdefault("name", "custom")
    return data


def build_network(topology: Mapping[str, Any]) -> tuple[list[str], list[str], np.ndarray]:
    """Cluster names, tiers and the (S, N) one-way delay table of a hierarchical topology.

    Clusters are ordered cloud, dc, co_0..co_{C-1}, ant_0..ant_{S-1}; antenna ``s`` hangs below CO
    ``s // antennas_per_co`` and hosts scheduler ``s``.
    """
    n_co = int(topology["layout"]["central_offices"])
    per_co = int(topology["layout"]["antennas_per_co"])
    n_ant = n_co * per_co
    d = topology["delays_ms"]
    names = ["cloud", "dc"] + [f"co{c}" for c in range(n_co)] + [f"ant{a}" for a in range(n_ant)]
    tiers = ["cloud", "dc"] + ["co"] * n_co + ["antenna"] * n_ant
    delay = np.zeros((n_ant, len(names)))
    for s in range(n_ant):
        my_co = s // per_co
        delay[s, 0] = d["cloud"]
        delay[s, 1] = d["dc"]
        for c in range(n_co):
            delay[s, 2 + c] = d["own_co"] if c == my_co else d["other_co"]
        for a in range(n_ant):
            if a == s:
                rel = "own_antenna"
            elif a // per_co == my_co:
                rel = "sibling_antenna"
            else:
                rel = "other_antenna"
            delay[s, 2 + n_co + a] = d[rel]
    return names, tiers, delay


def build_instance(
    topology: str | Path | Mapping[str, Any],
    scenario: Scenario,
    rng: np.random.Generator,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    apps: tuple[tuple[str, float], ...] = DEFAULT_APPS,
) -> Instance:
    """Draw an Instance: the topology is fixed data; rate phases and app mixes come from ``rng``."""
    scenario.validate()
    topo = load_topology(topology)
    variants = dict(variants if variants is not None else load_variants())
    variant_names = tuple(variants)
    names, tiers, delay = build_network(topo)
    sigma = topo["sigma_fraction"] * delay

    w_cluster, w_variant, w_replicas = [], [], []
    for n, tier in enumerate(tiers):
        for vname, replicas in (topo["workers"].get(tier) or {}).items():
            check_choice(f"topology workers.{tier} variant", vname, variant_names)
            check_in_range(f"workers.{tier}.{vname}", replicas, 0, 100_000, integer=True)
            if replicas > 0:
                w_cluster.append(n)
                w_variant.append(variant_names.index(vname))
                w_replicas.append(int(replicas))
    if not w_cluster:
        raise ValueError("topology deploys no workers: expected at least one variant with replicas > 0")
    w_cluster_a = np.asarray(w_cluster, dtype=np.int64)
    w_variant_a = np.asarray(w_variant, dtype=np.int64)
    replicas_a = np.asarray(w_replicas, dtype=np.int64)
    cap_v = scenario.capacity_scale * np.array([float(variants[v]["capacity_qps"]) for v in variant_names])
    delay_v = np.array([float(variants[v]["delay_ms"]) for v in variant_names])
    acc_v = np.array([float(variants[v]["accuracy"]) for v in variant_names])

    d_sw = delay[:, w_cluster_a]
    s_sw = sigma[:, w_cluster_a]
    net_key = d_sw + 2.0 * s_sw
    n_sched = delay.shape[0]
    n_apps = len(apps)
    if scenario.app_mix_concentration > 0:
        app_probs = rng.dirichlet(np.full(n_apps, scenario.app_mix_concentration), size=n_sched)
    else:
        app_probs = np.full((n_sched, n_apps), 1.0 / n_apps)
    return Instance(
        topology=str(topo["name"]),
        cluster_names=tuple(names),
        cluster_tiers=tuple(tiers),
        variant_names=variant_names,
        worker_cluster=w_cluster_a,
        worker_variant=w_variant_a,
        worker_replicas=replicas_a,
        replica_capacity_qps=cap_v[w_variant_a],
        worker_capacity_qps=replicas_a * cap_v[w_variant_a],
        worker_delay_ms=delay_v[w_variant_a],
        worker_accuracy=acc_v[w_variant_a],
        delay_ms=delay,
        sigma_ms=sigma,
        net_key_sw=net_key,
        e2e_key_sw=2.0 * net_key + delay_v[w_variant_a][None, :],
        rtt_ms_sw=2.0 * d_sw,
        jitter_sd_ms_sw=2.0 * s_sw,
        lam=float(scenario.lam),
        rate_variation=float(scenario.rate_variation),
        rate_period_windows=int(scenario.rate_period_windows),
        rate_phase=rng.uniform(0.0, 2.0 * math.pi, size=n_sched),
        app_names=tuple(a for a, _ in apps),
        app_latency_ms=np.array([float(b) for _, b in apps]),
        app_probs=app_probs,
        fps_choices=np.asarray(scenario.fps_choices, dtype=float),
        frame_kb=(float(scenario.frame_kb[0]), float(scenario.frame_kb[1])),
        accuracy_choices=np.asarray(scenario.accuracy_choices, dtype=float),
        uplink_mbps=float(scenario.uplink_mbps),
        mean_lifetime_s=float(scenario.mean_lifetime_s),
        access_delay_ms=(float(scenario.access_delay_ms[0]), float(scenario.access_delay_ms[1])),
        queueing=str(scenario.queueing),
        service_headroom=float(scenario.service_headroom),
        window_s=float(scenario.window_s),
        sub_windows=int(scenario.sub_windows),
    )
