"""Pretrained agents shipped with the suite, loadable by name.

Each sub-folder of ``agents/pretrained/`` is a slim training run: the run's ``config.yaml``, a
``model.zip`` and ``provenance.yaml`` (the command that trained it, commit, machine, date, steps, wall time
and its last in-training evaluation). The model file keeps what acting needs (the SAC actor, the DQN
online Q-network); the critics, target networks and optimiser states are zeroed and the archive deflated
so that it fits in git. The archive holds no pickles (the safe format: its ``data`` keeps only JSON, and
:func:`agents.loading.load_sb3_model` rebuilds spaces, schedules and classes itself); it acts exactly as the
trained run; fine-tuning it would restart the critics from zero.

    python evaluate.py env=uec-v0 "policies=[pretrained:uec-v0-sac,rescue,pickconfigs]"
    python evaluate.py env=oinc-v0 "policies=['oinc=pretrained:oinc-v0-sacd',liu_aret]" env.kwargs.observation=extended

    from agents import pretrained
    policy = pretrained.load("uec-v0-sac", env)      # a Policy (reset(env), act(obs, info))
    pretrained.available()                            # name -> provenance

Ship a new one from a finished run: ``python -m agents.pretrained name=<name> run=<run_dir>``.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml

from agents import loading

PREFIX = "pretrained:"
#: the parameters acting needs, per algorithm (SB3 state-dict key prefixes); the rest are zeroed. MaskablePPO keeps
#: every features extractor (shared between actor and critic by default: zeroing the critic's alias would zero both)
ACTING_PARAMETERS = {"sac": ("actor.",), "dqn": ("q_net.",),
                     "ppo_mask": ("features_extractor.", "pi_features_extractor.", "vf_features_extractor.",
                                  "mlp_extractor.policy_net.", "action_net.")}


def available() -> dict[str, dict[str, Any]]:
    """Name -> provenance of every shipped agent (sorted by name)."""
    return loading.pretrained_agents()


def path(name: str) -> Path:
    """The run folder of the shipped agent ``name``; raises ValueError listing the valid names."""
    return loading.pretrained_path(name)


def expand(spec: str) -> str:
    """``spec`` with every ``pretrained:<name>`` replaced by that agent's folder (names are checked), so a
    pretrained agent goes wherever a run folder does: ``pretrained:x``, ``oinc=pretrained:x``,
    ``pretrained:x+dedas``."""
    return loading.expand_pretrained(spec)


def label(spec: str) -> str:
    """The inverse of :func:`expand`: every shipped agent's folder in ``spec`` as ``pretrained:<name>``, the name
    evaluation tables show wherever the package is installed."""
    return loading.policy_label(spec)


def load(name: str, env: gym.Env, **kwargs: Any) -> Any:
    """The shipped agent ``name`` as a Policy for ``env`` (greedy actions; see agents.loading.load_run_policy)."""
    folder = path(name)
    loading.check_run_env(folder, env.spec.id if env.spec is not None else str(available()[name]["env_id"]))
    return loading.load_run_policy(folder, env, **kwargs)


def _rewrite_torch(payload: bytes, change: Any) -> bytes:
    """A ``torch.save`` payload with ``change(loaded object)`` saved in its place."""
    import torch as th

    buffer = io.BytesIO()
    th.save(change(th.load(io.BytesIO(payload), map_location="cpu", weights_only=True)), buffer)
    return buffer.getvalue()


def slim_model(source: Path, target: Path, algo: str) -> None:
    """Copy an SB3 ``model.zip`` keeping the acting parameters, zeroing the rest and dropping optimiser
    moments; the archive is deflated (zeroed tensors compress to almost nothing)."""
    import torch as th

    if algo not in ACTING_PARAMETERS:
        raise ValueError(f"algo={algo!r} cannot be shipped: expected one of {sorted(ACTING_PARAMETERS)}")
    keep = ACTING_PARAMETERS[algo]
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED,
                                                                compresslevel=9) as out:
        for item in archive.infolist():
            payload = archive.read(item.filename)
            if item.filename == "policy.pth":
                payload = _rewrite_torch(payload, lambda state: {
                    k: (v if k.startswith(keep) or not th.is_floating_point(v) else th.zeros_like(v))
                    for k, v in state.items()})
            elif item.filename == "data":  # runs saved before agents/sac.py excluded its parameter lists
                data = json.loads(payload)
                for key in ("critic_parameters", "critic_target_parameters", "batch_norm_stats",
                            "batch_norm_stats_target"):
                    data.pop(key, None)
                for value in data.values():  # the safe format: no pickles (agents.loading.load_sb3_model)
                    if isinstance(value, dict):
                        value.pop(":serialized:", None)
                payload = json.dumps(data, indent=4).encode()
            elif item.filename.endswith("optimizer.pth"):  # no Adam moments: a valid state for load_state_dict
                payload = _rewrite_torch(payload, lambda state: {**state, "state": {}})
            out.writestr(item.filename, payload)


#: a shipped agent's name: a plain identifier (lower case, digits, '_', '.', '-'; no '..')
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def shipped_folder(name: str) -> Path:
    """``agents/pretrained/<name>``, for a plain identifier ``name`` (:data:`NAME`) whose resolved path lies strictly
    inside agents/pretrained/ (``.``, ``..``, ``a/b`` and links out are refused: ship deletes that folder)."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"name={name!r} is invalid: expected a plain identifier (lower-case letters, digits, '_', '.' "
                         "and '-', starting with a letter or digit, no '..'), e.g. uec-v0-sac")
    root = loading.PRETRAINED_DIR.resolve()
    target = loading.PRETRAINED_DIR / name
    if target.resolve().parent != root or target.is_symlink():
        raise ValueError(f"name={name!r} is invalid: {target} does not resolve to a folder directly inside {root}")
    return target


