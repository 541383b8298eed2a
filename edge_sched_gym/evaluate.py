"""Evaluate policies on identical instances and episode seeds; tables, CSV and plots (contracts 3 and 4).

    python evaluate.py env=uec-v0                                   # the env's default policies and sizes
    python evaluate.py env=uec-v0 policies=[rescue,pickconfigs,runs/uec-v0__sac__0__...] instances=3 \\
        episodes=20 seed=0 out=outputs/mine
    python evaluate.py experiment=rescue_fig7                       # a paper sweep (edge_sched_gym/conf/experiment/)

The env group (``edge_sched_gym/conf/env/<name>.yaml``, shared with train.py) gives the registered id, the env kwargs
and the env's ``wrappers``; evaluate.py runs :func:`offline.runner.evaluate` on that id (contract 3) with
the problem's hook (``Problem.evaluation`` of :mod:`envs.problems`, ``offline.<problem>.evaluation:HOOK``),
prints the summary as a markdown table, writes ``<out>/summary.csv`` (plus the problem's per-episode CSV
and plots) and prints the output folder on its last line. Without ``out=`` the folder is
``outputs/<env>__<time>/`` (git-ignored): nothing checked in changes. Unknown keys (``+quickk=1``), unknown
``env.kwargs`` and keys an experiment runner would ignore are rejected before anything runs. ``policies``,
``instances`` and ``episodes`` default per env to the hook's ``default_evaluation``. A policy is a registered name (non-learning or shipped learned,
``agents.loading.available_policies``), a training run folder or a model file in one
(``runs/<run>/checkpoints/model_2000_steps.zip``); ``agents.loading.resolve_policy`` makes it. A run
trained on another env (its config.yaml's ``env.id``) is refused before anything is written. ``evaluation_kwargs`` are the hook's options (e.g. CoRaiS's ``exact_time_limit``, OINC's ``model``)
and ``policy_kwargs`` (policy name -> factory kwargs, e.g. ``{corais_greedy: {run_dir: runs/x}}``).

Experiments (contract 4) list ``sweeps``: for every value of ``parameter`` (a dotted path into the
composed config) evaluate.py runs one evaluation into ``<out>/<sweep>/<value>/`` and writes
``<out>/<sweep>.csv`` (the swept value first) and ``<out>/<sweep>.png`` (each metric against the value,
one line per policy). A sweep may also carry ``overrides`` (dotted path -> value) applied to all its points.
``+experiment=name`` is accepted as a synonym of ``experiment=name``.

An experiment may instead name a ``runner`` ("module:function" taking the composed config): the papers'
experiments (``experiment=papers``, ``papers_<paper>``, ``quick=true``) run :mod:`evaluate_papers` this way; they
write under ``out=`` (default ``outputs/papers/``) and change the checked-in ``results/``, ``docs/papers/`` and
README's table only with ``publish=true``.
"""

from __future__ import annotations

import csv
import importlib
import math
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from agents.loading import (
    available_policies,
    check_run_env,
    check_run_model,
    expand_pretrained,
    is_run_path,
    resolve_policy,
    split_ablation,
)
from agents.registry import EPISODES, SEED, check_env_kwargs, check_writable_folder
from edge_sched_gym import CONF_DIR, points
from envs.problems import get_problem
from offline.provenance import check_output_path, parse_bool
from offline.runner import EvaluationHook, evaluate, get_hook, label_policies

#: Used where a problem's hook does not say (its ``default_evaluation``).
FALLBACK_EVALUATION: dict[str, Any] = {"instances": 1, "episodes": 5}
SWEEP_KEYS = ("name", "parameter", "values", "metrics", "overrides")
#: evaluate.py's own top-level keys (edge_sched_gym/conf/evaluate.yaml) with their defaults, ``paper`` (an experiment's numbers
#: from its paper, read by evaluate_papers) and ``runner`` (an experiment of experiments).
OWN_KEYS: dict[str, Any] = {"policies": None, "instances": None, "episodes": None, "seed": 0, "out": None,
                            "publish": False, "progress": True, "render": False, "evaluation_kwargs": {},
                            "sweeps": [], "reuse": True}
