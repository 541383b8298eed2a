"""Trained runs and shipped models as :class:`offline.protocol.Policy` objects (contract 2), so
evaluate.py can compare ``policies=[rescue, corais_greedy, runs/uec-v0__sac__0__…]`` on identical seeds.

:func:`resolve_policy` is the one place where a policy name is turned into a Policy: a training run
folder (its ``config.yaml`` names the algo, ``model.zip`` holds the final model), a learned policy
registered by an ``agents.<problem>`` package (:func:`register_learned_policy`, e.g. the shipped CoRaiS
dispatcher), or a non-learning policy of ``offline.registry``.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from omegaconf import OmegaConf

from agents.registry import get_spec, import_path
from envs.problems import get_problem
from offline import registry as offline_registry

MODEL_FILE = "model.zip"

_LEARNED: dict[str, dict[str, Callable[..., Any]]] = {}


def register_learned_policy(env_id: str, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``factory(env, **kwargs) -> Policy`` (a shipped model) under ``name``."""

    def decorator(factory: Callable[..., Any]) -> Callable[..., Any]:
        table = _LEARNED.setdefault(env_id, {})
        if name in table and table[name] is not factory:
            raise ValueError(f"learned policy {name!r} is already registered for {env_id}")
        table[name] = factory
        return factory

    return decorator


def _learned(env_id: str) -> dict[str, Callable[..., Any]]:
    """Learned policies of ``env_id``: those its ``agents.<package>`` registers when imported."""
    package = f"agents.{get_problem(env_id).package}"
    if importlib.util.find_spec(package) is not None:
        importlib.import_module(package)
    return _LEARNED.get(env_id, {})


def available_policies(env_id: str) -> list[str]:
    """Every policy name ``env_id`` accepts: non-learning ones (offline) and shipped learned ones."""
    return sorted({*offline_registry.available_policies(env_id), *_learned(env_id)})


def resolve_policy(env_id: str, name_or_run: str | Path, env: gym.Env, **kwargs: Any) -> Any:
    """A Policy from a training run folder (or a checkpoint file in one), a shipped agent
    (``pretrained:<name>``, :mod:`agents.pretrained`), a learned or a non-learning policy name, or any of
    these under an observation ablation (``zeroed-obs:<run>``, ``shuffled-obs:<run>``; :class:`AblatedObservation`)."""
    mode, inner = split_ablation(name_or_run)
    if mode is not None:
        return AblatedObservation(resolve_policy(env_id, inner, env, **kwargs), mode, str(name_or_run))
    if str(name_or_run).startswith("pretrained:"):
        name_or_run = expand_pretrained(str(name_or_run))
    path = Path(name_or_run)
    if is_run_path(path):
        run_dir, checkpoint = check_run_env(path, env_id)
        if checkpoint is not None:
            kwargs = {**kwargs, "checkpoint": checkpoint}
        return load_run_policy(run_dir, env, **kwargs)
    learned = _learned(env_id)
    if str(name_or_run) in learned:
        return learned[str(name_or_run)](env, **kwargs)
    if str(name_or_run) not in offline_registry.available_policies(env_id):
        raise ValueError(
            f"policy={str(name_or_run)!r} is not known for {env_id} and is not a run folder; "
            f"valid policies: {available_policies(env_id)}"
        )
    return offline_registry.make_policy(env_id, str(name_or_run), env, **kwargs)


#: Observation ablations (``<mode>:<policy>``): does a trained policy read its state? ``zeroed-obs`` acts on an
#: all-zero observation; ``shuffled-obs`` on a uniformly random observation among those of the episode so far
#: (a real state, its link to the present cut). For envs whose observation carries no action mask (ASET).
OBS_ABLATIONS: tuple[str, ...] = ("zeroed-obs", "shuffled-obs")


def split_ablation(name: str | Path) -> tuple[str | None, str]:
    """(ablation mode or None, the policy it wraps) of a policy name such as ``zeroed-obs:runs/x``."""
    mode, sep, inner = str(name).partition(":")
    return (mode, inner) if sep and mode in OBS_ABLATIONS else (None, str(name))


