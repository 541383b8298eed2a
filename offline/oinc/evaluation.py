"""OINC-v0's evaluation hook for :func:`offline.runner.evaluate` (contract 3): the Table II pairings.

A policy name is a Table II name (``TABLE2``), ``oinc=<run_dir>``, ``<inference>+<controller>`` (e.g.
``greedy+kalmia``, ``runs/x+aret``), or a bare inference policy or run folder (paired with the env
config's ``retraining``, default aret); :func:`resolve_pair` turns it into (label, controller,
inference, note). ``oinc`` without a trained run is reported as a row of NaN with a note; ``A_inf`` is
the trained run when one is given (``model=`` or ``oinc=<run_dir>``) and otherwise the ``liu`` heuristic
as a stand-in (labelled in the ``inference`` column).

Instance n uses ``instance_seed = instance_base + n`` (default ``seed + n``; a fresh env per pair and
instance, with the pair's retraining controller); episode e of instance n is reset with
``offline.protocol.episode_seed(seed, n, e)`` for every pair. A pair's ``policy_kwargs`` whose keys are in
``CONTROLLER_KWARGS`` (``retraining_share``) configure that pair's controller (its env), the others go to
the inference policy's factory, so a tuned retraining share belongs to one pair and not to the whole run.
A tuned pair (``offline.oinc.heuristics.TUNED_PAIRS``) gets its tuned values by default (``pair_defaults``).
Files: ``oinc_episodes.csv`` (one row per episode), with ``slo_weighted_sum`` (:func:`slo_weighted_sum`,
the ladder's metric) and ``jobs_total`` beside the Table II metrics.
"""

from __future__ import annotations

import math
import pathlib
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from envs.oinc.env import OINCEnv
from envs.oinc.retraining import CONTROLLERS
from offline.oinc.heuristics import pair_defaults
from offline.oinc.policies import ENV_ID, INFERENCE_POLICIES
from offline.protocol import episode_seed, run_episode
from offline.runner import Entry, EvaluationHook, Resolver, Run, evaluate, group_by_policy
from offline.stats import mean_ci95

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
#: Averaged per policy (mean and 95 % CI), on top of METRICS.
#: Also summarised per pair: the hit rates, the share of an edge the controller gave retraining while it
#: retrained (``retraining_share``), so completion times are read beside the share that bought them, and the
#: fraction of retraining edge-slots paused for inference (``paused_fraction``: A_ret's pause rule fires more
#: often behind weaker inference allocations, which lengthens completion times).
SECONDARY = ("slo_hit_rate", "deadline_hit_rate", "retraining_share", "paused_fraction")

#: Pair kwargs that configure the pair's retraining controller (its env), not the inference policy.
CONTROLLER_KWARGS = ("retraining_share",)
#: SLO hit rate an episode must reach for its weighted sum to count unpenalised: the level of the paper's
#: A_ret pairs (liu_aret and greedy_aret hit 0.91-0.92 of the SLOs on the tuning instances, kalmia 0.89).
SLO_HIT_THRESHOLD = 0.9
#: Seconds added to the weighted sum per unit of hit rate below the threshold (10 s per percentage
#: point): several times the retraining time any measured split buys per point of hit rate it gives
#: up (0.35-1.3 s per point between shares 0.7 and 0.9), so starving inference never pays.
SLO_PENALTY_S = 1000.0


def slo_weighted_sum(weighted_sum: float, slo_hit_rate: float) -> float:
    """The ladder's metric: the weighted sum (Table II's "Sum", s) plus ``SLO_PENALTY_S`` per unit of SLO
    hit rate below ``SLO_HIT_THRESHOLD`` (0 at or above it), so the weighted sum cannot be bought by
    starving inference. Lower is better."""
    return float(weighted_sum) + SLO_PENALTY_S * max(0.0, SLO_HIT_THRESHOLD - float(slo_hit_rate))


#: The shipped SAC-D (agents/pretrained/oinc-v0-sacd, trained with observation=extended) that plays A_inf in the
#: default evaluation; evaluate.py expands ``pretrained:<name>`` to its folder.
DEFAULT_A_INF = "pretrained:oinc-v0-sacd"
#: What `python evaluate.py env=oinc-v0` runs: Table II, with the shipped SAC-D as OINC's A_inf (``oinc=<run_dir>``
#: or ``policies=[...]`` choose another; the ainf_* rows use ``model=`` or the liu stand-in).
DEFAULT_EVALUATION: dict[str, Any] = {
    "policies": [f"oinc={DEFAULT_A_INF}" if name == "oinc" else name for name in TABLE2],
    "instances": 5,
    "episodes": 2,
}


