"""OINC Table II with the SAC-D rows taken from several training seeds, beside the paper's numbers.

    python -m agents.oinc.table2 "runs=[runs/oinc_sacd/*]" publish=true     # the checked-in results/oinc/table2_sacd
    python -m agents.oinc.table2 "runs=[runs/oinc_sacd/*]" checkpoint=model_150000_steps.zip   # equal budgets

The seven (inference, controller) pairs of Table II are evaluated by :func:`offline.runner.evaluate` on
the same instances and episode seeds (Table II's protocol: instances ``seed .. seed+instances-1``, each
``episodes`` episodes). The three rows with the trained A_inf (``oinc`` = SAC-D + A_ret, ``ainf_dedas``,
``ainf_zhang``) are played once per training run; the four heuristic rows once. Every run must have been
trained with the same env kwargs; they are used for every row with ``resample_instance`` off, so the
heuristics and the learner see the same fixed instances.

A learned row's value is the mean over runs × episodes with a stratified-bootstrap 95 % CI over training
runs (rliable, runs resampled within each episode); ``<metric>_seed_lo/_hi`` give the range of the per-run
means. A heuristic row has the mean with a Student-t 95 % CI over its episodes. ``lowest_latency`` says
whether SAC-D + A_ret has the lowest mean inference latency of the seven pairs (the paper's claim).

Writes ``<out>/table2.csv`` (one row per pair), ``<out>/per_run.csv`` (the learned rows per run, with the
wall seconds each run took to reach the evaluated model: SB3's ``time/time_elapsed``),
``<out>/evaluation/`` (the runner's summary and per-episode files), ``<out>/table2.md``, ``<out>/table2.png``
and ``<out>/command.txt``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from agents.cli import run_cli
from agents.compare import _write, bootstrap_mean_ci, expand_runs, model_path, provenance, training_wall_s

#: Table II's learned rows: name -> retraining controller paired with the trained A_inf.
LEARNED_ROWS = {"oinc": "aret", "ainf_dedas": "dedas", "ainf_zhang": "zhang"}
#: Table II's heuristic rows (offline.oinc.TABLE2 names).
HEURISTIC_ROWS = ("ekya", "kalmia", "greedy_aret", "liu_aret")
#: Reported per row (episode means; the first two are Table II's columns).
REPORTED = ("inference_latency_s", "retraining_completion_s", "success_rate", "retraining_share", "paused_fraction")


@dataclass
class Table2Config:
    runs: list[str] = field(default_factory=list)  # SAC-D training run folders or glob patterns, one per seed
    instances: int = 5
    episodes: int = 2
    seed: int = 0
    checkpoint: str = ""  # a model file in each run's checkpoints/ (e.g. model_150000_steps.zip); "" = model.zip
    reps: int = 2000  # bootstrap resamples
    out: str = ""  # "" = outputs/oinc/table2_sacd (publish=true: the checked-in results/oinc/table2_sacd)
    publish: bool = False  # true: out may be (and by default is) a checked-in folder


def _episode_values(path: Path) -> dict[str, dict[str, list[float]]]:
    """Per policy label and metric, the per-episode values (in instance, episode order) of the runner's file."""
    import csv

    values: dict[str, dict[str, list[float]]] = {}
    with path.open() as handle:
        for row in csv.DictReader(handle):
            per_metric = values.setdefault(row["policy"], {m: [] for m in REPORTED})
            for m in REPORTED:
                per_metric[m].append(float(row[m]))
    return values


def output_folder(cfg: Table2Config) -> Path:
    """``cfg.out`` (default: outputs/oinc/table2_sacd, or results/oinc/table2_sacd with ``publish=true``);
    ValueError for a checked-in path without ``publish=true``, before anything runs."""
    from offline.provenance import check_output_path, default_output, require_clone

    if cfg.out:
        out = Path(cfg.out)
    else:
        out = require_clone() / "results" / "oinc" / "table2_sacd" if cfg.publish else default_output("oinc", "table2_sacd")
    return check_output_path(out, publish=cfg.publish)