class AblatedObservation:
    """A policy that acts on an ablated observation (:data:`OBS_ABLATIONS`); the env itself is unchanged."""

    def __init__(self, policy: Any, mode: str, name: str) -> None:
        if mode not in OBS_ABLATIONS:
            raise ValueError(f"mode={mode!r} is invalid: expected one of {list(OBS_ABLATIONS)}")
        self.policy, self.mode, self.name = policy, mode, name
        self._rng = np.random.default_rng()
        self._seen: list[np.ndarray] = []

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.policy.reset(env, seed)
        self._rng = np.random.default_rng(seed)
        self._seen = []

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self.mode == "zeroed-obs":
            return self.policy.act(np.zeros_like(obs), info)
        self._seen.append(np.array(obs, copy=True))
        return self.policy.act(self._seen[int(self._rng.integers(len(self._seen)))], info)


#: shipped agents (agents.pretrained): one slim run folder per name, with provenance.yaml
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"
_PRETRAINED_TOKEN = re.compile(r"pretrained:([A-Za-z0-9_.-]+)")


def pretrained_agents() -> dict[str, dict[str, Any]]:
    """Name -> provenance of every shipped agent under :data:`PRETRAINED_DIR` (sorted by name)."""
    import yaml

    return {folder.name: yaml.safe_load((folder / "provenance.yaml").read_text())
            for folder in sorted(PRETRAINED_DIR.iterdir()) if (folder / "provenance.yaml").is_file()}


def pretrained_path(name: str) -> Path:
    """The run folder of the shipped agent ``name``; raises ValueError listing the valid names."""
    names = pretrained_agents()
    if name not in names:
        raise ValueError(f"pretrained agent {name!r} is unknown: valid names are {sorted(names)}")
    return PRETRAINED_DIR / name


def expand_pretrained(spec: str) -> str:
    """``spec`` with every ``pretrained:<name>`` replaced by that agent's folder (relative to the working
    directory when inside it, so tables show ``agents/pretrained/<name>``)."""

    def folder(match: re.Match) -> str:
        path = pretrained_path(match.group(1))
        return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)

    return _PRETRAINED_TOKEN.sub(folder, str(spec))