EXPERIMENT_KEYS = ("env", "paper", "runner")
#: the env group's keys (train.py's EnvConfig)
ENV_KEYS = ("name", "id", "kwargs", "wrappers", "reference_policy", "algo_overrides", "algo_wrappers")
#: the keys each runner reads (besides ``runner`` and ``out``); evaluate.py's own keys are unused there
RUNNER_KEYS: dict[str, tuple[str, ...]] = {
    "edge_sched_gym.evaluate_papers:run_from_config": ("papers", "quick", "publish", "out", "reuse"),
    "edge_sched_gym.score:run_ladder": ("ladder_envs", "quick", "publish", "out", "learners", "policies"),
}
#: where outputs go without out= (git-ignored): outputs/<env>__<time>/
DEFAULT_OUT = Path("outputs")


def check_keys(cfg: DictConfig) -> None:
    """Reject unknown top-level keys (``+quickk=1``), unknown env keys and, for a runner experiment
    (``experiment=papers``/``ladder``), keys it would ignore; raises ValueError listing the valid keys."""
    runner = cfg.get("runner")
    if runner:
        if str(runner) not in RUNNER_KEYS:
            raise ValueError(f"runner={runner!r} is not known; valid runners: {sorted(RUNNER_KEYS)}")
        valid = {*OWN_KEYS, *EXPERIMENT_KEYS, *RUNNER_KEYS[str(runner)]}
    else:
        valid = {*OWN_KEYS, *EXPERIMENT_KEYS}
    unknown = sorted(str(k) for k in cfg if str(k) not in valid and str(k) != "hydra")
    if unknown:
        extra = f" (experiment runner {runner})" if runner else ""
        raise ValueError(f"{unknown[0]} is not a key of evaluate.py{extra}; valid keys: {sorted(valid)}")
    if runner:
        used = set(RUNNER_KEYS[str(runner)])
        ignored = [k for k, default in OWN_KEYS.items() if k not in used and k != "progress" and k in cfg
                   and OmegaConf.to_container(cfg, resolve=False).get(k) != default]
        if ignored:
            raise ValueError(f"{ignored[0]} is not used by the experiment runner {runner}; its keys: "
                             f"{sorted(used)}")
    env = cfg.get("env")
    if isinstance(env, DictConfig):
        bad = sorted(str(k) for k in env if str(k) not in ENV_KEYS)
        if bad:
            raise ValueError(f"env.{bad[0]} is not a key of the env config; valid env keys: {list(ENV_KEYS)} "
                             "(constructor arguments go under env.kwargs)")


def _positive_int(name: str, value: Any) -> int:
    """``instances``/``episodes``: an integer in [1, EPISODES_MAX], checked before anything is built."""
    if not EPISODES[0](value):
        raise ValueError(f"{name}={value!r} is invalid: expected {EPISODES[1]}")
    return int(value)


