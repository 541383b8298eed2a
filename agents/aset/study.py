"""An ASET learner (the DQN, or any trained algo) against every static policy, ``periodic_switch`` and its own
observation ablations (issues 17, 27).

    python -m agents.aset.study "runs=[runs/aset_v1_dqn/aset-v1__dqn__*]"      # outputs/aset/dqn_study
    python -m agents.aset.study "runs=[runs/aset_v1_dqn/aset-v1__dqn__*]" out=results/aset/dqn_v1 publish=true
    python -m agents.aset.study "runs=[...]" "lams=[60]" ablations=false instances=1 episodes=1   # quicker

At every load in ``lams`` (60: the training load; 100: the paper's generalisation test, Fig. 6b) the
trained runs, their observation ablations (``zeroed-obs:<run>``, ``shuffled-obs:<run>``,
:data:`agents.loading.OBS_ABLATIONS`), the seven static policies, ``random_switch``, ``periodic_switch``
(a fixed cycle that reads no state) and ``best_static_hindsight`` are evaluated by
:func:`offline.runner.evaluate` on the same instances and episode seeds (common random numbers), with the
runs' own env kwargs (their env id, topology and scenario), ``lam`` replaced, ``theta = 0`` (the whole
``horizon`` is evaluated) and a fixed instance per seed.

A learned row (labelled by the runs' algo: ``dqn``, ``dqn zeroed-obs``, ``dqn shuffled-obs``; the runs must share
one algo) is the mean success rate over runs x
episodes with rliable's stratified-bootstrap 95 % CI over the training runs; a non-learning row has a
Student-t CI over its episodes.

``periodic_switch`` is first made as strong as a state-blind cycle gets (``tune_cycle``, on by default):
every cycle of static policies up to ``cycle_length`` windows (:func:`offline.aset.policies.cycle_candidates`,
133 cycles for length 3) is played at the training load on ``tune_episodes`` episodes of ``tune_horizon``
windows whose seeds the comparison does not use, and the best one is the ``periodic_switch`` of every
load (``cycles.csv`` lists them all). Differences are paired by episode: ``vs_<ref>`` is the mean of
(row - ref) over the same episodes, with the same kind of CI. ``p_improvement`` is rliable's probability
that a training run beats ``reference`` (ties count 1/2).

The claims checked (``claims.csv``; ``holds`` needs the whole 95 % CI of the difference above 0):

* (b) the agent beats every static policy (the best one on these episodes) at the training load;
* (d) trained at the first load, it still beats every static policy at each other load;
* the issue's target: it beats ``reference`` (``periodic_switch``) by at least ``margin`` success;
* it reads its state: it beats both of its observation ablations.

Writes ``<out>/study.csv`` (one row per load and policy), ``<out>/per_run.csv`` (each run's success with and
without the ablations, its training steps and wall time, and the share of windows per policy it played), ``<out>/claims.csv``,
``<out>/study.md``, ``<out>/study.png``, ``<out>/lam<λ>/`` (the runner's files) and ``<out>/command.txt``.
``out`` defaults to the git-ignored ``outputs/aset/dqn_study`` (``publish=true``: the checked-in
``results/aset/dqn_study``); a checked-in ``out`` without ``publish=true`` is refused before anything runs
(:func:`offline.provenance.check_output_path`).
"""

from __future__ import annotations

import csv
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from agents.cli import run_cli
from agents.compare import (
    _write,
    bootstrap_mean_ci,
    expand_runs,
    improvement_over,
    model_path,
    provenance,
    training_wall_s,
)


def learned_rows(agent: str) -> dict[str, str]:
    """The learned rows, labelled by the runs' algo (e.g. ``dqn``): the trained policy and its observation ablations
    (label -> name prefix)."""
    return {agent: "", f"{agent} zeroed-obs": "zeroed-obs:", f"{agent} shuffled-obs": "shuffled-obs:"}

METRICS = ("success_rate", "failed_rate", "rejected_rate")
#: First reset seed of the cycle search (evaluation seeds are offline.protocol.episode_seed's: far from it).
TUNING_SEED = 500_000


