"""Learners against the best non-learning baseline, over training seeds, with rliable's statistics.

    python -m agents.compare "runs=[runs/uec_learners/*]" publish=true out=results/uec/learners
    python -m agents.compare "runs=[runs/uec_prior/*]" "baselines=[lp_bid_price]" "others=[]" seed=2026 \
        instance_base=100 instances=10 episodes=2 publish=true out=results/uec/prior/held_out  # the held-out set
    python -m agents.compare "runs=[runs/a*,runs/b*]" env_id=UEC-v0 episodes=30 \
        "baselines=[pickconfigs,srs,sumita,cvs,random]" "others=[rescue,rescue_fallback]"
    python -m agents.compare "runs=[runs/oinc_prior/*]" env_id=OINC-v0 metric=slo_weighted_sum \
        higher_is_better=false "baselines=[slo_liu+ekya]" "others=[]" publish=true out=results/oinc/prior/held_out
    python -m agents.compare "runs=[runs/corais_v1_seeds/*]" env_id=CoRaiS-v1 metric=cost higher_is_better=false \
        "baselines=[ils_5s]" "others=[ils_100ms]" "run_kwargs={search_time: 0.1}" seed=2026 instance_base=100 \
        instances=10 episodes=1 publish=true out=results/corais/seeds_20-10-100  # the network in the 100 ms search
    python -m agents.compare "runs=[runs/corais_pomo/*]" env_id=CoRaiS-v1 metric=cost higher_is_better=false \
        "baselines=[ils_it1600]" "others=[list_greedy_ls]" "env_kwargs={scale: [20, 10, 100]}" \
        "evaluation_kwargs={reference: list_greedy_ls}" seed=60000 instance_base=60000 instances=100 episodes=1 \
        publish=true out=results/corais/pomo/fresh_20-10-100  # the constructive dispatcher on fresh instances
    python -m agents.compare "runs=[runs/aset_ppo/*]" env_id=ASET-v1 metric=success_rate \
        "baselines=[threshold_switch,periodic_switch]" "env_kwargs={theta: 0.0, horizon: 60}" seed=2026 \
        instance_base=100 instances=10 episodes=1 publish=true out=results/aset/ppo_v1/held_out  # the ladder episodes

Every run folder (grouped by the algorithm its config.yaml names) and every baseline is evaluated by
:func:`offline.runner.evaluate` on the same instances and episode seeds (common random numbers; the
runs' own env kwargs, which must agree, updated by ``env_kwargs``; runs of one algorithm at several budgets form one group per
budget). A run's score is its mean ``metric`` divided by the best
baseline's (the strongest of ``baselines`` on these very episodes; for a cost, ``higher_is_better=false``, the
best baseline's divided by the run's), so 1.0 = as good as the best baseline and above 1 = better. A metric the
summary rows lack is averaged from the evaluation's episode rows (OINC's ``slo_weighted_sum``); with episode
rows each run also gets its paired per-episode difference to the best baseline with a 95 % CI. Per algorithm (Agarwal et al., NeurIPS 2021, via rliable): the interquartile mean of the
runs' scores with a stratified-bootstrap 95 % CI, the mean, and the probability of improvement over the
best baseline — the chance that a training run of the algorithm beats it (ties count ½), with its CI.

Run folders are read as the loaders read them (:func:`agents.loading.load_run_config`): an env id outside the
problem registry or a class outside the allow-list (:mod:`envs.allowlist`) is refused before any env is made.
``out`` defaults to the git-ignored ``outputs/compare``; a path of the clone's checked-in files (``results/...``)
needs ``publish=true`` (:func:`offline.provenance.check_output_path`), checked before anything runs.

Writes ``<out>/runs.csv`` (one row per run), ``<out>/learners.csv`` (one row per algorithm),
``<out>/policies.csv`` (the evaluation's summary rows), ``<out>/learners.png`` (IQM with CIs) and
``<out>/command.txt`` (the command line and the runs' commit-free provenance).
"""

from __future__ import annotations

import csv
import glob
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from agents.cli import run_cli