@dataclass
class ShipConfig:
    name: str = ""  # folder name under agents/pretrained/, e.g. uec-v0-sac
    run: str = ""  # a finished training run folder (config.yaml + model.zip)
    model: str = "model.zip"  # the model file inside the run, e.g. checkpoints/model_200000_steps.zip (custom: model.pt)
    command: str = ""  # the command that trained it (default: from the run's config)
    note: str = ""


def ship(cfg: ShipConfig) -> Path:
    """Copy run ``cfg.run`` as pretrained agent ``cfg.name`` (config, slim model, provenance)."""
    import csv
    import platform
    import subprocess
    from datetime import datetime, timezone

    target = shipped_folder(cfg.name)
    run = Path(cfg.run)
    if not (run / "config.yaml").is_file():
        raise ValueError(f"run={cfg.run!r} is not a finished training run (needs config.yaml and {cfg.model})")
    config = loading.load_run_config(run)  # env id of the problem registry, allow-listed classes only
    algo = str(config.algo.name)
    custom = loading.get_spec(config.algo).kind == "custom"  # a custom trainer's model.pt: tensors only, copied
    if custom and not cfg.model.endswith(".pt"):
        raise ValueError(f"model={cfg.model!r} is invalid for algo {algo}: its runs save a .pt file (e.g. model.pt)")
    if not (run / cfg.model).is_file():
        raise ValueError(f"run={cfg.run!r} is not a finished training run (needs config.yaml and {cfg.model})")
    if target.exists():  # replaced: a folder strictly inside agents/pretrained/ (shipped_folder), never a link
        if not target.is_dir():
            raise ValueError(f"name={cfg.name!r}: {target} is not a shipped agent's folder; remove it by hand")
        shutil.rmtree(target)
    target.mkdir(parents=True)
    try:
        shutil.copy(run / "config.yaml", target / "config.yaml")
        if custom:
            shutil.copy(run / cfg.model, target / "model.pt")
        else:
            slim_model(run / cfg.model, target / "model.zip", algo)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    last_eval: dict[str, Any] = {}
    if (run / "eval.csv").is_file():
        with (run / "eval.csv").open() as handle:
            rows = list(csv.DictReader(handle))
        if rows:
            last_eval = {k: float(v) for k, v in rows[-1].items() if v not in ("", None)}
    wall_s = None
    stamps = [line[:23] for line in (run / "train.log").read_text().splitlines() if line[:4].isdigit()] \
        if (run / "train.log").is_file() else []
    if len(stamps) >= 2:
        first, last = (datetime.strptime(x, "%Y-%m-%d %H:%M:%S,%f") for x in (stamps[0], stamps[-1]))
        wall_s = round((last - first).total_seconds(), 1)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=loading.PRETRAINED_DIR).stdout.strip()
    provenance = {
        "name": cfg.name, "env_id": str(config.env.id), "algo": algo, "seed": int(config.seed),
        "steps": loading.checkpoint_steps(cfg.model, int(config.steps)), "trained_in": run.name, "model": cfg.model, "wall_s_from_train_log": wall_s,
        "command": cfg.command or f"python train.py env={config.env.name} algo={algo} seed={int(config.seed)}",
        "last_eval": last_eval, "shipped_at_commit": commit,
        "machine": f"{platform.machine()}, python {platform.python_version()}",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "note": cfg.note,
    }
    provenance["check_eval"] = check_evaluation(target, config)
    (target / "provenance.yaml").write_text(yaml.safe_dump(provenance, sort_keys=False))
    return target


def check_evaluation(folder: Path, config: Any) -> dict[str, Any]:
    """Mean greedy reward of the shipped model on a fresh env (the run's env kwargs) reset with the run's
    eval seeds, one episode each: what tests/agents/test_pretrained.py reproduces."""
    import numpy as np
    from omegaconf import OmegaConf

    from offline.protocol import run_episode

    env = gym.make(str(config.env.id), **OmegaConf.to_container(config.env.kwargs, resolve=True))
    policy = loading.load_run_policy(folder, env)
    first, count = int(config.eval.seed), int(config.eval.episodes)
    rewards = [run_episode(env, policy, seed=s).total_reward for s in range(first, first + count)]
    return {"first_seed": first, "episodes": count, "mean_reward": float(np.mean(rewards))}
