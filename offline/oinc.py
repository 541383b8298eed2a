"""OINC-v0 inference baselines, the Table II pairings and ``evaluate_policies`` (contract 3).

Inference policies (registered for "OINC-v0"; they choose only the inference action, the retraining
controller is the env's ``retraining=`` kwarg, so a Table II "algorithm" is a pair):

* ``greedy`` -- the paper's Greedy: tasks in increasing SLO order each take the edge of least estimated
  latency given the tasks already placed, then the closed-form convex split (z ∝ sqrt(c), v ∝
  sqrt(d / rate), the KKT solution of min sum c/(z f) + d/(v r)), mapped to the discrete levels.
* ``liu`` -- Liu et al. (TSC 2023) idea, their paper is not available here: assignment that minimises
  the total latency of the optimal (Lagrangian / KKT) split, sum_j (sum sqrt c)^2 / F_j +
  (sum sqrt(d / r_j))^2, by marginal-cost insertion (largest tasks first) and best-response moves.
* ``nearest`` -- each task to its nearest edge, equal compute and bandwidth shares.
* ``random`` -- uniform over the action space.

Continuous shares go to the W = 4 levels with ``dynamics.levels_for_shares``: the log2-nearest level of
8·share/largest share of the edge, with the rounding offset per edge (8 candidates) that minimises the
split's objective sum c/z (resp. sum d/(v r)) -- within 1.4 % of the best discrete levels in the tests.
Non-learning policies read ``env.unwrapped.instance`` and the current tasks (``current_tasks``,
``inference_share``) and act only through ``env.step``.

Table II pairings (``TABLE2``): ``oinc`` = trained SAC run + ``aret``; ``ekya`` = nearest + ekya
controller; ``kalmia`` = greedy (urgent-first = SLO order) + kalmia; ``greedy_aret``; ``liu_aret``;
``ainf_dedas`` / ``ainf_zhang`` = A_inf + dedas / zhang, where A_inf is the trained run when one is
given and otherwise the ``liu`` heuristic as a stand-in (labelled in the ``inference`` column).
Any ``<inference>+<controller>`` pair (e.g. ``greedy+kalmia``, ``runs/x+aret``) is accepted too, and a
bare inference policy or run folder runs with the env config's controller (``retraining``, default aret).
"""

from __future__ import annotations

import csv
import math
import pathlib
import time
from typing import Any

import gymnasium as gym
import numpy as np

from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv
from envs.oinc.retraining import CONTROLLERS
from offline.protocol import episode_seed, run_episode
from offline.registry import register_policy, resolve_policy
from offline.stats import mean_ci95

ENV_ID = "OINC-v0"
INFERENCE_POLICIES = ("greedy", "liu", "nearest", "random")
#: Table II name -> (inference policy, retraining controller); "A_inf" = the trained run or a stand-in.
TABLE2: dict[str, tuple[str, str]] = {
    "oinc": ("A_inf", "aret"),
    "ekya": ("nearest", "ekya"),
    "kalmia": ("greedy", "kalmia"),
    "greedy_aret": ("greedy", "aret"),
    "liu_aret": ("liu", "aret"),
    "ainf_dedas": ("A_inf", "dedas"),
    "ainf_zhang": ("A_inf", "zhang"),
}
#: The paper's Table II (inference s, retraining s) for reference.
PAPER_TABLE2: dict[str, tuple[float, float]] = {
    "oinc": (0.250, 96.209),
    "ekya": (0.277, 101.691),
    "kalmia": (0.262, 98.372),
    "greedy_aret": (0.479, 100.684),
    "liu_aret": (0.271, 100.684),
    "ainf_dedas": (0.256, 101.286),
    "ainf_zhang": (0.256, 144.326),
}
#: Heuristic used for A_inf when no trained run is given.
A_INF_STAND_IN = "liu"
METRICS = ("inference_latency_s", "retraining_completion_s", "weighted_sum", "success_rate")


# ----------------------------------------------------------------------------- inference policies
class _HeuristicPolicy:
    """Base: keeps the unwrapped env; subclasses build (edge, compute share, bandwidth share)."""

    name = "heuristic"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.env: OINCEnv = env.unwrapped  # type: ignore[assignment]
        inst = self.env.instance
        self.num_edges = inst.num_edges
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        edge, z, v = self.plan()
        inst = self.env.instance
        d, c = self.env.current_tasks
        rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
        return self.env.action_from_shares(edge, z, v, compute_cost=c, bandwidth_cost=d / rate)

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError


