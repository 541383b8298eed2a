"""Tune our heuristics' parameters with Optuna on the tuning seeds and instances only (offline.partition).

    python -m offline.tuning env=UEC-v0                      # every TuningSpec of the env's ladder
    python -m offline.tuning env=UEC-v0 policy=<name> trials=60 seed=0
    python -m offline.tuning env=UEC-v0 quick=true           # a few trials (the tests' determinism check)
    python -m offline.tuning env=UEC-v0 publish=true         # also write offline/<p>/tuned.yaml

Each trial plays ``TuningSpec.policy`` with ``policy_kwargs = TuningSpec.space(trial)`` through
:func:`offline.runner.evaluate` on :func:`offline.partition.tuning_set` (instances 900.., episode seed 77),
which no reported evaluation uses, and scores it by ``TuningSpec.objective`` (default: the mean of the ladder
metric). The sampler is Optuna's TPE seeded with ``seed``, trials run one after another, and the policies are
seeded by the runner, so the same command gives the same trials and the same best values. Results go to
``out`` (default ``outputs/tuning/<env>/``: git-ignored): ``trials.csv`` and ``tuned.yaml``. Only
``publish=true`` writes the problem's checked-in ``offline/<p>/tuned.yaml`` (the values the policy reads by
default), with the command, commit, machine and date beside each policy's values.
"""

from __future__ import annotations

import importlib
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from envs.problems import PROBLEMS, get_problem
from offline import partition
from offline.ladder_spec import LadderSpec, TuningSpec, tuned_path
from offline.provenance import (
    ROOT,
    check_output_path,
    check_writable_folder,
    command_line,
    default_output,
    git_commit,
    machine,
    parse_bool,
    parse_count,
    parse_key_values,
    require_clone,
    utc_now,
)
from offline.runner import evaluate, get_hook, read_csv, write_csv

__all__ = ["get_spec", "ladder_env_ids", "main", "package_dir", "play_rows", "tune"]

KEYS = {
    "env": "env id with a ladder (required)",
    "policy": "one tuned policy of the env (default: all)",
    "trials": "Optuna trials per policy (default: the TuningSpec's)",
    "seed": "seed of the TPE sampler (default 0)",
    "quick": "true: the TuningSpec's quick_trials",
    "publish": "true: write the checked-in offline/<p>/tuned.yaml",
    "out": "output folder (default outputs/tuning/<env>)",
}


def ladder_env_ids() -> list[str]:
    """Env ids with a ladder (``Problem.ladder``), in registry order."""
    return [env_id for env_id, problem in PROBLEMS.items() if problem.ladder]


def get_spec(env_id: str) -> LadderSpec:
    """The LadderSpec of ``env_id``; raises ValueError listing the env ids that have one."""
    problem = get_problem(env_id)
    if not problem.ladder:
        raise ValueError(f"env={env_id!r} has no ladder; valid env ids: {ladder_env_ids()}")
    module, _, attr = problem.ladder.partition(":")
    spec = getattr(importlib.import_module(module), attr)
    if not isinstance(spec, LadderSpec):
        raise ValueError(f"{problem.ladder} is not an offline.ladder_spec.LadderSpec")
    return spec


def package_dir(env_id: str) -> Path:
    """``offline/<p>/`` of ``env_id`` (where its tuned.yaml lives)."""
    module = importlib.import_module(get_problem(env_id).policies)
    return Path(module.__file__).resolve().parent


def play_rows(
    spec: LadderSpec,
    policies: list[str],
    eval_set: partition.EvaluationSet,
    out_dir: Path,
    *,
    env_kwargs: dict[str, Any] | None = None,
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
    resolve: Any = None,
    decision_seconds: dict[str, list[float]] | None = None,
) -> list[dict[str, Any]]:
    """Every policy on ``eval_set`` through :func:`offline.runner.evaluate`; the hook's per-episode rows
    (``decision_seconds``: see :func:`offline.runner.evaluate`)."""
    hook = get_hook(spec.env_id)
    kwargs = {**spec.policy_kwargs, **(policy_kwargs or {})}
    evaluate(
        spec.env_id,
        dict(spec.env_kwargs if env_kwargs is None else env_kwargs),
        policies,
        out_dir=out_dir,
        progress=False,
        resolve=resolve,
        decision_seconds=decision_seconds,
        policy_kwargs={k: dict(v) for k, v in kwargs.items()},
        **eval_set.evaluate_kwargs(),
        **dict(spec.evaluation_kwargs),
    )
    if not hook.episodes_csv:
        raise ValueError(f"{spec.env_id}'s evaluation hook writes no per-episode CSV; the ladder needs one")
    return read_csv(out_dir / hook.episodes_csv)