@dataclass
class CompareConfig:
    runs: list[str] = field(default_factory=list)  # run folders or glob patterns
    env_id: str = "UEC-v0"
    baselines: list[str] = field(default_factory=lambda: ["pickconfigs", "srs", "sumita", "cvs", "random"])
    others: list[str] = field(default_factory=lambda: ["rescue"])  # evaluated and reported, not a reference
    metric: str = "profit_mean"  # a summary column, or an episode column (e.g. OINC's slo_weighted_sum)
    higher_is_better: bool = True  # false for costs (OINC's slo_weighted_sum, CoRaiS' response time)
    instances: int = 1
    episodes: int = 30
    seed: int = 0  # episode seeds seed, seed+1, ...; UEC: instance i has instance_seed = seed + i unless instance_base
    instance_base: int | None = None  # instance i has instance_seed = instance_base + i (offline.partition's sets)
    reps: int = 5000  # bootstrap resamples
    run_kwargs: dict[str, Any] = field(default_factory=dict)  # every run's policy kwargs, e.g. {search_time: 0.1}
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # over the runs' env kwargs, e.g. the ladder's {horizon: 60}
    evaluation_kwargs: dict[str, Any] = field(default_factory=dict)  # the evaluation hook's options, e.g. CoRaiS'
    #   {reference: list_greedy_ls} (a played policy as the gap reference instead of a 10 s MILP per instance)
    out: str = "outputs/compare"  # git-ignored; a checked-in path (results/...) needs publish=true
    publish: bool = False  # true: out may be a path of the clone's checked-in files


def expand_runs(patterns: list[str]) -> list[Path]:
    """Run folders (with a config.yaml) matched by ``patterns``, sorted; raises if a pattern matches none."""
    found: list[Path] = []
    for pattern in patterns:
        matched = sorted(Path(p) for p in glob.glob(pattern) if (Path(p) / "config.yaml").is_file())
        if not matched:
            raise ValueError(f"runs entry {pattern!r} matches no training run folder (a folder with config.yaml)")
        found += [m for m in matched if m not in found]
    if not found:
        raise ValueError("runs is empty: give run folders or glob patterns, e.g. runs=[runs/uec_learners/*]")
    return found


def model_path(run: Path, checkpoint: str) -> Path:
    """The run folder itself (its model.zip) or ``run/checkpoints/<checkpoint>``, which must exist."""
    if not checkpoint:
        return run
    path = run / "checkpoints" / checkpoint
    if not path.is_file():
        raise ValueError(f"checkpoint={checkpoint!r}: {path} does not exist")
    return path


def training_wall_s(run: Path, steps: int) -> float:
    """Seconds the run took to reach ``steps`` env steps (SB3's time/time_elapsed in progress.csv): the first
    log line at or past ``steps``; when the log stops short of it (DQN logs every 4 episodes), the last line's
    time scaled by steps / its steps. NaN without a log."""
    import csv

    progress = run / "progress.csv"
    if not progress.is_file():
        return float("nan")
    last = None
    with progress.open() as handle:
        for row in csv.DictReader(handle):
            if not row.get("time/total_timesteps"):
                continue
            logged, elapsed = float(row["time/total_timesteps"]), float(row["time/time_elapsed"])
            if logged >= steps:
                return elapsed
            last = (logged, elapsed)
    return last[1] * steps / last[0] if last and last[0] > 0 else float("nan")


def provenance(out: Path) -> str:
    """Commit (``+dirty`` when tracked files other than this run's outputs differ), machine and date lines."""
    import os
    import platform
    import subprocess
    from datetime import datetime, timezone

    import torch

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                            text=True).stdout.splitlines()
    outputs = out.resolve()
    dirty = [line for line in status if not (Path(line[3:]).resolve().is_relative_to(outputs))]
    return (f"commit {commit}{'+dirty' if dirty else ''}\n"
            f"machine {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
            f"torch {torch.__version__}\ndate {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}\n")


def _quiet_rliable() -> None:
    """rliable logs "Calculating estimates for ..." at INFO through absl for every call; keep it to warnings."""
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.WARNING)


def bootstrap_mean_ci(matrix: np.ndarray, reps: int, seed: int = 0) -> tuple[float, float, float]:
    """Mean of a (runs, episodes) matrix and its stratified-bootstrap 95 % CI over runs (rliable)."""
    from rliable import library as rly

    _quiet_rliable()
    np.random.seed(seed)  # noqa: NPY002 (rliable's bootstrap draws from the global generator)
    point, ci = rly.get_interval_estimates({"x": matrix}, lambda x: np.array([np.mean(x)]), reps=reps)
    return float(point["x"][0]), float(ci["x"][0, 0]), float(ci["x"][1, 0])