def convex_split(data_bits: np.ndarray, cycles: np.ndarray, rate_bps: np.ndarray, edge: np.ndarray, num_edges: int):
    """Within-edge shares minimising sum_i c_i/(z_i F_j) + d_i/(v_i r_ij): z ∝ sqrt(c), v ∝ sqrt(d/r)."""
    return dyn.sqrt_split(cycles, edge, num_edges), dyn.sqrt_split(data_bits / rate_bps, edge, num_edges)


class GreedyPolicy(_HeuristicPolicy):
    """The paper's Greedy: SLO order, least-latency edge given the placed tasks, convex split."""

    name = "greedy"

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inst, env = self.env.instance, self.env
        d, c = env.current_tasks
        capacity = env.inference_share * inst.cpu_hz
        sqrt_c = np.sqrt(c)
        sqrt_tx = np.sqrt(d[:, None] / inst.full_rate_bps)  # (I, J)
        sum_c = np.zeros(inst.num_edges)
        sum_tx = np.zeros(inst.num_edges)
        edge = np.empty(inst.num_devices, dtype=np.int64)
        for i in np.argsort(inst.slo_s, kind="stable"):
            est = sqrt_tx[i] * (sum_tx + sqrt_tx[i]) + sqrt_c[i] * (sum_c + sqrt_c[i]) / capacity
            j = int(np.argmin(est))
            edge[i] = j
            sum_c[j] += sqrt_c[i]
            sum_tx[j] += sqrt_tx[i, j]
        rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
        z, v = convex_split(d, c, rate, edge, inst.num_edges)
        return edge, z, v


class LiuPolicy(_HeuristicPolicy):
    """Liu et al. (TSC 2023) idea (paper not available here): min total latency of the KKT split.

    Objective of an assignment: sum_j (sum_{i on j} sqrt c_i)^2 / F_j + (sum_{i on j} sqrt(d_i / r_ij))^2
    (the optimal Lagrangian split's total latency). Tasks are inserted largest first at the edge of least
    marginal cost, then ``passes`` rounds of best-response moves improve it.
    """

    name = "liu"

    def __init__(self, passes: int = 2) -> None:
        self.passes = passes

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inst, env = self.env.instance, self.env
        d, c = env.current_tasks
        capacity = env.inference_share * inst.cpu_hz
        a = np.sqrt(c)
        b = np.sqrt(d[:, None] / inst.full_rate_bps)
        sum_a = np.zeros(inst.num_edges)
        sum_b = np.zeros(inst.num_edges)
        edge = np.full(inst.num_devices, -1, dtype=np.int64)

        def marginal(i: int) -> np.ndarray:
            return (2 * sum_a * a[i] + a[i] ** 2) / capacity + 2 * sum_b * b[i] + b[i] ** 2

        for i in np.argsort(-(a / capacity.max() + b.min(axis=1)), kind="stable"):
            j = int(np.argmin(marginal(i)))
            edge[i] = j
            sum_a[j] += a[i]
            sum_b[j] += b[i, j]
        for _ in range(self.passes):
            moved = False
            for i in range(inst.num_devices):
                j0 = edge[i]
                sum_a[j0] -= a[i]
                sum_b[j0] -= b[i, j0]
                j = int(np.argmin(marginal(i)))
                if j != j0:
                    moved = True
                edge[i] = j
                sum_a[j] += a[i]
                sum_b[j] += b[i, j]
            if not moved:
                break
        rate = inst.full_rate_bps[np.arange(inst.num_devices), edge]
        z, v = convex_split(d, c, rate, edge, inst.num_edges)
        return edge, z, v


class NearestPolicy(_HeuristicPolicy):
    """Each task to its nearest edge with equal compute and bandwidth shares."""

    name = "nearest"

    def plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inst = self.env.instance
        edge = np.argmin(inst.distance_km, axis=1)
        ones = np.ones(inst.num_devices)
        return edge, ones, ones


class RandomPolicy:
    """Uniform over the MultiDiscrete action space (own seeded generator)."""

    name = "random"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.nvec = env.action_space.nvec
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        return self.rng.integers(0, self.nvec).astype(np.int64)


def _register(name: str):
    """register_policy, except when this file runs as ``__main__`` (``python -m offline.oinc``), where
    the registry's own import of offline.oinc registers the policies."""
    if __name__ == "__main__":
        return lambda factory: factory
    return register_policy(ENV_ID, name)