def _score(spec: LadderSpec, tuning: TuningSpec, rows: list[dict[str, Any]]) -> float:
    if tuning.objective is not None:
        return float(tuning.objective(rows))
    values = [float(r[spec.metric]) for r in rows if r.get("policy") == tuning.policy]
    if not values:
        raise ValueError(f"no {spec.metric!r} rows for {tuning.policy} in the tuning run")
    return float(np.mean(values))


def tune(env_id: str, tuning: TuningSpec, *, trials: int, seed: int = 0) -> tuple[dict[str, Any], float, list[dict]]:
    """(best parameters, best objective, one row per trial) of ``tuning`` on the tuning set."""
    import optuna

    spec = get_spec(env_id)
    eval_set = partition.tuning_set(tuning.instances, tuning.episodes)
    env_kwargs = dict(spec.env_kwargs if tuning.env_kwargs is None else tuning.env_kwargs)
    direction = "maximize" if spec.higher_is_better else "minimize"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction=direction, sampler=optuna.samplers.TPESampler(seed=seed))
    log_rows: list[dict[str, Any]] = []

    settings = [dict(s) for s in tuning.settings] or [{}]

    def objective(trial: Any) -> float:
        params = tuning.space(trial)
        rows: list[dict[str, Any]] = []
        for index, setting in enumerate(settings):
            with tempfile.TemporaryDirectory() as tmp:
                played = play_rows(spec, [tuning.policy], eval_set, Path(tmp), env_kwargs={**env_kwargs, **setting},
                                   policy_kwargs={tuning.policy: params})
            rows += [{**row, "setting": index} for row in played]
        value = _score(spec, tuning, rows)
        log_rows.append({"trial": trial.number, **params, "objective": value})
        return value

    study.optimize(objective, n_trials=trials)
    return dict(study.best_params), float(study.best_value), log_rows


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring); returns the exit status."""
    try:
        args = parse_key_values(list(sys.argv[1:] if argv is None else argv), KEYS)
        if "env" not in args:
            raise ValueError(f"env is required; valid env ids: {ladder_env_ids()}")
        env_id = args["env"]
        spec = get_spec(env_id)
        if not spec.tuning:
            raise ValueError(f"env={env_id!r} has no tuned policy")
        names = [t.policy for t in spec.tuning]
        if "policy" in args and args["policy"] not in names:
            raise ValueError(f"policy={args['policy']!r} is not tuned for {env_id}; valid policies: {names}")
        quick = parse_bool("quick", args.get("quick", "false"))
        publish = parse_bool("publish", args.get("publish", "false"))
        seed = parse_count("seed", args.get("seed", "0"), minimum=0)
        trials = parse_count("trials", args["trials"]) if "trials" in args else None
        out = Path(args.get("out") or default_output("tuning", env_id))
        if not str(args.get("out", "x")).strip():
            raise ValueError("out='' is invalid: expected a folder")
        check_output_path(out, publish=publish)
        check_writable_folder("out", out)
        if publish and quick:
            raise ValueError("publish=true with quick=true is refused: the checked-in values come from a full run")
        if publish:
            require_clone()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    selected = [t for t in spec.tuning if args.get("policy") in (None, t.policy)]
    results: dict[str, Any] = {}
    for tuning in selected:
        n = trials or (tuning.quick_trials if quick else tuning.trials)
        print(f"tuning {tuning.policy} on {env_id}: {n} trials, tuning set {partition.tuning_set(tuning.instances, tuning.episodes)}",
              flush=True)
        best, value, log_rows = tune(env_id, tuning, trials=n, seed=seed)
        write_csv(out / f"trials_{tuning.policy}.csv", log_rows)
        results[tuning.policy] = {
            "params": best,
            "value": value,
            "trials": n,
            "sampler_seed": seed,
            "tuning_set": {"instance_base": partition.TUNING_INSTANCE_BASE, "instances": tuning.instances,
                           "episodes": tuning.episodes, "seed": partition.TUNING_SEED,
                           "settings": [dict(setting) for setting in tuning.settings]},
            "command": command_line("offline.tuning"),
            "commit": git_commit(),
            "machine": machine(),
            "date": utc_now(),
        }
        print(f"  best {best}  objective {value:.6g}", flush=True)
    (out / "tuned.yaml").write_text(yaml.safe_dump(results, sort_keys=False))
    print(f"wrote {out / 'tuned.yaml'}", flush=True)
    if publish:
        target = tuned_path(package_dir(env_id))
        current = yaml.safe_load(target.read_text()) if target.is_file() else {}
        current = {**(current or {}), **results}
        header = ("# Tuned parameters of our heuristics, read by the policies by default (offline.ladder_spec."
                  "tuned_params).\n# Generated by python -m offline.tuning env=" + env_id + " publish=true; do not edit.\n")
        target.write_text(header + yaml.safe_dump(current, sort_keys=False))
        print(f"published: changed {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}", flush=True)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    sys.exit(main())