def interval_estimates(scores: dict[str, np.ndarray], reps: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """IQM with stratified-bootstrap 95 % CIs (rliable) of each algorithm's (runs, 1) score matrix."""
    from rliable import library as rly
    from rliable import metrics

    _quiet_rliable()
    np.random.seed(seed)  # noqa: NPY002 (rliable's bootstrap draws from the global generator)
    point, ci = rly.get_interval_estimates(scores, lambda x: np.array([metrics.aggregate_iqm(x)]), reps=reps)
    return {name: {"iqm": float(point[name][0]), "iqm_lo": float(ci[name][0, 0]), "iqm_hi": float(ci[name][1, 0])}
            for name in scores}


def improvement_over(scores: dict[str, np.ndarray], reference: float, reps: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """P(a run of the algorithm beats ``reference``) with a bootstrap CI (rliable's probability of improvement)."""
    from rliable import library as rly
    from rliable import metrics

    _quiet_rliable()
    np.random.seed(seed)  # noqa: NPY002
    pairs = {name: (x, np.full_like(x, reference)) for name, x in scores.items()}
    point, ci = rly.get_interval_estimates(pairs, metrics.probability_of_improvement, reps=reps)
    return {name: {"p_improvement": float(np.ravel(point[name])[0]), "p_improvement_lo": float(np.ravel(ci[name])[0]),
                   "p_improvement_hi": float(np.ravel(ci[name])[1])} for name in scores}


def algorithm_groups(configs: dict[Any, Any]) -> dict[Any, str]:
    """Run -> its group label: the algorithm name, with the budget appended when runs of one algorithm have
    several (``sac (30000 steps)``)."""
    budgets: dict[str, set[int]] = {}
    for c in configs.values():
        budgets.setdefault(str(c.algo.name), set()).add(int(c.steps))
    return {run: str(c.algo.name) + (f" ({int(c.steps)} steps)" if len(budgets[str(c.algo.name)]) > 1 else "")
            for run, c in configs.items()}


def learner_table(rows: list[dict[str, Any]], policies: list[str], metric: str, higher_is_better: bool,
                  reps: int = 2000) -> list[dict[str, Any]]:
    """rliable's table for the trained runs among an evaluation's ``policies`` (evaluate.py).

    ``rows`` are the evaluation's summary rows. Runs are grouped by algorithm (and budget when one
    algorithm has several); a run's score is its ``metric`` relative to the best non-learning policy of
    the same evaluation (``value / best`` when higher is better, ``best / value`` otherwise), so 1.0 =
    as good as the best baseline and above 1 = better. Empty when there is no run or no baseline.
    """
    from agents.loading import is_run_path, load_run_config, split_ablation, split_run_path

    value = {str(r["policy"]): float(r[metric]) for r in rows if metric in r and np.isfinite(float(r[metric]))}
    runs = [p for p in policies if is_run_path(p) and p in value]
    # ablated learners (zeroed-obs:<run>) are neither runs nor baselines
    baselines = [p for p in policies if not is_run_path(split_ablation(p)[1]) and p in value]
    if not runs or not baselines:
        return []
    best_name = (max if higher_is_better else min)(baselines, key=lambda n: value[n])
    best = value[best_name]
    groups = algorithm_groups({run: load_run_config(split_run_path(run)[0]) for run in runs})
    scores: dict[str, list[float]] = {}
    for run in runs:
        scores.setdefault(groups[run], []).append(value[run] / best if higher_is_better else best / value[run])
    matrices = {a: np.array(v, dtype=float).reshape(-1, 1) for a, v in scores.items()}
    iqm = interval_estimates(matrices, reps)
    poi = improvement_over(matrices, 1.0, reps)
    return [{"algo": a, "runs": len(v), **iqm[a], "mean": float(np.mean(v)), "min": float(np.min(v)),
             "max": float(np.max(v)), **poi[a], "metric": metric, "higher_is_better": higher_is_better,
             "best_baseline": best_name, "best_baseline_value": best} for a, v in scores.items()]


def write_learner_table(table: list[dict[str, Any]], out: Path) -> None:
    """``out/learners.csv`` and ``out/learners.png`` (IQM with CIs against the best baseline)."""
    _write(out / "learners.csv", table)
    _plot(table, str(table[0]["best_baseline"]), out / "learners.png", metric=str(table[0]["metric"]))


def compare(cfg: CompareConfig) -> list[dict[str, Any]]:
    """Evaluate, aggregate and write the tables (see the module docstring); returns the per-algorithm rows."""
    from agents.loading import load_run_config, resolve_policy
    from agents.registry import check_env_kwargs
    from offline.provenance import check_output_path, check_writable_folder
    from offline.runner import evaluate

    check_output_path(cfg.out, publish=cfg.publish)
    check_writable_folder("out", cfg.out)
    runs = expand_runs(cfg.runs)
    # the loaders' reading: env ids of the problem registry and allow-listed classes only, before any env is made
    configs = {run: load_run_config(run) for run in runs}
    ids = {str(c.env.id) for c in configs.values()}
    if ids != {cfg.env_id}:
        raise ValueError(f"env_id={cfg.env_id!r} but the runs were trained on {sorted(ids)}")
    kwargs = {str(OmegaConf.to_yaml(c.env.kwargs)) for c in configs.values()}
    if len(kwargs) != 1:
        raise ValueError("the runs were trained with different env kwargs; compare runs of one setting at a time")
    first = next(iter(configs.values()))
    check_env_kwargs(cfg.env_id, cfg.env_kwargs, key="env_kwargs")
    env_kwargs = {**OmegaConf.to_container(first.env.kwargs, resolve=True), **cfg.env_kwargs}
    wrappers = list(first.env.get("wrappers") or [])
    out = Path(cfg.out)
    names = [*cfg.baselines, *cfg.others, *map(str, runs)]
    run_names = set(map(str, runs))

    def resolve(env_id: str, name: str, env: Any, **kwargs: Any) -> Any:
        """The runs are played with ``cfg.run_kwargs`` (e.g. the CoRaiS network inside the 100 ms search)."""
        return resolve_policy(env_id, name, env, **({**cfg.run_kwargs, **kwargs} if name in run_names else kwargs))

    if cfg.run_kwargs:  # a policy option the runs' loader does not take fails here, before any output is written
        from envs.problems import make

        probe = make(cfg.env_id, env_kwargs)
        try:
            resolve(cfg.env_id, str(runs[0]), probe)
        except TypeError as err:
            raise ValueError(f"run_kwargs={dict(cfg.run_kwargs)!r} is invalid for {runs[0]}: {err}") from None
        finally:
            probe.close()

    rows = evaluate(cfg.env_id, env_kwargs, names, instances=cfg.instances, episodes=cfg.episodes, seed=cfg.seed,
                    out_dir=out / "evaluation", progress=False, resolve=resolve, wrappers=wrappers,
                    instance_base=cfg.instance_base, **cfg.evaluation_kwargs)
    episodes = episode_values(out / "evaluation", cfg.metric)
    if rows and cfg.metric in rows[0]:
        value = {str(r["policy"]): float(r[cfg.metric]) for r in rows}
    elif episodes:
        value = {p: float(np.mean(list(v.values()))) for p, v in episodes.items()}
    else:
        raise ValueError(f"metric={cfg.metric!r} is neither a summary column nor an episode column of this "
                         f"evaluation; summary columns: {sorted(rows[0]) if rows else []}")
    best_name = (max if cfg.higher_is_better else min)(cfg.baselines, key=lambda n: value[n])
    best = value[best_name]

    def ratio(v: float, ref: float) -> float:  # > 1 = better than ref, either direction
        return v / ref if cfg.higher_is_better else ref / v

    groups = algorithm_groups(configs)  # the same algorithm at several budgets: one group per budget
    if cfg.run_kwargs:  # the label says how the runs were played
        played = ", ".join(f"{k}={v}" for k, v in cfg.run_kwargs.items())
        groups = {run: f"{group} ({played})" for run, group in groups.items()}
    per_run = []
    for run in runs:
        paired = paired_difference(episodes, str(run), best_name, cfg.higher_is_better)
        per_run.append({"algo": groups[run], "seed": int(configs[run].seed), "run": str(run), "steps": int(configs[run].steps),
                        cfg.metric: value[str(run)],
                        "score": ratio(value[str(run)], best), **paired,
                        **{f"vs_{o}": ratio(value[str(run)], value[o]) for o in cfg.others if value[o] > 0}})
    algos = list(dict.fromkeys(r["algo"] for r in per_run))
    scores = {a: np.array([[r["score"]] for r in per_run if r["algo"] == a]) for a in algos}
    iqm = interval_estimates(scores, cfg.reps)
    poi = improvement_over(scores, 1.0, cfg.reps)
    table = []
    for a in algos:
        x = scores[a][:, 0]
        table.append({"algo": a, "runs": int(x.size), **iqm[a], "mean": float(x.mean()), "min": float(x.min()),
                      "max": float(x.max()), **poi[a], "best_baseline": best_name, f"best_baseline_{cfg.metric}": best,
                      "metric": cfg.metric, "higher_is_better": cfg.higher_is_better,
                      "episodes_per_run": cfg.instances * cfg.episodes})
    _write(out / "runs.csv", per_run)
    _write(out / "learners.csv", table)
    _write(out / "policies.csv", rows)
    _plot(table, best_name, out / "learners.png", metric=cfg.metric)
    (out / "command.txt").write_text("python -m agents.compare " + " ".join(sys.argv[1:]) + "\n")
    return table


def episode_values(folder: Path, metric: str) -> dict[str, dict[tuple[str, str], float]]:
    """Per policy, ``metric`` per (instance, episode) from the evaluation's one-row-per-episode file
    (``*_episodes.csv``; ASET's ``per_episode.csv``, CoRaiS' ``corais_per_instance.csv``) (the column ``metric``, or
    ``metric`` without its ``_mean`` suffix: UEC's ``profit_mean`` is ``profit`` per episode); empty when the file or
    the column is missing."""
    files = sorted({*folder.glob("*_episodes.csv"), *folder.glob("*per_episode.csv"), *folder.glob("*_per_instance.csv")})
    if len(files) != 1:
        return {}
    with files[0].open(newline="") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        column = metric if metric in columns else metric.removesuffix("_mean")
        if column not in columns:
            return {}
        out: dict[str, dict[tuple[str, str], float]] = {}
        for row in reader:
            out.setdefault(row["policy"], {})[(row["instance"], row["episode"])] = float(row[column])
    return out


def paired_difference(episodes: dict[str, dict[tuple[str, str], float]], policy: str, reference: str,
                      higher_is_better: bool = True) -> dict[str, Any]:
    """Mean per-episode difference ``policy − reference`` with its 95 % CI half-width (common random numbers make
    the episodes pairs) and the episodes where ``policy`` did better / worse; empty without episode values."""
    from offline.stats import mean_ci95

    if policy not in episodes or reference not in episodes:
        return {}
    ref = episodes[reference]
    diff = np.array([episodes[policy][k] - ref[k] for k in ref])
    mean, half = mean_ci95(diff)
    sign = 1.0 if higher_is_better else -1.0
    return {"paired_diff": mean, "paired_diff_ci95": half, "episodes_better": int(np.sum(sign * diff > 0)),
            "episodes_worse": int(np.sum(sign * diff < 0))}


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        writer.writeheader()
        writer.writerows(rows)


def _plot(table: list[dict[str, Any]], best_name: str, path: Path, metric: str = "profit") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 0.6 * len(table) + 1.5))
    for i, row in enumerate(table):
        ax.plot([row["iqm_lo"], row["iqm_hi"]], [i, i], color="tab:blue", lw=6, alpha=0.5)
        ax.plot(row["iqm"], i, "o", color="tab:blue")
    ax.axvline(1.0, color="tab:red", ls="--", label=f"best baseline ({best_name})")
    ax.set_yticks(range(len(table)), [f"{r['algo']} ({r['runs']} runs)" for r in table])
    ax.set_xlabel(f"IQM of {metric} / best baseline (95 % stratified-bootstrap CI)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(cfg: CompareConfig) -> None:
    try:
        table = compare(cfg)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    for row in table:
        print(f"{row['algo']:>12}: IQM {row['iqm']:.3f} [{row['iqm_lo']:.3f}, {row['iqm_hi']:.3f}] x {row['best_baseline']}, "
              f"P(improvement) {row['p_improvement']:.2f} over {row['runs']} runs")
    print(cfg.out)


if __name__ == "__main__":
    run_cli(main, CompareConfig, __doc__)