@_register("greedy")
def _greedy(env: gym.Env, **kwargs: Any) -> GreedyPolicy:
    return GreedyPolicy()


@_register("liu")
def _liu(env: gym.Env, passes: int = 2, **kwargs: Any) -> LiuPolicy:
    return LiuPolicy(passes=passes)


@_register("nearest")
def _nearest(env: gym.Env, **kwargs: Any) -> NearestPolicy:
    return NearestPolicy()


@_register("random")
def _random(env: gym.Env, **kwargs: Any) -> RandomPolicy:
    return RandomPolicy()


# ----------------------------------------------------------------------------- evaluation
def resolve_pair(name: str, model: str | None, default_controller: str = "aret") -> tuple[str, str, str | None, str]:
    """(label, controller, inference spec or None when missing, note) for a policy name.

    Names: a Table II name, ``oinc=<run_dir>``, ``<inference>+<controller>``, or a bare inference policy
    or run folder (paired with ``default_controller``, the env config's ``retraining``).
    """
    note = ""
    if name.startswith("oinc="):
        model, name = name.split("=", 1)[1], "oinc"
    if name in TABLE2:
        inference, controller = TABLE2[name]
        if inference == "A_inf":
            if model:
                if not pathlib.Path(model).is_dir():
                    raise ValueError(f"model={model!r} is invalid for policy={name!r}: expected a training run folder")
                inference, note = model, "A_inf = trained run"
            elif name == "oinc":
                return name, controller, None, "missing: no trained run given (oinc=<run_dir> or model=...)"
            else:
                inference, note = A_INF_STAND_IN, f"A_inf stand-in = {A_INF_STAND_IN} (no trained run given)"
        return name, controller, inference, note
    if "+" in name:
        inference, controller = name.rsplit("+", 1)
    elif name in INFERENCE_POLICIES or pathlib.Path(name).is_dir():
        inference, controller = name, default_controller
    else:
        valid = [*TABLE2, "oinc=<run_dir>", "<inference>+<controller>", "<run_dir>"]
        raise ValueError(
            f"policy={name!r} is not known for {ENV_ID}: expected one of {valid} with inference in "
            f"{list(INFERENCE_POLICIES)} (or a run folder) and controller in {list(CONTROLLERS)}"
        )
    if controller not in CONTROLLERS:
        raise ValueError(f"retraining={controller!r} is invalid in policy={name!r}: expected one of {list(CONTROLLERS)}")
    if inference not in INFERENCE_POLICIES and not pathlib.Path(inference).is_dir():
        raise ValueError(
            f"policy={name!r}: inference={inference!r} is invalid: expected one of {list(INFERENCE_POLICIES)} "
            "or a training run folder"
        )
    return name, controller, inference, note