class SB3ModelPolicy:
    """Wraps an SB3 model; deterministic (greedy) actions by default.

    Masks: the learners read them from the observation; for sb3-contrib's MaskablePPO the mask is
    taken from ``info["action_mask"]`` when present.
    """

    def __init__(self, model: Any, name: str, deterministic: bool = True) -> None:
        self.model = model
        self.name = name
        self.deterministic = deterministic
        self._uses_action_masks = type(model).__name__ == "MaskablePPO"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Learned policies keep no per-episode state; the seed only drives stochastic SAC/DQN sampling."""
        if seed is not None and not self.deterministic:
            import torch

            torch.manual_seed(seed)
            np.random.seed(seed)  # noqa: NPY002 (SB3 DQN explores with the global generator)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        kwargs: dict[str, Any] = {}
        if self._uses_action_masks and "action_mask" in info:
            kwargs["action_masks"] = np.asarray(info["action_mask"], dtype=bool)
        action, _ = self.model.predict(obs, deterministic=self.deterministic, **kwargs)
        if isinstance(self.model.action_space, spaces.Discrete):
            return int(np.asarray(action).reshape(-1)[0])
        return np.asarray(action).reshape(self.model.action_space.shape)


#: model files that can stand for their run (``runs/<run>/checkpoints/model_2000_steps.zip``, ``…/model_best.pt``).
MODEL_SUFFIXES = (".zip", ".pt")
_CHECKPOINT = re.compile(r"^model_(interrupted_)?(\d+)_steps\.zip$")


def is_run_path(path: Path | str) -> bool:
    """True for a folder or a model file (``.zip``/``.pt``) on disk: evaluate.py treats it as a trained run."""
    path = Path(path)
    return path.is_dir() or (path.is_file() and path.suffix in MODEL_SUFFIXES)


def split_run_path(path: Path | str) -> tuple[Path, str | None]:
    """(run folder, model file relative to it or None) of a run folder or of a model file inside one.

    The run folder of a model file is the nearest parent with a config.yaml (``checkpoints/x.zip`` is two
    levels below it).
    """
    path = Path(path)
    if path.is_dir():
        return path, None
    for parent in path.parents:
        if (parent / "config.yaml").is_file():
            return parent, path.relative_to(parent).as_posix()
    raise ValueError(f"{path} is not inside a training run folder: no config.yaml above it")


def check_run_env(path: Path | str, env_id: str) -> tuple[Path, str | None]:
    """:func:`split_run_path`, refusing a run trained on another env than ``env_id`` (from its config.yaml)."""
    run_dir, checkpoint = split_run_path(path)
    trained_on = load_run_config(run_dir).get("env", {}).get("id")
    if trained_on is not None and str(trained_on) != env_id:
        raise ValueError(f"{path} was trained on {trained_on}, not on {env_id}")
    return run_dir, checkpoint


def checkpoint_steps(model: Path | str, default: int) -> int:
    """Env steps behind a model file: from a checkpoint's name (``model[_interrupted]_<n>_steps.zip``),
    else ``default`` (a run's final ``model.zip``: its configured steps)."""
    match = _CHECKPOINT.match(Path(model).name)
    return int(match.group(2)) if match else int(default)


def latest_checkpoint(run_dir: Path | str) -> tuple[Path, int] | None:
    """The newest SB3 checkpoint of a run (``checkpoints/model[_interrupted]_<n>_steps.zip``, largest n;
    the interrupt checkpoint wins a tie) and its step count; None when the run has none."""
    found = []
    for path in (Path(run_dir) / "checkpoints").glob("model_*_steps.zip"):
        match = _CHECKPOINT.match(path.name)
        if match:
            found.append((int(match.group(2)), bool(match.group(1)), path))
    if not found:
        return None
    steps, _, path = max(found)
    return path, steps


def replay_buffer_file(checkpoint: Path) -> Path:
    """The replay buffer saved next to an SB3 checkpoint (SB3's CheckpointCallback naming)."""
    match = _CHECKPOINT.match(checkpoint.name)
    if not match:
        raise ValueError(f"{checkpoint.name} is not named like a checkpoint (model[_interrupted]_<n>_steps.zip)")
    prefix = "model_interrupted" if match.group(1) else "model"
    return checkpoint.with_name(f"{prefix}_replay_buffer_{match.group(2)}_steps.pkl")


def load_run_config(run_dir: Path) -> Any:
    """The resolved configuration a run saved (raises a clear error for a folder that is not a run)."""
    config_file = Path(run_dir) / "config.yaml"
    if not config_file.is_file():
        raise ValueError(f"{run_dir} is not a training run folder: it has no config.yaml")
    return OmegaConf.load(config_file)


def load_run_policy(
    run_dir: Path | str,
    env: gym.Env,
    *,
    deterministic: bool = True,
    checkpoint: str | None = None,
    device: str = "cpu",
    **kwargs: Any,
) -> Any:
    """Load the final model (or ``checkpoint``, a file inside the run) of a training run as a Policy.

    Works for SB3 algos (sac, dqn, ppo_mask), custom trainers (their ``load_policy``) and reference
    runs (the non-learning policy they ran).
    """
    run_dir = Path(run_dir)
    cfg = load_run_config(run_dir)
    spec = get_spec(cfg.algo)
    if spec.kind == "reference":
        return offline_registry.make_policy(str(cfg.env.id), str(cfg.algo.policy), env, **kwargs)
    if spec.kind == "custom":
        return import_path(str(spec.loader))(run_dir, env, **kwargs)
    model_file = run_dir / (checkpoint or MODEL_FILE)
    if not model_file.is_file():
        raise ValueError(f"{run_dir} has no {checkpoint or MODEL_FILE} (training interrupted before the first save?)")
    model = spec.load_target().load(model_file, device=device)
    if model.observation_space.shape != env.observation_space.shape:
        raise ValueError(
            f"run {run_dir.name} was trained on observations of shape {model.observation_space.shape}, "
            f"the env gives {env.observation_space.shape} (different env kwargs, e.g. UEC's lp_features or OINC's observation=extended?)"
        )
    return SB3ModelPolicy(model, name=f"{spec.name}:{run_dir.name}", deterministic=deterministic)
