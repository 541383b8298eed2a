"""``python evaluate.py experiment=ladder``: the reference ladder of every env, learners included.

The ladder itself is :mod:`offline.ladder` (it plays every rung through the one evaluation runner); this module
adds what offline may not import: the shipped learners (``pretrained:<name>`` of each env, from
``agents/pretrained/``) and ``agents.loading.resolve_policy`` to load them.

Keys (``edge_sched_gym/conf/experiment/ladder.yaml``): ``ladder_envs`` (``all`` or a list of env ids), ``quick`` (the CI
size), ``publish`` (refresh the checked-in ``results/ladder/``, ``docs/leaderboard.md`` and README's table;
without it nothing checked in changes), ``out`` (default ``outputs/ladder/``) and ``learners`` (your training runs,
placed on their env's ladder beside the shipped agents: ``learners=[runs/oinc-v0__ppo_mask__0__...]``; not with
``publish``, the checked-in ladder lists the shipped agents only). The experiment's runner is
``edge_sched_gym.score:run_ladder``: it scores only your policies when ``policies=[...]`` is given (one-call
scoring, an entry point's job) and otherwise calls :func:`run_from_config`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from agents.loading import PRETRAINED_DIR, pretrained_agents, resolve_policy
from offline import ladder
from offline.provenance import check_output_path, default_output, parse_bool, require_clone

__all__ = ["pretrained_learners", "run_from_config", "run_ladder"]

#: The keys experiment=ladder reads (besides evaluate.py's own, which it ignores).
LADDER_KEYS = ("ladder_envs", "quick", "publish", "out", "learners")


def pretrained_learners(env_id: str) -> dict[str, str]:
    """``pretrained:<name>`` -> run folder of every shipped agent trained on ``env_id``."""
    out = {}
    for name in pretrained_agents():
        folder = PRETRAINED_DIR / name
        config = yaml.safe_load((folder / "config.yaml").read_text()) or {}
        if (config.get("env") or {}).get("id") == env_id:
            out[f"pretrained:{name}"] = str(folder)
    return out


def _env_ids(value: Any) -> list[str]:
    valid = ladder.ladder_env_ids()
    if value in (None, "all"):
        return valid
    ids = [value] if isinstance(value, str) else list(value)
    unknown = [v for v in ids if v not in valid]
    if unknown or not ids:
        raise ValueError(f"ladder_envs={value!r} is invalid: expected 'all' or a list of {valid}")
    return ids


def run_learners(specs: list[str], env_ids: list[str]) -> dict[str, dict[str, str]]:
    """env id -> {name: run folder} of the training runs ``specs`` (each must be a run of one of ``env_ids``)."""
    from agents.loading import load_run_config

    found: dict[str, dict[str, str]] = {env_id: {} for env_id in env_ids}
    for spec in specs:
        folder = Path(spec)
        try:
            env_id = str(load_run_config(folder).env.id)
        except (OSError, ValueError, AttributeError) as err:
            raise ValueError(f"learners entry {spec!r} is invalid: expected a training run folder ({err})") from None
        if env_id not in found:
            raise ValueError(f"learners entry {spec!r} was trained on {env_id}, which is not in ladder_envs={env_ids}")
        found[env_id][spec] = str(folder)
    return found


def run_ladder(env_ids: list[str], *, quick: bool, out: Path, publish: bool, command: str,
               learners: dict[str, dict[str, str]] | None = None) -> Path:
    """Run the ladder of ``env_ids`` into ``out`` (with the shipped agents and ``learners``: env id -> {name: run
    folder}); with ``publish`` refresh the checked-in files."""
    start = time.perf_counter()
    for env_id in env_ids:
        ladder.run_env(env_id, out, quick=quick, learners={**pretrained_learners(env_id), **(learners or {}).get(env_id, {})},
                       resolve=resolve_policy)
    ladder.write_command(out, command, quick, time.perf_counter() - start, env_ids)
    print(f"[ladder] wrote {out}", flush=True)
    if publish:
        ladder.publish(out, env_ids)
    return out


def run_from_config(cfg: DictConfig) -> Path:
    """evaluate.py's runner for ``experiment=ladder``."""
    value = cfg.get("ladder_envs", "all")
    env_ids = _env_ids(OmegaConf.to_container(value) if OmegaConf.is_config(value) else value)
    quick = parse_bool("quick", cfg.get("quick", False))
    publish = parse_bool("publish", cfg.get("publish", False))
    if publish:
        require_clone()
    if publish and quick:
        raise ValueError("publish=true with quick=true is refused: the checked-in ladder comes from a full run")
    specs = cfg.get("learners") or []
    specs = [str(s) for s in (OmegaConf.to_container(specs) if OmegaConf.is_config(specs) else specs)]
    if specs and publish:
        raise ValueError("learners=... with publish=true is refused: the checked-in ladder lists the shipped agents only")
    learners = run_learners(specs, env_ids)
    out = Path(cfg.out) if cfg.get("out") else default_output("ladder")
    from agents.registry import check_writable_folder

    check_writable_folder("out", out)  # before any rung runs (minutes), not at the first write
    check_output_path(out, publish=publish)  # publish=true copies to results/ itself; out= is a scratch folder
    parts = ["python evaluate.py experiment=ladder"]
    if quick:
        parts.append("quick=true")
    if value != "all":
        parts.append(f"ladder_envs=[{','.join(env_ids)}]")
    if specs:
        parts.append(f"learners=[{','.join(specs)}]")
    if cfg.get("out"):
        parts.append(f"out={cfg.out}")
    return run_ladder(env_ids, quick=quick, out=out, publish=publish, command=" ".join(parts), learners=learners)