@dataclass
class StudyConfig:
    runs: list[str] = field(default_factory=list)  # ASET training run folders or glob patterns, one per seed
    lams: list[float] = field(default_factory=lambda: [60.0, 100.0])  # loads; the first is the training load
    instances: int = 2
    episodes: int = 2
    seed: int = 0
    horizon: int = 360  # windows per evaluated episode (360 = one hour)
    checkpoint: str = ""  # a model file in each run's checkpoints/; "" = the final model.zip
    ablations: bool = True  # also evaluate zeroed-obs:<run> and shuffled-obs:<run>
    reference: str = "periodic_switch"  # the state-blind policy the agent must beat by `margin`
    margin: float = 0.02  # success-rate margin of the target over `reference` (absolute, 0.02 = 2 points)
    reps: int = 2000  # bootstrap resamples
    tune_cycle: bool = True  # periodic_switch = the best cycle found on separate seeds (false: its default cycle)
    cycle_length: int = 3  # longest cycle searched
    tune_episodes: int = 2
    tune_horizon: int = 120  # windows per tuning episode
    out: str = ""  # "" = outputs/aset/dqn_study (publish=true: the checked-in results/aset/dqn_study)
    publish: bool = False  # true: out may be (and by default is) a checked-in folder

    def __post_init__(self) -> None:
        if not self.lams or any(not 1.0 <= float(x) <= 200.0 for x in self.lams):
            raise ValueError(f"lams={self.lams!r} is invalid: expected a non-empty list of loads in [1, 200]")
        for name in ("instances", "episodes", "horizon", "reps", "cycle_length", "tune_episodes", "tune_horizon"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} is invalid: expected an integer >= 1")
        if self.cycle_length < 2:
            raise ValueError(f"cycle_length={self.cycle_length!r} is invalid: expected an integer >= 2")
        if not 0.0 <= self.margin <= 1.0:
            raise ValueError(f"margin={self.margin!r} is invalid: expected a number in [0, 1]")


def _per_episode(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """Policy -> metric -> per-episode values (instance, episode order) of the runner's per_episode.csv."""
    values: dict[str, dict[str, list[float]]] = {}
    with path.open() as handle:
        for row in csv.DictReader(handle):
            per_metric = values.setdefault(row["policy"], {m: [] for m in METRICS})
            for m in METRICS:
                per_metric[m].append(float(row[m]))
    return {p: {m: np.array(v) for m, v in d.items()} for p, d in values.items()}


def _action_shares(path: Path, policy: str) -> dict[str, float]:
    """Mean share of windows per static policy that ``policy`` played over its episodes (per_episode.csv)."""
    with path.open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["policy"] == policy]
    names = [k[len("share_"):] for k in rows[0] if k.startswith("share_")]
    shares = {n: float(np.mean([float(r[f"share_{n}"]) for r in rows])) for n in names}
    return dict(sorted(shares.items(), key=lambda item: -item[1]))


def _mean_ci(values: np.ndarray, reps: int) -> tuple[float, float, float]:
    """Mean of a (runs, episodes) matrix (or of one row) with its 95 % CI: stratified bootstrap over runs
    (rliable) when there are several runs, else Student-t over the episodes."""
    from offline.stats import mean_ci95

    matrix = np.atleast_2d(values)
    if matrix.shape[0] > 1:
        return bootstrap_mean_ci(matrix, reps)
    mean, half = mean_ci95(matrix.ravel())
    return mean, mean - half, mean + half


def _difference(values: np.ndarray, reference: np.ndarray, reps: int) -> tuple[float, float, float]:
    """:func:`_mean_ci` of ``values - reference``, paired by run and episode (a 1-D ``reference`` is every run's)."""
    return _mean_ci(values - reference, reps)