def check_render(value: Any) -> bool:
    """``render`` is true or false (``render=maybe`` was silently taken as true)."""
    if not isinstance(value, bool):
        raise ValueError(f"render={value!r} is invalid: expected true or false (true saves <out>/pictures/"
                         "<policy>.png, drawn with render_mode='rgb_array')")
    return value


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during an evaluation: says which outputs were written before it."""

    def __init__(self, out_dir: Path, written: list[str]) -> None:
        self.out_dir, self.written = out_dir, written
        done = ", ".join(written) if written else "nothing"
        super().__init__(f"interrupted: outputs written so far in {out_dir}: {done}")


def problem_hook(env_id: str) -> EvaluationHook:
    """The evaluation hook of ``env_id`` (raises listing the valid ids)."""
    get_problem(env_id)
    return get_hook(env_id)


def resolve_settings(cfg: DictConfig) -> dict[str, Any]:
    """Check ``cfg`` and fill the per-env defaults; raise ValueError naming the bad value and the choices."""
    env_id = str(cfg.env.id)
    hook = problem_hook(env_id)
    defaults = dict(FALLBACK_EVALUATION)
    defaults.update(hook.default_evaluation or {})
    policies = cfg.policies if cfg.policies is not None else defaults.get("policies") or available_policies(env_id)
    if isinstance(policies, str):
        policies = [policies]
    policies = [expand_pretrained(str(p)) for p in policies]  # pretrained:<name> -> its run folder
    if not policies:
        raise ValueError(f"policies is empty; valid policies for {env_id}: {available_policies(env_id)}")
    env_kwargs = OmegaConf.to_container(cfg.env.kwargs, resolve=True) if cfg.env.get("kwargs") is not None else {}
    check_env_kwargs(env_id, env_kwargs)
    wrappers = [str(w) for w in (cfg.env.get("wrappers") or [])]
    for policy in policies:  # a run folder or a checkpoint in one (ablated or not): trained on this env, and safe?
        inner = split_ablation(policy)[1]
        if is_run_path(inner):
            check_run_env(inner, env_id)
            check_run_model(inner)
    names = [inner for p in policies if not is_run_path(inner := split_ablation(p)[1])]
    hook.check_policy_names(env_id, names, available_policies(env_id))  # a problem may accept more forms
    check_render(cfg.get("render", False))
    instances = _positive_int("instances", cfg.instances if cfg.instances is not None else defaults["instances"])
    episodes = _positive_int("episodes", cfg.episodes if cfg.episodes is not None else defaults["episodes"])
    seed = cfg.seed
    if not SEED[0](seed):
        raise ValueError(f"seed={seed!r} is invalid: expected {SEED[1]}")
    extra = cfg.get("evaluation_kwargs") or {}
    extra = OmegaConf.to_container(extra, resolve=True) if isinstance(extra, DictConfig) else dict(extra)
    valid_extra = sorted({*hook.options, "policy_kwargs"})  # policy_kwargs: {name: factory kwargs}
    unknown = sorted(set(extra) - set(valid_extra))
    if unknown:
        raise ValueError(f"evaluation_kwargs {unknown} are not known for {env_id}; valid evaluation_kwargs: {valid_extra}")
    hook.check_options(policies, {**hook.options, **{k: v for k, v in extra.items() if k != "policy_kwargs"}})
    return {
        "env_id": env_id,
        "hook": hook,
        "env_kwargs": env_kwargs,
        "wrappers": wrappers,
        "policies": policies,
        "instances": instances,
        "episodes": episodes,
        "seed": int(seed),
        "evaluation_kwargs": extra,
    }


def evaluate_once(cfg: DictConfig, out_dir: Path) -> list[dict]:
    """One contract-3 evaluation of ``cfg`` into ``out_dir``; returns the summary rows."""
    s = resolve_settings(cfg)
    rows = evaluate(
        s["env_id"],
        s["env_kwargs"],
        s["policies"],
        instances=s["instances"],
        episodes=s["episodes"],
        seed=s["seed"],
        out_dir=out_dir,
        progress=bool(cfg.progress),
        resolve=resolve_policy,
        wrappers=s["wrappers"],
        **s["evaluation_kwargs"],
    )
    labelled = label_policies(rows, out_dir, s["hook"])  # pretrained:<name>, run folders relative to the cwd
    write_csv(out_dir / "summary.csv", labelled)
    hook = s["hook"]
    if hook.score_metric is not None:  # trained runs among the policies: rliable's IQM against the best baseline
        from agents.compare import learner_table, write_learner_table

        table = learner_table(rows, s["policies"], hook.score_metric, hook.higher_is_better)
        if table:
            write_learner_table(table, out_dir)
            print(markdown_table([{k: r[k] for k in ("algo", "runs", "iqm", "iqm_lo", "iqm_hi", "p_improvement",
                                                       "best_baseline", "metric")} for r in table]), flush=True)
    if cfg.get("render"):
        save_pictures(s, out_dir)
    return labelled


def save_pictures(settings: dict[str, Any], out_dir: Path) -> None:
    """``render=true``: one episode per policy (reset seed ``seed``) drawn with ``render_mode="rgb_array"``, its
    last frame saved as ``<out>/pictures/<policy>.png``; a policy that cannot be drawn alone (an OINC pair
    label) is skipped with the reason."""
    from offline.render import save_episode_picture

    for policy in settings["policies"]:
        label = str(policy).replace("/", "_").replace(":", "_").replace("=", "_")
        try:
            png = save_episode_picture(settings["env_id"], settings["env_kwargs"], policy, settings["seed"],
                                       out_dir / "pictures" / f"{label}.png", resolve=resolve_policy,
                                       wrappers=settings["wrappers"])
        except ValueError as err:
            print(f"picture: skipped {policy} ({err})", flush=True)
            continue
        print(f"picture: {png}", flush=True)


def format_value(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)


def compact_table(rows: list[dict], hook: EvaluationHook) -> str:
    """The summary as printed: the policy and at most 7 of the hook's ``key_columns``, then a one-line legend;
    every column stays in ``summary.csv``."""
    if not rows:
        return "(no rows)"
    present = [k for k in hook.key_columns if any(k in r for r in rows)]
    keys = (["policy", *present] if present else list(rows[0]))[:8]
    legend = "; ".join(f"{k}: {hook.key_columns[k]}" for k in keys if k in hook.key_columns)
    table = markdown_table([{k: r.get(k, "") for k in keys} for r in rows])
    return f"{table}\n{legend + '. ' if legend else ''}Every column: summary.csv."


def markdown_table(rows: list[dict]) -> str:
    """Rows (dicts with the same keys) as a GitHub markdown table."""
    if not rows:
        return "(no rows)"
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join("---" for _ in keys) + "|"]
    lines += ["| " + " | ".join(format_value(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def value_label(value: Any) -> str:
    """A folder-safe label of a swept value ([10, 5, 50] -> 10-5-50)."""
    if isinstance(value, (list, tuple)):
        return "-".join(value_label(v) for v in value)
    return str(value).replace("/", "_").replace(" ", "")


def plot_sweep(name: str, parameter: str, values: list, rows: list[dict], metrics: list[str], path: Path) -> None:
    """One panel per metric: the metric against the swept value, one line per policy (with 95 % CI if known)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    positions = list(values) if numeric else list(range(len(values)))
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4), squeeze=False)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    for ax, metric in zip(axes[0], metrics):
        for policy in policies:
            ys, errs = [], []
            for v in values:
                match = [r for r in rows if r["policy"] == policy and r["_value"] == value_label(v)]
                ys.append(match[0].get(metric, float("nan")) if match else float("nan"))
                ci = next((c for c in (f"{metric}_ci95", metric.replace("_mean", "_ci95")) if c != metric
                           and match and c in match[0]), None)  # competitive_ratio_ci95 or profit_ci95
                errs.append(match[0][ci] if ci else 0.0)
            ax.errorbar(positions, ys, yerr=errs, marker="o", capsize=3, label=Path(policy).name)
        if not numeric:
            ax.set_xticks(positions, [value_label(v) for v in values], rotation=20)
        ax.set(xlabel=parameter.split(".")[-1], ylabel=metric, title=f"{name}: {metric}")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_sweep(cfg: DictConfig, sweep: DictConfig, out_dir: Path, code: str | None = None) -> list[dict]:
    """Contract 4: one evaluation per value of ``sweep.parameter``; writes <name>.csv and <name>.png.

    A point that finished in an earlier run into the same folder, with the same config and code (``code``, see
    :mod:`edge_sched_gym.points`), is reused unless ``reuse=false``; each point is saved as soon as it finishes."""
    unknown = sorted(set(sweep) - set(SWEEP_KEYS))
    missing = [k for k in ("name", "parameter", "values") if k not in sweep]
    if unknown or missing:
        raise ValueError(f"sweep {dict(sweep)} is invalid: keys must be among {list(SWEEP_KEYS)}; missing {missing}")
    name, parameter = str(sweep.name), str(sweep.parameter)
    values = OmegaConf.to_container(sweep["values"], resolve=True)
    metrics = list(sweep.get("metrics") or ["profit_mean"])
    column = parameter.split(".")[-1]
    reuse = parse_bool("reuse", cfg.get("reuse", True))
    rows: list[dict] = []
    for value in values:
        point = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
        point.sweeps = []
        for key, fixed in (sweep.get("overrides") or {}).items():
            OmegaConf.update(point, str(key), fixed, force_add=True)
        OmegaConf.update(point, parameter, value, force_add=True)
        folder = out_dir / name / value_label(value)
        key = points.fingerprint(point) if code is not None else None
        reused = points.load_point(folder, key) if key is not None and reuse else None
        if reused is not None:
            print(f"[{name}] {parameter} = {value}: finished in an earlier run, reused ({folder / points.POINT_FILE}; "
                  "reuse=false runs it again)", flush=True)
            point_rows = reused
            points.REUSED[0] += 1
        else:
            print(f"[{name}] {parameter} = {value}", flush=True)
            env_id = str(point.env.id)
            before = points.code_state(env_id=env_id) if key is not None else None
            point_rows = evaluate_once(point, folder)
            if key is not None:
                points.save_point(folder, key, point_rows, code, before=before, env_id=env_id)
            print(compact_table(point_rows, problem_hook(str(point.env.id))), flush=True)
        label = value if isinstance(value, (int, float, str)) else value_label(value)
        if any(column in row for row in point_rows):  # the swept parameter is also a result column (e.g.
            column = f"swept_{parameter.split('.')[-1]}"  # OINC's retraining_share): keep both, distinctly named
        rows += [{column: label, **row, "_value": value_label(value)} for row in point_rows]
    clean = [{k: v for k, v in r.items() if k != "_value"} for r in rows]
    write_csv(out_dir / f"{name}.csv", clean)
    plot_sweep(name, parameter, values, rows, metrics, out_dir / f"{name}.png")
    return [{"sweep": name, **r} for r in clean]