def trained_env_kwargs(path: str) -> dict[str, Any]:
    """The ``env.kwargs`` a trained run (a folder, or a model file inside one) was trained with, read from its
    config.yaml ({} when none): a trained A_inf is played on the observation it was trained on, and a bare run is
    paired with the retraining controller and share it was trained beside (``algo=oinc_prior`` trains with Ekya)."""
    import yaml

    candidate = pathlib.Path(path)
    for folder in (candidate, *candidate.parents) if candidate.is_dir() else candidate.parents:
        config = folder / "config.yaml"
        if config.is_file():
            try:
                cfg = yaml.safe_load(config.read_text()) or {}
            except yaml.YAMLError:
                return {}
            kwargs = ((cfg.get("env") or {}).get("kwargs") or {}) if isinstance(cfg, dict) else {}
            return dict(kwargs) if isinstance(kwargs, dict) else {}
    return {}


def trained_observation(path: str) -> str | None:
    """The ``env.kwargs.observation`` a trained run was trained with (None when it names none). The observation
    only encodes the state; the dynamics and the other pairs' heuristics do not read it."""
    value = trained_env_kwargs(path).get("observation")
    return str(value) if value is not None else None


def is_trained(path: str) -> bool:
    """A training run folder or a model file in one (``.zip``/``.pt``, e.g. a checkpoint): a trained A_inf."""
    candidate = pathlib.Path(path)
    return candidate.is_dir() or (candidate.is_file() and candidate.suffix in (".zip", ".pt"))


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
                if not is_trained(model):
                    raise ValueError(f"model={model!r} is invalid for policy={name!r}: expected a training run folder")
                inference, note = model, "A_inf = trained run"
            elif name == "oinc":
                return name, controller, None, "missing: no trained run given (oinc=<run_dir> or model=...)"
            else:
                inference, note = A_INF_STAND_IN, f"A_inf stand-in = {A_INF_STAND_IN} (no trained run given)"
        return name, controller, inference, note
    if "+" in name:
        inference, controller = name.rsplit("+", 1)
    elif is_trained(name):  # paired with the controller it was trained beside, else the env config's
        inference, controller = name, str(trained_env_kwargs(name).get("retraining") or default_controller)
    elif name in INFERENCE_POLICIES:
        inference, controller = name, default_controller
    else:
        valid = [*TABLE2, "oinc=<run_dir>", "<inference>+<controller>", "<run_dir>"]
        raise ValueError(
            f"policy={name!r} is not known for {ENV_ID}: expected one of {valid} with inference in "
            f"{list(INFERENCE_POLICIES)} (or a run folder) and controller in {list(CONTROLLERS)}"
        )
    if controller not in CONTROLLERS:
        raise ValueError(f"retraining={controller!r} is invalid in policy={name!r}: expected one of {list(CONTROLLERS)}")
    if inference not in INFERENCE_POLICIES and not is_trained(inference):
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


def check_policy_names(policies: list[str]) -> None:
    """What evaluate.py accepts for OINC-v0: Table II names, ``oinc=<run_dir>``, ``<inference>+<controller>``,
    an inference policy or a run folder; raises ValueError listing the valid forms otherwise."""
    for name in policies:
        resolve_pair(name, None)