def table2(cfg: Table2Config) -> list[dict[str, Any]]:
    """Evaluate, aggregate and write the tables (see the module docstring); returns the rows."""
    out = output_folder(cfg)  # before any run is read or evaluated
    from agents.loading import checkpoint_steps, resolve_policy
    from offline.oinc import PAPER_TABLE2, TABLE2
    from offline.runner import evaluate
    from offline.stats import mean_ci95

    runs = expand_runs(cfg.runs)
    configs = {run: OmegaConf.load(run / "config.yaml") for run in runs}
    ids = {str(c.env.id) for c in configs.values()}
    if ids != {"OINC-v0"}:
        raise ValueError(f"runs must be OINC-v0 training runs; got env ids {sorted(ids)}")
    kwargs = {OmegaConf.to_yaml(c.env.kwargs) for c in configs.values()}
    if len(kwargs) != 1:
        raise ValueError("the runs were trained with different env kwargs; give runs of one setting")
    env_kwargs = OmegaConf.to_container(next(iter(configs.values())).env.kwargs, resolve=True)
    env_kwargs["resample_instance"] = False  # Table II: every pair on the same fixed instances
    env_kwargs.pop("instance_seed", None)
    models = {run: model_path(run, cfg.checkpoint) for run in runs}
    steps = {run: checkpoint_steps(models[run], configs[run].steps) for run in runs}
    names = [*HEURISTIC_ROWS, *(f"{models[run]}+{controller}" for run in runs for controller in LEARNED_ROWS.values())]
    evaluate("OINC-v0", env_kwargs, names, instances=cfg.instances, episodes=cfg.episodes, seed=cfg.seed,
             out_dir=out / "evaluation", progress=False, resolve=resolve_policy)
    episodes = _episode_values(out / "evaluation" / "oinc_episodes.csv")

    rows: list[dict[str, Any]] = []
    per_run: list[dict[str, Any]] = []
    for name in TABLE2:
        inference, controller = TABLE2[name]
        row: dict[str, Any] = {"policy": name, "inference": inference, "retraining": controller}
        if name in LEARNED_ROWS:
            labels = [f"{models[run]}+{LEARNED_ROWS[name]}" for run in runs]
            row["inference"] = "SAC-D"
            row["runs"] = len(runs)
            for m in REPORTED:
                matrix = np.array([episodes[label][m] for label in labels])
                mean, lo, hi = bootstrap_mean_ci(matrix, cfg.reps)
                seed_means = matrix.mean(axis=1)
                row |= {m: mean, f"{m}_lo": lo, f"{m}_hi": hi,
                        f"{m}_seed_lo": float(seed_means.min()), f"{m}_seed_hi": float(seed_means.max())}
            for run, label in zip(runs, labels):
                per_run.append({"policy": name, "run": str(run), "model": str(models[run]),
                                "seed": int(configs[run].seed), "steps": steps[run],
                                "train_wall_s": training_wall_s(run, steps[run]),
                                **{m: float(np.mean(episodes[label][m])) for m in REPORTED}})
        else:
            row["runs"] = 0
            for m in REPORTED:
                mean, half = mean_ci95(episodes[name][m])
                row |= {m: mean, f"{m}_lo": mean - half, f"{m}_hi": mean + half}
        paper = PAPER_TABLE2[name]
        row |= {"paper_inference_latency_s": paper[0], "paper_retraining_completion_s": paper[1]}
        rows.append(row)
    lowest = min(rows, key=lambda r: r["inference_latency_s"])["policy"]
    for row in rows:
        row["lowest_latency"] = row["policy"] == lowest
    _write(out / "table2.csv", rows)
    _write(out / "per_run.csv", per_run)
    (out / "table2.md").write_text(markdown(rows, cfg, len(runs)) + "\n")
    _plot(rows, out / "table2.png")
    (out / "command.txt").write_text("python -m agents.oinc.table2 " + " ".join(sys.argv[1:]) + "\n" + provenance(out))
    return rows


def markdown(rows: list[dict[str, Any]], cfg: Table2Config, n_runs: int) -> str:
    """The table as markdown: mean [95 % CI] for ours, the paper's number beside it."""
    lines = [f"Table II, {cfg.instances} instances x {cfg.episodes} episodes per pair; SAC-D rows over {n_runs} "
             "training runs (stratified-bootstrap CI over runs), heuristics: t-CI over episodes.", "",
             "| pair | inference | retraining | inference latency s [95 % CI] | paper | completion s [95 % CI] | "
             "paper | retraining share | paused fraction |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['policy']} | {r['inference']} | {r['retraining']} | {r['inference_latency_s']:.3f} "
            f"[{r['inference_latency_s_lo']:.3f}, {r['inference_latency_s_hi']:.3f}] | {r['paper_inference_latency_s']:.3f} | "
            f"{r['retraining_completion_s']:.1f} [{r['retraining_completion_s_lo']:.1f}, {r['retraining_completion_s_hi']:.1f}] | "
            f"{r['paper_retraining_completion_s']:.1f} | {r['retraining_share']:.2f} | {r['paused_fraction']:.2f} |")
    return "\n".join(lines)


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, metric, paper, label in (
        (axes[0], "inference_latency_s", "paper_inference_latency_s", "inference latency (s)"),
        (axes[1], "retraining_completion_s", "paper_retraining_completion_s", "retraining completion (s)"),
    ):
        x = np.arange(len(rows))
        means = np.array([r[metric] for r in rows])
        err = np.array([[m - r[f"{metric}_lo"], r[f"{metric}_hi"] - m] for r, m in zip(rows, means)]).T
        colours = ["tab:orange" if r["runs"] else "tab:blue" for r in rows]
        ax.bar(x, means, yerr=err, color=colours, capsize=3, label="ours (orange: SAC-D over runs)")
        ax.plot(x, [r[paper] for r in rows], "k_", markersize=18, mew=2, label="paper")
        ax.set_xticks(x, [r["policy"] for r in rows], rotation=30, ha="right")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(cfg: Table2Config) -> None:
    try:
        rows = table2(cfg)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(markdown(rows, cfg, len(expand_runs(cfg.runs))))
    print(output_folder(cfg))


if __name__ == "__main__":
    run_cli(main, Table2Config, __doc__)