def run(cfg: DictConfig) -> Path:
    """Evaluate (or run the experiment's sweeps) as configured; returns the output folder."""
    check_keys(cfg)
    if cfg.get("runner"):  # an experiment of experiments (experiment=papers): its runner does the work
        module, _, function = str(cfg.runner).partition(":")
        return getattr(importlib.import_module(module), function)(cfg)
    resolve_settings(cfg)  # fail at once on bad input, before any work
    publish = parse_bool("publish", cfg.get("publish", False))
    parse_bool("reuse", cfg.get("reuse", True))
    check_writable_folder("out", str(cfg.out or DEFAULT_OUT))
    if cfg.get("out"):
        check_output_path(str(cfg.out), publish=publish, key="out")  # checked-in results change only on purpose
    if cfg.get("out"):
        out_dir = Path(cfg.out)
        fresh = not out_dir.exists()
        out_dir.mkdir(parents=True, exist_ok=True)
    else:  # a fresh folder even when two runs start within the same second (e.g. `-m seed=0,1`, or two shells):
        # created atomically, so two processes never share it
        stem = DEFAULT_OUT / f"{cfg.env.name}__{datetime.now():%Y%m%d-%H%M%S}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        out_dir, copy, fresh = stem, 1, True
        while True:
            try:
                out_dir.mkdir()
                break
            except FileExistsError:
                copy += 1
                out_dir = stem.with_name(f"{stem.name}-{copy}")
    try:
        OmegaConf.save(cfg, out_dir / "config.yaml")
        sweeps = cfg.get("sweeps") or []
        if not sweeps:
            print(compact_table(evaluate_once(cfg, out_dir), problem_hook(str(cfg.env.id))), flush=True)
        else:
            all_rows: list[dict] = []
            code = points.code_version()
            for sweep in sweeps:
                all_rows += run_sweep(cfg, sweep, out_dir, code)
            write_csv(out_dir / "summary.csv", all_rows)
    except ValueError:  # e.g. a model whose tensors are refused at load: leave no half-written folder behind
        if fresh:
            import shutil

            shutil.rmtree(out_dir, ignore_errors=True)
        raise
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: keep what was written and say what it is
        import signal
        import threading

        main = threading.current_thread() is threading.main_thread()
        stops = (signal.SIGINT, signal.SIGTERM)
        before = [signal.signal(s, signal.SIG_IGN) for s in stops] if main else []  # a second Ctrl-C here
        try:  # must not hide the message
            written = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
        finally:
            for sig, handler in zip(stops, before, strict=False):
                signal.signal(sig, handler)
        raise EvaluationInterrupted(out_dir, written) from None
    print(out_dir, flush=True)
    return out_dir


def _stop_on_sigterm() -> None:
    """SIGTERM ends an evaluation like Ctrl-C (a KeyboardInterrupt), so both exit promptly with one message."""
    import signal

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, handler)


@hydra.main(config_path=str(CONF_DIR), config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from edge_sched_gym.train import check_hydra_keys

    _stop_on_sigterm()
    try:
        check_hydra_keys(HydraConfig.get())
        run(cfg)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except EvaluationInterrupted as stop:
        print(str(stop), file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:  # before the output folder existed
        print("interrupted before the output folder was made: no outputs written", file=sys.stderr)
        sys.exit(130)


def cli() -> None:
    """The command line (``python evaluate.py``, ``python -m edge_sched_gym.evaluate``, ``edge-sched-evaluate``)."""
    # the experiment group is in evaluate.yaml's defaults, so `+experiment=x` (train.py's spelling) means `experiment=x`
    sys.argv = [a.replace("+experiment=", "experiment=", 1) if a.startswith("+experiment=") else a for a in sys.argv]
    main()


if __name__ == "__main__":
    cli()