class OINCHook(EvaluationHook):
    """OINC-v0's parts of :func:`offline.runner.evaluate` (see the module docstring)."""
    key_columns = {
        'retraining': 'retraining controller',
        'inference_latency_s': 'mean inference latency (s)',
        'retraining_completion_s': 'mean retraining completion (s)',
        'weighted_sum': "Table II's sum (s)",
        'weighted_sum_ci95': 'its 95 % CI half-width',
        'slo_hit_rate': 'share of tasks meeting their SLO',
        'decision_ms': 'ms per decision',
    }

    env_id = ENV_ID
    score_metric = "weighted_sum"
    higher_is_better = False
    default_evaluation = DEFAULT_EVALUATION
    episodes_csv = "oinc_episodes.csv"
    options = {"model": None}

    def check_policy_names(self, env_id: str, policies: Sequence[str], available: Sequence[str]) -> None:
        check_policy_names(list(policies))

    def prepare(self, run: Run) -> None:
        kwargs = _plain(run.env_kwargs)
        run.state["default_controller"] = kwargs.pop("retraining", "aret")
        kwargs.pop("instance_seed", None)
        run.env_kwargs = kwargs
        run.state["decision_s"] = {}

    def entries(self, run: Run) -> list[Entry]:
        """One entry per distinct pair label; ``policy`` is the inference spec (None: missing)."""
        entries: dict[str, Entry] = {}
        for name in run.policies:
            label, controller, inference, note = resolve_pair(name, run.options["model"], run.state["default_controller"])
            kwargs = {**pair_defaults(label), **run.policy_kwargs.get(label, {})}  # tuned unless overridden
            controller_kwargs = {key: kwargs.pop(key) for key in CONTROLLER_KWARGS if key in kwargs}
            if inference is not None and is_trained(inference) and "+" not in name:
                trained = trained_env_kwargs(inference)  # the share the run was trained beside, when it names one
                if trained.get("retraining") == controller:
                    controller_kwargs.update({k: trained[k] for k in CONTROLLER_KWARGS
                                              if trained.get(k) is not None and k not in controller_kwargs})
            extra = {"controller": controller, "note": note, "controller_kwargs": controller_kwargs}
            entries.setdefault(label, Entry(label, inference, kwargs, extra))
        return list(entries.values())

    def env_key(self, run: Run, instance: int, entry: Entry) -> tuple[int, int]:
        return instance, entry.index  # a fresh env per pair (its retraining controller) and instance

    def make_env(self, run: Run, instance: int, entry: Entry) -> gym.Env:
        kwargs = {**run.env_kwargs, **entry.extra.get("controller_kwargs", {})}
        if entry.policy is not None and is_trained(entry.policy):
            kwargs["observation"] = trained_observation(entry.policy) or kwargs.get("observation", "paper")
        return OINCEnv(**kwargs, retraining=entry.extra["controller"], instance_seed=run.instance_seed(instance))

    def play(self, run: Run, env: gym.Env, policy: Any, entry: Entry, instance: int, episode: int,
             context: Any) -> dict[str, Any]:
        ep_seed = episode_seed(run.seed, instance, episode)
        start = time.perf_counter()
        result = run_episode(env, policy, seed=ep_seed, time_decisions=True)
        wall = time.perf_counter() - start
        info = result.final_info
        run.state["decision_s"].setdefault(entry.name, []).extend(result.decision_seconds)
        return {"policy": entry.name, "instance": instance, "episode": episode, "seed": ep_seed, "wall_s": wall} | {
            m: info[m] for m in (*METRICS, *SECONDARY)
        } | {"slo_weighted_sum": slo_weighted_sum(info["weighted_sum"], info["slo_hit_rate"]),
             "jobs_total": info["jobs_total"]}

    def episode_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Grouped by pair, in the requested order (then instance, episode)."""
        order = {entry.name: entry.index for entry in run.entries}
        return sorted(records, key=lambda r: order[r["policy"]])

    def summary_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``policy, inference, retraining``, mean and ``_ci95`` of METRICS and the hit rates, decision_ms, note."""
        by_label = {entry.name: entry for entry in run.entries}
        by_name = group_by_policy(records)
        rows = []
        for name in run.policies:
            label = resolve_pair(name, run.options["model"], run.state["default_controller"])[0]
            entry = by_label[label]
            row: dict[str, Any] = {
                "policy": label, "inference": entry.policy or "missing", "retraining": entry.extra["controller"]
            }
            if entry.policy is None:
                for metric in (*METRICS, *SECONDARY):
                    row[metric] = float("nan")
                    row[f"{metric}_ci95"] = float("nan")
                row["decision_ms"] = float("nan")
            else:
                recs = by_name[label]
                for m in (*METRICS, *SECONDARY):
                    finite = [v for v in (float(r[m]) for r in recs) if math.isfinite(v)]
                    mean, half = mean_ci95(finite) if finite else (float("nan"), float("nan"))
                    row[m], row[f"{m}_ci95"] = mean, half
                row["decision_ms"] = 1e3 * float(np.mean(run.state["decision_s"][label]))
            row["note"] = entry.extra["note"]
            rows.append(row)
        return rows


#: OINC-v0's evaluation hook (``Problem.evaluation``).
HOOK = OINCHook()


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
    resolve: Resolver | None = None,
) -> list[dict]:
    """Run each policy (a Table II name, an inference+controller pair, or a bare inference policy / run
    folder paired with ``env_kwargs["retraining"]``) on the same instances and episodes
    (:func:`offline.runner.evaluate`).

    Returns one row per policy: ``policy, inference, retraining`` then the mean and ``_ci95`` half-width
    (over all instance x episode runs) of inference_latency_s, retraining_completion_s, weighted_sum,
    success_rate, plus slo_hit_rate, deadline_hit_rate, decision_ms (mean time per act call) and a note.
    ``model`` is a trained run folder used for ``oinc`` and as A_inf (a run folder needs
    ``resolve=agents.loading.resolve_policy``). Also writes ``out_dir/oinc_episodes.csv``.
    """
    return evaluate(ENV_ID, env_kwargs, policies, instances=instances, episodes=episodes, seed=seed,
                    out_dir=out_dir, progress=progress, resolve=resolve, model=model)


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