def output_folder(cfg: StudyConfig) -> Path:
    """``cfg.out`` (default: outputs/aset/dqn_study, or results/aset/dqn_study with ``publish=true``); ValueError
    for a checked-in path without ``publish=true``, before anything runs."""
    from offline.provenance import check_output_path, default_output, require_clone

    if cfg.out:
        out = Path(cfg.out)
    else:
        out = require_clone() / "results" / "aset" / "dqn_study" if cfg.publish else default_output("aset", "dqn_study")
    return check_output_path(out, publish=cfg.publish)


def study(cfg: StudyConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Evaluate, aggregate and write the tables (see the module docstring); returns (rows, claims)."""
    out = output_folder(cfg)  # before any run is read or evaluated
    from agents.loading import checkpoint_steps, resolve_policy
    from envs.aset.types import POLICY_NAMES
    from offline.aset import HINDSIGHT
    from offline.runner import evaluate
    from offline.stats import mean_ci95

    runs = expand_runs(cfg.runs)
    configs = {run: OmegaConf.load(run / "config.yaml") for run in runs}
    ids = {str(c.env.id) for c in configs.values()}
    if len(ids) != 1 or not next(iter(ids)).startswith("ASET-"):
        raise ValueError(f"runs must be training runs of one ASET env id; got env ids {sorted(ids)}")
    if len({OmegaConf.to_yaml(c.env.kwargs) for c in configs.values()}) != 1:
        raise ValueError("the runs were trained with different env kwargs; give runs of one setting")
    algos = {str(c.algo.name) for c in configs.values()}
    if len(algos) != 1:
        raise ValueError(f"runs must be training runs of one algo (its rows are averaged over them); got {sorted(algos)}")
    agent = algos.pop()
    env_id = next(iter(ids))
    base_kwargs = OmegaConf.to_container(next(iter(configs.values())).env.kwargs, resolve=True)
    for key in ("instance_seed", "resample_instance"):
        base_kwargs.pop(key, None)
    base_kwargs |= {"theta": 0.0, "horizon": cfg.horizon}
    models = {run: str(model_path(run, cfg.checkpoint)) for run in runs}
    statics = list(POLICY_NAMES)
    if cfg.reference not in (*statics, "random_switch", "periodic_switch"):
        raise ValueError(f"reference={cfg.reference!r} is invalid: expected periodic_switch, random_switch or one of {statics}")
    learned = {label: [prefix + models[run] for run in runs]
               for label, prefix in learned_rows(agent).items() if cfg.ablations or not prefix}
    names = [*statics, "random_switch", "periodic_switch", HINDSIGHT, *(n for v in learned.values() for n in v)]
    policy_kwargs: dict[str, dict[str, Any]] = {}
    cycles: list[dict[str, Any]] = []
    if cfg.tune_cycle:
        from envs.problems import make
        from offline.aset.policies import best_cycle, cycle_candidates

        tuning_env = make(env_id, {**base_kwargs, "lam": float(cfg.lams[0]), "horizon": cfg.tune_horizon,
                                   "instance_seed": cfg.seed})
        cycles = best_cycle(tuning_env, cycle_candidates(cfg.cycle_length),
                            [TUNING_SEED + k for k in range(cfg.tune_episodes)])
        policy_kwargs["periodic_switch"] = {"sequence": tuple(cycles[0]["sequence"])}
    cycle = " > ".join(policy_kwargs.get("periodic_switch", {}).get("sequence", ("the default cycle",)))

    rows: list[dict[str, Any]] = []
    per_run: list[dict[str, Any]] = []
    claims: list[dict[str, Any]] = []
    for lam in cfg.lams:
        folder = out / f"lam{float(lam):g}"
        evaluate(env_id, {**base_kwargs, "lam": float(lam)}, names, instances=cfg.instances, episodes=cfg.episodes,
                 seed=cfg.seed, out_dir=folder, progress=False, resolve=resolve_policy, policy_kwargs=policy_kwargs)
        episodes = _per_episode(folder / "per_episode.csv")
        best_static = max(statics, key=lambda p: episodes[p]["success_rate"].mean())
        refs = {cfg.reference: episodes[cfg.reference]["success_rate"],
                "best_static": episodes[best_static]["success_rate"]}
        matrices = {label: np.array([episodes[n]["success_rate"] for n in labels]) for label, labels in learned.items()}
        for name in [*statics, "random_switch", "periodic_switch", HINDSIGHT, *learned]:
            row: dict[str, Any] = {"lam": float(lam), "policy": name, "runs": len(runs) if name in learned else 0}
            for m in METRICS:
                if name in learned:
                    matrix = np.array([episodes[n][m] for n in learned[name]])
                    mean, lo, hi = _mean_ci(matrix, cfg.reps)
                    row |= {m: mean, f"{m}_lo": lo, f"{m}_hi": hi}
                    if m == "success_rate":
                        seed_means = matrix.mean(axis=1)
                        row |= {"success_rate_seed_lo": float(seed_means.min()),
                                "success_rate_seed_hi": float(seed_means.max())}
                else:
                    mean, half = mean_ci95(episodes[name][m])
                    row |= {m: mean, f"{m}_lo": mean - half, f"{m}_hi": mean + half}
            values = matrices[name] if name in learned else episodes[name]["success_rate"]
            for ref_name, ref in refs.items():
                if name != ref_name:
                    mean, lo, hi = _difference(values, ref, cfg.reps)
                    row |= {f"vs_{ref_name}": mean, f"vs_{ref_name}_lo": lo, f"vs_{ref_name}_hi": hi}
            row["best_static"] = best_static
            if name in learned:
                poi = improvement_over({name: values.mean(axis=1, keepdims=True)}, float(refs[cfg.reference].mean()),
                                       cfg.reps)[name]
                row |= {f"p_improvement_over_{cfg.reference}": poi["p_improvement"]}
            rows.append(row)
        for run in runs:
            steps = checkpoint_steps(models[run], configs[run].steps)
            entry = {"lam": float(lam), "run": str(run), "model": models[run], "seed": int(configs[run].seed),
                     "steps": steps, "train_wall_s": training_wall_s(run, steps)}
            for label, labels in learned.items():
                entry[f"{label} success_rate"] = float(episodes[labels[runs.index(run)]]["success_rate"].mean())
            shares = _action_shares(folder / "per_episode.csv", learned[agent][runs.index(run)])
            entry[f"{agent} actions"] = ", ".join(f"{name} {share:.2f}" for name, share in shares.items() if share > 0)
            per_run.append(entry)
        claims += _claims(float(lam), cfg, rows, matrices, refs, cycle, first=lam == cfg.lams[0], agent=agent)
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "study.csv", rows)
    _write(out / "per_run.csv", per_run)
    _write(out / "claims.csv", claims)
    if cycles:
        _write(out / "cycles.csv", [{**row, "sequence": " > ".join(row["sequence"])} for row in cycles])
    (out / "study.md").write_text(markdown(rows, claims, cfg, env_id, len(runs)) + "\n")
    _plot(rows, cfg, out / "study.png", agent)
    (out / "command.txt").write_text("python -m agents.aset.study " + shlex.join(sys.argv[1:]) + "\n" + provenance(out))
    return rows, claims


def _claims(lam: float, cfg: StudyConfig, rows: list[dict[str, Any]], matrices: dict[str, np.ndarray],
            refs: dict[str, np.ndarray], cycle: str, first: bool, agent: str) -> list[dict[str, Any]]:
    """The claims at one load (see the module docstring) for the learned rows labelled ``agent``."""
    agent_row = next(r for r in rows if r["lam"] == lam and r["policy"] == agent)
    best = agent_row["best_static"]
    out = [{
        "lam": lam,
        "claim": "b: the agent beats every static policy" if first else "d: trained at the first load, it beats every static policy here",
        "holds": agent_row["vs_best_static_lo"] > 0,
        "difference": agent_row["vs_best_static"], "lo": agent_row["vs_best_static_lo"], "hi": agent_row["vs_best_static_hi"],
        "detail": f"against {best}, the best static policy on these episodes",
    }]
    ref = cfg.reference
    out.append({
        "lam": lam, "claim": f"target: beats {ref} by >= {cfg.margin:g} success",
        "holds": agent_row[f"vs_{ref}"] >= cfg.margin and agent_row[f"vs_{ref}_lo"] > 0,
        "difference": agent_row[f"vs_{ref}"], "lo": agent_row[f"vs_{ref}_lo"], "hi": agent_row[f"vs_{ref}_hi"],
        "detail": f"{ref} reads no state" + (f"; cycle {cycle}" if ref == "periodic_switch" else ""),
    })
    for ablated in (x for x in matrices if x != agent):
        mean, lo, hi = _difference(matrices[agent], matrices[ablated], cfg.reps)
        out.append({"lam": lam, "claim": f"reads its state: beats {ablated}", "holds": lo > 0, "difference": mean,
                    "lo": lo, "hi": hi, "detail": "paired by run and episode"})
    return out


def markdown(rows: list[dict[str, Any]], claims: list[dict[str, Any]], cfg: StudyConfig, env_id: str, n_runs: int) -> str:
    """The success table (mean [95 % CI], failed, rejected, difference to the reference) and the claims."""
    ref = cfg.reference
    lines = [f"{env_id}, {cfg.instances} instances x {cfg.episodes} episodes of {cfg.horizon} windows per policy and "
             f"load; learned rows over {n_runs} training runs (stratified-bootstrap CI over runs), others: t-CI over "
             "episodes.", "",
             f"| λ | policy | success [95 % CI] | failed | rejected | − {ref} [95 % CI] |", "|---|---|---|---|---|---|"]
    for r in rows:
        diff = (f"{r[f'vs_{ref}']:+.3f} [{r[f'vs_{ref}_lo']:+.3f}, {r[f'vs_{ref}_hi']:+.3f}]"
                if f"vs_{ref}" in r else "")
        lines.append(f"| {r['lam']:g} | {r['policy']} | {r['success_rate']:.3f} [{r['success_rate_lo']:.3f}, "
                     f"{r['success_rate_hi']:.3f}] | {r['failed_rate']:.3f} | {r['rejected_rate']:.3f} | {diff} |")
    # section markers let the docs include the claims alone (pymdownx.snippets: study.md:claims)
    lines += ["", "<!-- --8<-- [start:claims] -->", "| λ | claim | holds | difference [95 % CI] | detail |",
              "|---|---|---|---|---|"]
    for c in claims:
        lines.append(f"| {c['lam']:g} | {c['claim']} | {'yes' if c['holds'] else 'no'} | {c['difference']:+.3f} "
                     f"[{c['lo']:+.3f}, {c['hi']:+.3f}] | {c['detail']} |")
    lines.append("<!-- --8<-- [end:claims] -->")
    return "\n".join(lines)


def _plot(rows: list[dict[str, Any]], cfg: StudyConfig, path: Path, agent: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cfg.lams), figsize=(5.5 * len(cfg.lams), 4.2), squeeze=False)
    for ax, lam in zip(axes[0], cfg.lams):
        sub = [r for r in rows if r["lam"] == float(lam)]
        x = np.arange(len(sub))
        means = np.array([r["success_rate"] for r in sub])
        err = np.array([[m - r["success_rate_lo"], r["success_rate_hi"] - m] for r, m in zip(sub, means)]).T
        colours = ["tab:orange" if r["runs"] else "tab:blue" for r in sub]
        ax.bar(x, means, yerr=err, color=colours, capsize=3)
        ax.set_xticks(x, [r["policy"] for r in sub], rotation=40, ha="right", fontsize=8)
        ax.set_ylim(max(0.0, float(means.min()) - 0.1), min(1.0, float(means.max()) + 0.05))
        ax.set_title(f"λ = {lam:g} (orange: {agent} over runs)")
        ax.set_ylabel("success rate")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(cfg: StudyConfig) -> None:
    try:
        study(cfg)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    out = output_folder(cfg)
    print((out / "study.md").read_text(), end="")
    print(out)


if __name__ == "__main__":
    run_cli(main, StudyConfig, __doc__)