def _plain(value: Any) -> Any:
    """Plain dicts/lists from OmegaConf containers (or any Mapping/Sequence) for the env constructor."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListConfig":
        return [_plain(v) for v in value]
    return value


#: What `python evaluate.py env=oinc-v0` runs: Table II (the oinc row needs `oinc=<run_dir>`).
DEFAULT_EVALUATION: dict[str, Any] = {"policies": list(TABLE2), "instances": 5, "episodes": 2}


def check_policy_names(policies: list[str]) -> None:
    """What evaluate.py accepts for OINC-v0: Table II names, ``oinc=<run_dir>``, ``<inference>+<controller>``,
    an inference policy or a run folder; raises ValueError listing the valid forms otherwise."""
    for name in policies:
        resolve_pair(name, None)


def evaluate_policies(
    env_kwargs: dict,
    policies: list[str],
    *,
    instances: int,
    episodes: int,
    seed: int,
    out_dir: pathlib.Path,
    progress: bool = True,
    model: str | None = None,
) -> list[dict]:
    """Run each policy (a Table II name, an inference+controller pair, or a bare inference policy / run
    folder paired with ``env_kwargs["retraining"]``) on the same instances and episodes.

    Instance n uses ``instance_seed = seed + n``; episode e of instance n uses the same reset seed for
    every policy. Returns one row per policy: ``policy, inference, retraining`` then the mean and
    ``_ci95`` half-width (over all instance x episode runs) of inference_latency_s,
    retraining_completion_s, weighted_sum, success_rate, plus slo_hit_rate, deadline_hit_rate,
    decision_ms (mean time per act call) and a note. ``model`` is a trained run folder used for
    ``oinc`` and as A_inf. Also writes ``out_dir/oinc_episodes.csv`` (one row per episode).
    """
    if instances < 1 or episodes < 1:
        raise ValueError(f"instances={instances}, episodes={episodes} are invalid: expected integers >= 1")
    kwargs = _plain(env_kwargs)
    default_controller = kwargs.pop("retraining", "aret")
    kwargs.pop("instance_seed", None)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pairs = [resolve_pair(str(name), model, default_controller) for name in policies]
    rows: list[dict] = []
    episode_rows: list[dict] = []
    total = sum(instances * episodes for _, _, inf, _ in pairs if inf is not None)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc="OINC-v0 evaluation", unit="episode")
    for label, controller, inference, note in pairs:
        row: dict[str, Any] = {"policy": label, "inference": inference or "missing", "retraining": controller}
        if inference is None:
            for metric in (*METRICS, "slo_hit_rate", "deadline_hit_rate"):
                row[metric] = float("nan")
                row[f"{metric}_ci95"] = float("nan")
            row["decision_ms"] = float("nan")
            row["note"] = note
            rows.append(row)
            continue
        values: dict[str, list[float]] = {m: [] for m in (*METRICS, "slo_hit_rate", "deadline_hit_rate")}
        decision_s: list[float] = []
        for n in range(instances):
            env = OINCEnv(**kwargs, retraining=controller, instance_seed=seed + n)
            policy = resolve_policy(ENV_ID, inference, env)
            for e in range(episodes):
                ep_seed = episode_seed(seed, n, e)
                start = time.perf_counter()
                result = run_episode(env, policy, seed=ep_seed, time_decisions=True)
                wall = time.perf_counter() - start
                info = result.final_info
                for m in values:
                    values[m].append(float(info[m]))
                decision_s.extend(result.decision_seconds)
                episode_rows.append(
                    {"policy": label, "instance": n, "episode": e, "seed": ep_seed, "wall_s": wall}
                    | {m: info[m] for m in values}
                )
                if bar is not None:
                    bar.update(1)
        for m, vals in values.items():
            finite = [v for v in vals if math.isfinite(v)]
            mean, half = mean_ci95(finite) if finite else (float("nan"), float("nan"))
            row[m], row[f"{m}_ci95"] = mean, half
        row["decision_ms"] = 1e3 * float(np.mean(decision_s))
        row["note"] = note
        rows.append(row)
    if bar is not None:
        bar.close()
    if episode_rows:
        with (out_dir / "oinc_episodes.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(episode_rows[0]))
            writer.writeheader()
            writer.writerows(episode_rows)
    return rows


def markdown_table(rows: list[dict], with_paper: bool = True) -> str:
    """Rows of :func:`evaluate_policies` as a markdown table (mean ± ci95), with the paper's Table II."""
    head = "| policy | inference | retraining | inference s | retraining s | weighted sum | success rate |"
    lines = [head + (" paper (inf / ret) |" if with_paper else ""), "|" + "---|" * (7 + with_paper)]
    for r in rows:
        cells = [r["policy"], r["inference"], r["retraining"]]
        for m, fmt in zip(METRICS, (".3f", ".1f", ".1f", ".3f")):
            cells.append(f"{r[m]:{fmt}} ± {r[m + '_ci95']:{fmt}}")
        if with_paper:
            paper = PAPER_TABLE2.get(r["policy"])
            cells.append(f"{paper[0]:.3f} / {paper[1]:.1f}" if paper else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m offline.oinc``: Table II on the default scenario (markdown + summary.csv)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description="OINC-v0 Table II: the seven (inference, retraining) pairs")
    parser.add_argument("--policies", default=",".join(TABLE2))
    parser.add_argument("--instances", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env-kwargs", default="{}", help='JSON, e.g. \'{"scenario": "paper_mb"}\'')
    parser.add_argument("--model", default=None, help="trained run folder for oinc / A_inf")
    parser.add_argument("--out", default="results/oinc_table2")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    rows = evaluate_policies(json.loads(args.env_kwargs), args.policies.split(","), instances=args.instances,
                             episodes=args.episodes, seed=args.seed, out_dir=out, model=args.model)
    print(markdown_table(rows))
    with (out / "summary.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(out)


if __name__ == "__main__":
    import offline.oinc

    offline.oinc.main()
