"""Trained runs and shipped models as :class:`offline.protocol.Policy` objects (contract 2), so
evaluate.py can compare ``policies=[rescue, corais_greedy, runs/uec-v0__sac__0__…]`` on identical seeds.

:func:`resolve_policy` is the one place where a policy name is turned into a Policy: a training run
folder (its ``config.yaml`` names the algo, ``model.zip`` holds the final model), a learned policy
registered by an ``agents.<problem>`` package (:func:`register_learned_policy`, e.g. the shipped CoRaiS
dispatcher), or a non-learning policy of ``offline.registry``.

Loading never executes code from a file. :func:`load_sb3_model` is the project's one SB3 loader: it reads a
``model.zip``'s ``data`` as JSON and rebuilds each pickled (``:serialized:``) entry itself (spaces from the env,
schedules from their plain numbers or the run's config, the policy class from the algorithm's own aliases, classes
in ``policy_kwargs`` from :data:`ALLOWED_CLASSES`, run-time state as None) through SB3's ``custom_objects`` hook;
any other pickled entry is refused with :class:`UnsafeFileError` naming the file and the key, and the parameters
load with ``torch.load(weights_only=True)``. Models are saved without pickles (:func:`save_sb3_model`), replay
buffers as arrays (:func:`save_replay_buffer`, read back with ``np.load(allow_pickle=False)``; an old ``.pkl``
buffer is refused, never unpickled), and the trainers' ``.pt`` files load through :func:`safe_torch_load`.
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

from agents.registry import get_spec
from envs.allowlist import ALLOWED, NotAllowedError, allow, check_allowed, import_allowed
from envs.problems import get_problem, load_attr, wrap

__all__ = ["ALLOWED_CLASSES", "ModelFileError", "UnsafeFileError", "allow", "allowed_class", "load_run_config",
           "load_run_policy", "load_sb3_model", "resolve_policy"]
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


#: The files of one shipped agent's folder (agents/pretrained/<name>/), besides its model.
PRETRAINED_FILES = ("config.yaml", "provenance.yaml")
#: The model file of a shipped agent: an SB3 archive (sac, dqn, ppo_mask) or a custom trainer's tensors-only file.
PRETRAINED_MODELS = ("model.zip", "model.pt")


def pretrained_agents() -> dict[str, dict[str, Any]]:
    """Name -> provenance of every shipped agent under :data:`PRETRAINED_DIR` (sorted by name)."""
    import yaml

    found: dict[str, dict[str, Any]] = {}
    for folder in sorted(p for p in PRETRAINED_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        missing = [name for name in PRETRAINED_FILES if not (folder / name).is_file()]
        if not any((folder / name).is_file() for name in PRETRAINED_MODELS):
            missing.append(" or ".join(PRETRAINED_MODELS))
        if missing:  # e.g. a wheel built without the package data: say so rather than list no agents
            raise ModelFileError(f"the shipped agent {folder.name!r} lacks {', '.join(missing)} in {folder}: the "
                                 "installation is incomplete; reinstall edge-sched-gym (a wheel must carry "
                                 "agents/pretrained/*/ as package data)")
        if (folder / "provenance.yaml").is_file():
            try:  # safe_load: a tag such as !!python/object is refused, never constructed
                found[folder.name] = yaml.safe_load((folder / "provenance.yaml").read_text())
            except (yaml.YAMLError, UnicodeDecodeError) as err:
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                raise ModelFileError(f"{folder / 'provenance.yaml'} does not parse as a shipped agent's provenance "
                                     f"({first})") from None
    if not found:
        raise ModelFileError(f"no shipped agent in {PRETRAINED_DIR}: the installation is incomplete; reinstall "
                             "edge-sched-gym (a wheel must carry agents/pretrained/*/ as package data)")
    return found


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


def policy_label(spec: str) -> str:
    """The name a table shows for ``spec``, the inverse of :func:`expand_pretrained`: every shipped agent's folder
    in it (absolute, e.g. under site-packages, or relative to the working directory) becomes ``pretrained:<name>``
    (``oinc=<folder>`` -> ``oinc=pretrained:<name>``, ``<folder>+dedas`` -> ``pretrained:<name>+dedas``); a
    model file inside the folder keeps its file name (``pretrained:<name>/model.zip``)."""
    text = str(spec)
    if not PRETRAINED_DIR.is_dir():
        return text
    cwd = Path.cwd()
    folders = [p for p in PRETRAINED_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))]
    for folder in sorted(folders, key=lambda p: -len(p.name)):
        forms = {str(folder)}
        if folder.is_relative_to(cwd):
            forms.add(str(folder.relative_to(cwd)))
        for form in sorted(forms, key=len, reverse=True):
            pattern = re.compile(rf"(?<![\w./-]){re.escape(form)}(?![\w.-])")
            text = pattern.sub(f"pretrained:{folder.name}", text)
    return text


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

            torch.manual_seed(int(seed) % 2**63)  # episode seeds (offline.protocol.episode_seed) exceed 32 bits
            np.random.seed(int(seed) % 2**32)  # noqa: NPY002 (SB3 DQN explores with the global generator)

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


def replay_buffer_file(checkpoint: Path, suffix: str = ".npz") -> Path:
    """The replay buffer saved next to an SB3 checkpoint (``model[_interrupted]_replay_buffer_<n>_steps.npz``;
    ``suffix=".pkl"`` names the pickle older versions wrote there, which is never loaded)."""
    match = _CHECKPOINT.match(checkpoint.name)
    if not match:
        raise ValueError(f"{checkpoint.name} is not named like a checkpoint (model[_interrupted]_<n>_steps.zip)")
    prefix = "model_interrupted" if match.group(1) else "model"
    return checkpoint.with_name(f"{prefix}_replay_buffer_{match.group(2)}_steps{suffix}")


def load_run_config(run_dir: Path) -> Any:
    """The resolved configuration a run saved; a clear error names config.yaml when it is missing, does not
    parse, or is not a run's configuration (a mapping with ``env.id`` and ``algo.name``)."""
    config_file = Path(run_dir) / "config.yaml"
    if not config_file.is_file():
        raise ValueError(f"{run_dir} is not a training run folder: it has no config.yaml")
    try:
        cfg = OmegaConf.load(config_file)
    except Exception as err:  # yaml.YAMLError, OmegaConf errors, UnicodeDecodeError: any garbage
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{config_file} does not parse as a run configuration ({first})") from None
    env_id = cfg.get("env", {}).get("id") if OmegaConf.is_dict(cfg) and OmegaConf.is_dict(cfg.get("env")) else None
    algo = cfg.get("algo") if OmegaConf.is_dict(cfg) else None
    if not isinstance(env_id, str) or not OmegaConf.is_dict(algo) or not isinstance(algo.get("name"), str):
        raise ValueError(f"{config_file} is not a run configuration: expected a mapping with env.id and algo.name "
                         "(the config.yaml train.py saves)")
    check_config_names(cfg, str(config_file))
    return cfg


def _as_list(value: Any) -> list[Any]:
    if OmegaConf.is_list(value) or isinstance(value, (list, tuple)):
        return list(value)
    return [] if value is None else [value]


def check_config_names(cfg: Any, file: str) -> None:
    """Refuse (UnsafeFileError naming ``file`` and the key) a configuration whose env id is not one of the problem
    registry's (``gym.make("module:UEC-v0")`` imports ``module``), or that names a class outside the allow-list
    (:mod:`envs.allowlist`) in ``env.wrappers``, ``env.algo_wrappers`` or ``algo.policy_kwargs`` (``head``,
    ``activation_fn``, ``*_class``, ``*_fn``, also inside ``env.algo_overrides``). Nothing is imported."""
    from envs.problems import check_env_id

    env = cfg.get("env") if OmegaConf.is_dict(cfg) else None
    if OmegaConf.is_dict(env):
        try:
            check_env_id(env.get("id"), f"{file}: env.id")
        except ValueError as err:
            raise UnsafeFileError(f"refusing {err}") from None
        for wrapper in _as_list(env.get("wrappers")):
            check_allowed(wrapper, f"refusing {file}: its env.wrappers entry", UnsafeFileError)
        algo_wrappers = env.get("algo_wrappers")
        for algo, wrappers in (algo_wrappers.items() if OmegaConf.is_dict(algo_wrappers) else []):
            for wrapper in _as_list(wrappers):
                check_allowed(wrapper, f"refusing {file}: its env.algo_wrappers.{algo} entry", UnsafeFileError)
        overrides = env.get("algo_overrides")
        for algo, override in (overrides.items() if OmegaConf.is_dict(overrides) else []):
            if OmegaConf.is_dict(override):
                _check_policy_kwargs(override.get("policy_kwargs"), f"{file}: env.algo_overrides.{algo}")
    algo = cfg.get("algo") if OmegaConf.is_dict(cfg) else None
    if OmegaConf.is_dict(algo):
        _check_policy_kwargs(algo.get("policy_kwargs"), f"{file}: algo")


def _check_policy_kwargs(kwargs: Any, where: str) -> None:
    if not (OmegaConf.is_dict(kwargs) or isinstance(kwargs, dict)):
        return
    for key, value in kwargs.items():
        if (key == "head" or str(key).endswith(("_class", "_fn"))) and value is not None:
            check_allowed(value, f"refusing {where}.policy_kwargs.{key}", UnsafeFileError)




def check_no_symlinks(folder: Path | str, key: str = "resume") -> None:
    """Refuse (ValueError naming ``key``) a run folder that holds a symbolic link anywhere inside it: a resume
    appends to its logs and replaces its checkpoints, and must never write through a link out of the folder."""
    import os

    folder = Path(folder)
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(root) / name
            if path.is_symlink():
                raise ValueError(f"{key}={folder} holds a symbolic link ({path} -> {os.readlink(path)}); a resume "
                                 "writes only inside the run folder: replace the link by a copy of its target, or "
                                 "resume a copy of the folder")


def check_inside(folder: Path | str, path: Path | str, key: str = "run folder") -> Path:
    """``path`` when its resolved location lies inside ``folder``'s (and it is not a symbolic link); ValueError
    otherwise, so nothing is written through a link out of the folder."""
    folder, path = Path(folder), Path(path)
    if path.is_symlink() or not path.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"refusing to write {path}: it resolves to {path.resolve()}, outside the {key} {folder}")
    return path


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
    if spec.kind == "custom":  # contract 5 loaders take the checkpoint (a model file inside the run) as a keyword
        return load_attr(str(spec.loader))(run_dir, env, **({"checkpoint": checkpoint} if checkpoint else {}),
                                             **kwargs)
    if kwargs:  # an SB3 model's greedy policy has no options: a misspelt or misplaced one must not pass silently
        raise ValueError(f"{run_dir} is a {spec.name} run, whose policy takes no keyword arguments; got {sorted(kwargs)}")
    model_file = run_dir / (checkpoint or MODEL_FILE)
    if not model_file.is_file():
        raise ValueError(f"{run_dir} has no {checkpoint or MODEL_FILE} (training interrupted before the first save?)")
    features = FeatureWrappers.missing_from(env, list(cfg.env.get("wrappers") or []))
    view = ObservationView.needed(env, dict(cfg.env.get("kwargs") or {}))
    if features and view:
        raise ValueError(f"{run_dir} was trained under env.wrappers and other observation settings than the env's: "
                         f"play it on an env built from its config.yaml ({view.key}={view.mode})")
    observation_space = (features or view).observation_space if (features or view) else env.observation_space
    model = load_sb3_model(model_file, spec.load_target(), observation_space=observation_space,
                           action_space=env.action_space, algo_cfg=cfg.algo, device=device)
    policy = SB3ModelPolicy(model, name=f"{spec.name}:{run_dir.name}", deterministic=deterministic)
    return (features or view).around(policy) if (features or view) else policy


class ObservationView:
    """A run's observation settings, applied by its policy when the env it plays was built with others.

    OINC's ``observation`` (``paper`` / ``extended``) changes only what the env shows a learner, never the
    dynamics: the shipped ``pretrained:oinc-v0-sacd`` was trained on ``extended``, and a user's
    ``gym.make("OINC-v0")`` shows ``paper``. An env that can show another mode (``observation_as(mode)`` and
    ``observation_space_as(mode)`` on its unwrapped env) lets the policy compute its own observation at each step;
    any other mismatch is left to the model's space check (a clear ModelFileError)."""

    key = "observation"

    def __init__(self, mode: str, observation_space: Any) -> None:
        self.mode = mode
        self.observation_space = observation_space
        self._env: Any = None

    @classmethod
    def needed(cls, env: gym.Env, run_kwargs: dict[str, Any]) -> ObservationView | None:
        """None when ``env`` shows the run's observation (or the run names none); else the view."""
        wanted, played = run_kwargs.get(cls.key), getattr(env.unwrapped, "observation_mode", None)
        if wanted is None or played is None or str(wanted) == str(played):
            return None
        if not hasattr(env.unwrapped, "observation_as"):
            raise ValueError(f"the run was trained with env.kwargs.{cls.key}={wanted}, the env shows {played}: "
                             f"play it on an env built with {cls.key}={wanted}")
        return cls(str(wanted), env.unwrapped.observation_space_as(str(wanted)))

    def around(self, policy: Any) -> Any:
        outer = self

        class WithObservation:
            name = policy.name

            def reset(self, env: gym.Env, seed: int | None = None) -> None:
                outer._env = env.unwrapped
                policy.reset(env, seed)

            def act(self, obs: Any, info: dict[str, Any]) -> Any:
                if outer._env is None:
                    raise RuntimeError("reset the policy on its env before act (Policy protocol)")
                return policy.act(outer._env.observation_as(outer.mode), info)

        return WithObservation()


class FeatureWrappers:
    """The observation wrappers a run was trained under, applied by its policy when the env it plays lacks them.

    A run of the main job was trained on ``NetScoreFeatures(UEC-v0)``; evaluate.py, the ladder and a user's
    ``load_run_policy(run, gym.make("UEC-v0"))`` play it on the bare env. Wrappers that compute their entries
    from the env and the step's info (``observation_for(obs, info)``, e.g. ``offline.uec.features``') are built
    around the played env at each ``reset`` and add those entries before the model sees the observation.
    """

    def __init__(self, paths: list[str], env: gym.Env) -> None:
        self.paths = paths
        self.observation_space = wrap(env, paths).observation_space
        self._env: gym.Env | None = None
        self._layers: list[Any] = []

    @classmethod
    def missing_from(cls, env: gym.Env, paths: list[str]) -> FeatureWrappers | None:
        """None when ``env`` already has every wrapper of ``paths`` (or there are none); else the wrappers, if each
        can compute its features outside the step loop (``observation_for``), or a ValueError naming them."""
        present, layer = set(), env
        while isinstance(layer, gym.Wrapper):
            present.add(f"{type(layer).__module__}:{type(layer).__name__}")
            layer = layer.env
        if all(str(p) in present for p in paths):
            return None
        classes = [import_allowed(str(p), "env.wrappers entry", UnsafeFileError) for p in paths]
        if not all(hasattr(c, "observation_for") for c in classes):
            raise ValueError(f"the run was trained under env.wrappers={[str(p) for p in paths]}: play it on an env "
                             "with those wrappers (envs.problems.make(id, kwargs, wrappers))")
        return cls([str(p) for p in paths], env)

    def around(self, policy: Any) -> Any:
        outer = self

        class WithFeatures:
            name = policy.name

            def reset(self, env: gym.Env, seed: int | None = None) -> None:
                outer.attach(env)
                policy.reset(env, seed)

            def act(self, obs: Any, info: dict[str, Any]) -> Any:
                return policy.act(outer.observe(obs, info), info)

        return WithFeatures()

    def attach(self, env: gym.Env) -> None:
        """Build the wrappers around ``env`` (once per env object; they read its state, never step it)."""
        if env is not self._env:
            self._env, self._layers = env, []
            for path in self.paths:
                layer = wrap(self._layers[-1] if self._layers else env, [path])
                self._layers.append(layer)

    def observe(self, obs: Any, info: dict[str, Any]) -> Any:
        if self._env is None:
            raise RuntimeError("reset the policy on its env before act (Policy protocol)")
        for layer in self._layers:
            obs = layer.observation_for(obs, info)
        return obs


# --------------------------------------------------------------------------------------------------
# Loading without executing code: SB3 models, replay buffers, torch model files
# --------------------------------------------------------------------------------------------------


class ModelFileError(ValueError):
    """A model, checkpoint or replay-buffer file the project cannot load: missing, truncated or damaged."""


class UnsafeFileError(ModelFileError, NotAllowedError):
    """A file that would need code to load (a pickled object) or names a class outside the allow-list
    (:mod:`envs.allowlist`): refused, and nothing in it is run or imported."""


#: ``:serialized:`` (pickled) entries of an SB3 model's ``data`` that :func:`load_sb3_model` rebuilds itself; the
#: pickle is never decoded. Spaces come from the env, schedules from the plain numbers beside them (or the run's
#: config), classes from the algorithm's own policy aliases and :data:`ALLOWED_CLASSES`; the rest is run-time
#: state that SB3 recreates at the next ``learn`` (last observation, episode-statistics deques, parameter views).
REBUILT_ENTRIES: dict[str, str] = {
    "observation_space": "the env's observation space",
    "action_space": "the env's action space",
    "policy_class": "the algorithm's policy alias",
    "policy_kwargs": "plain values, classes from ALLOWED_CLASSES",
    "lr_schedule": "learning_rate",
    "learning_rate": "ConstantSchedule value or the config's learning_rate",
    "exploration_schedule": "DQN rebuilds it from its exploration_* numbers",
    "clip_range": "ConstantSchedule value or the config's clip_range",
    "clip_range_vf": "ConstantSchedule value, the config's clip_range_vf or None",
    "train_freq": "the config's update_ratio / train_freq",
    "replay_buffer_class": "SB3's default buffer for the space",
    "rollout_buffer_class": "SB3's default buffer for the space",
    "_last_obs": "None (the env is reset before training)",
    "_last_original_obs": "None",
    "_last_episode_starts": "None",
    "ep_info_buffer": "None (a fresh statistics window)",
    "ep_success_buffer": "None",
    "critic_parameters": "views rebuilt by _setup_model",
    "critic_target_parameters": "views rebuilt by _setup_model",
}
#: Classes a model's ``policy_kwargs`` may name: the one allow-list, :data:`envs.allowlist.ALLOWED` (the same set
#: object; extend it with :func:`envs.allowlist.allow`, re-exported here as :func:`allow`).
ALLOWED_CLASSES: set[str] = ALLOWED
_BUFFER_MODULES = ("stable_baselines3.common.buffers", "sb3_contrib.common.maskable.buffers")
_CLASS_REPR = re.compile(r"^<class '([A-Za-z_][\w.]*)'>$")
_CONSTANT = re.compile(r"ConstantSchedule\(val=([-+0-9.eE]+|inf|nan)\)")


def _is_pickled(value: Any) -> bool:
    """An SB3 data entry stored as a pickle (or, in a model re-saved safely, its plain description only)."""
    return isinstance(value, dict) and (":serialized:" in value or ":type:" in value)


def allowed_class(name: Any, where: str) -> type:
    """The class ``name`` (``pkg.mod.Class``, ``pkg.mod:Class``, ``<class '...'>`` or a class) if the allow-list
    (:mod:`envs.allowlist`) accepts it; UnsafeFileError otherwise (nothing is imported)."""
    return import_allowed(name, where, UnsafeFileError)


def _safe_policy_kwargs(value: Any, file: str) -> dict[str, Any]:
    """A model's policy_kwargs with every class-valued entry checked against the allow-list."""
    items = {k: v for k, v in value.items() if not str(k).startswith(":")} if _is_pickled(value) else dict(value)
    out: dict[str, Any] = {}
    for key, item in items.items():
        if key == "head" or key.endswith(("_class", "_fn")):
            if item is None:
                out[key] = None
            elif key == "head" and isinstance(item, str) and not _CLASS_REPR.match(item):
                allowed_class(item, f"{file}: policy_kwargs.{key}")
                out[key] = item  # the policy imports the allowed "module:Class" string itself
            else:
                out[key] = allowed_class(item, f"{file}: policy_kwargs.{key}")
        elif isinstance(item, str) and _CLASS_REPR.match(item):
            raise UnsafeFileError(f"{file}: policy_kwargs.{key}={item!r} names a class, which this loader only "
                                  "accepts in *_class, *_fn or head entries")
        else:
            out[key] = item
    return out


def _schedule_value(entry: Any, fallback: Any, key: str, file: str) -> float | None:
    """The constant of a pickled schedule (from its plain description), else ``fallback`` (the config's)."""
    if isinstance(entry, (int, float)) and not isinstance(entry, bool):
        return float(entry)
    text = " ".join(str(v) for k, v in entry.items() if not str(k).startswith(":")) if isinstance(entry, dict) else ""
    match = _CONSTANT.search(text)
    if match:
        return float(match.group(1))
    if isinstance(fallback, (int, float)) and not isinstance(fallback, bool):
        return float(fallback)
    raise ModelFileError(f"{file}: the schedule {key!r} is not a constant this loader can rebuild and the run's "
                         f"config gives no number for it")


def _check_space(entry: Any, space: Any, key: str, file: str) -> None:
    """Refuse a model whose recorded space differs from the env's (type and shape, from the plain description)."""
    if not isinstance(entry, dict):
        return
    recorded = _CLASS_REPR.match(str(entry.get(":type:", "")))
    kind = recorded.group(1).rpartition(".")[2] if recorded else None
    shape = entry.get("_shape")
    ours = tuple(space.shape) if getattr(space, "shape", None) is not None else None
    what = "observations" if key == "observation_space" else "actions"
    if kind is not None and kind != type(space).__name__:
        raise ModelFileError(f"{file} was trained on {what} of type {kind}, the env gives {type(space).__name__} "
                             "(another env, or a config.yaml naming another env than the run's?)")
    if isinstance(shape, list) and ours is not None and tuple(shape) != ours:
        raise ModelFileError(
            f"{file} was trained on {what} of shape {tuple(shape)}, the env gives {ours} (different env kwargs, e.g. "
            "UEC's lp_features or OINC's observation=extended, or a config.yaml naming another env than the run's?)")
    n = entry.get("n")
    if kind == "Discrete" and n is not None and str(n) != str(int(space.n)):
        raise ModelFileError(f"{file} was trained on {int(n) if str(n).isdigit() else n} actions, the env has "
                             f"{int(space.n)} (another env or other env kwargs?)")


def read_model_data(path: Path | str) -> tuple[bytes, dict[str, Any]]:
    """(the file's bytes, its ``data`` JSON) of an SB3 ``model.zip``, read once; ModelFileError when the file is
    missing, truncated or not an SB3 model archive. Nothing is unpickled."""
    import io
    import json
    import zipfile

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ModelFileError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            damaged = archive.testzip()
            if damaged is not None:
                raise ModelFileError(f"{path} is damaged: its member {damaged!r} fails its checksum")
            if "data" not in archive.namelist():
                raise ModelFileError(f"{path} is truncated, damaged or not an SB3 model: the archive has no 'data' "
                                     "entry")
            data = json.loads(archive.read("data").decode())
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, zipfile.LargeZipFile) as err:
        raise ModelFileError(f"{path} is truncated or damaged: not a readable model archive ({err})") from None
    if not isinstance(data, dict):
        raise ModelFileError(f"{path} is not an SB3 model: its 'data' entry is not a JSON object")
    return raw, data


def model_steps(path: Path | str) -> int | None:
    """The env steps a saved SB3 model had done (its ``num_timesteps``, plain JSON); None when unreadable."""
    try:
        value = read_model_data(path)[1].get("num_timesteps")
    except ModelFileError:
        return None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def safe_custom_objects(data: dict[str, Any], cls: type, *, observation_space: Any, action_space: Any,
                        algo_cfg: Any = None, file: str = "model.zip", need_spaces: bool = True) -> dict[str, Any]:
    """The replacement of every pickled entry of ``data`` (SB3's ``custom_objects``): rebuilt, never unpickled.

    Raises UnsafeFileError naming the file and the key for an entry outside :data:`REBUILT_ENTRIES`, a class
    outside :data:`ALLOWED_CLASSES` or an ``env`` entry (SB3 would make an env from it).
    """
    from stable_baselines3.common.utils import FloatSchedule

    algo = dict(OmegaConf.to_container(algo_cfg, resolve=True)) if OmegaConf.is_config(algo_cfg) else dict(algo_cfg or {})
    if "env" in data:
        raise UnsafeFileError(f"refusing to load {file}: its data has an 'env' entry (SB3 would build an env from it)")
    custom: dict[str, Any] = {}
    for key, entry in data.items():
        if key == "policy_kwargs" and isinstance(entry, dict):
            custom[key] = _safe_policy_kwargs(entry, file)
            continue
        if not _is_pickled(entry):
            continue
        if key not in REBUILT_ENTRIES:
            kind = entry.get(":type:", "?")
            raise UnsafeFileError(
                f"refusing to load {file}: its data entry {key!r} is a pickled object ({kind}), which this loader "
                f"never unpickles; entries it rebuilds itself: {sorted(REBUILT_ENTRIES)}")
        if key in ("observation_space", "action_space"):
            space = observation_space if key == "observation_space" else action_space
            if space is None and not need_spaces:  # a pre-check of the file only (check_run_model)
                custom[key] = None
                continue
            if space is None:
                raise ModelFileError(f"loading {file} needs the env's {key} (it is rebuilt from the env, not unpickled)")
            _check_space(entry, space, key, file)
            custom[key] = space
        elif key == "policy_class":
            custom[key] = _policy_class(cls, entry, algo.get("policy"), file)
        elif key == "lr_schedule":  # SB3 rebuilds it from learning_rate in _setup_model anyway
            rate = data.get("learning_rate")
            custom[key] = FloatSchedule(_schedule_value(entry if _is_pickled(rate) else rate, algo.get("learning_rate"),
                                                        key, file))
        elif key == "learning_rate":
            custom[key] = _schedule_value(entry, algo.get("learning_rate"), key, file)
        elif key == "clip_range_vf" and algo.get(key) is None and not _CONSTANT.search(str(entry)):
            custom[key] = None
        elif key in ("clip_range", "clip_range_vf"):
            custom[key] = _schedule_value(entry, algo.get(key), key, file)
        elif key == "train_freq":
            from agents.off_policy import update_schedule

            frequency, unit = entry.get("frequency"), entry.get("unit")
            ratio = algo.get("update_ratio")
            if isinstance(frequency, int) and not isinstance(frequency, bool) and unit in ("step", "episode"):
                custom[key] = (frequency, unit)  # the plain description save_sb3_model writes
            else:
                custom[key] = update_schedule(ratio)[0] if ratio else int(algo.get("train_freq") or 1)
        elif key in ("replay_buffer_class", "rollout_buffer_class"):
            module = entry.get("__module__")
            if module not in _BUFFER_MODULES:
                raise UnsafeFileError(f"refusing to load {file}: {key} comes from {module!r}; this loader rebuilds "
                                      f"only the default buffers of {list(_BUFFER_MODULES)}")
            custom[key] = None  # SB3 picks its default buffer for the space
        else:
            custom[key] = None
    return custom


def _policy_class(cls: type, entry: dict[str, Any], configured: Any, file: str) -> type:
    """The policy class among the algorithm's own aliases: the configured one, else the one the file describes."""
    aliases = dict(getattr(cls, "policy_aliases", {}) or {})
    if isinstance(configured, str) and configured in aliases:
        return aliases[configured]
    names = set(re.findall(r"<function (\w+)\.", " ".join(str(v) for v in entry.values())))
    module = entry.get("__module__")
    for candidate in aliases.values():
        if candidate.__module__ == module and candidate.__name__ in names:
            return candidate
    if len(set(aliases.values())) == 1:
        return next(iter(aliases.values()))
    raise UnsafeFileError(f"refusing to load {file}: its policy_class is not one of {cls.__name__}'s policies "
                          f"{sorted(aliases)} (give algo.policy in the run's config.yaml)")


def load_sb3_model(path: Path | str, cls: type, *, observation_space: Any = None, action_space: Any = None,
                   env: Any = None, algo_cfg: Any = None, device: str = "cpu") -> Any:
    """Load an SB3 ``model.zip`` of algorithm ``cls`` reading only JSON and tensors (the project's one SB3 loader).

    Every pickled entry of the archive's ``data`` is replaced by :func:`safe_custom_objects` (SB3's
    ``custom_objects`` hook) or refused with :class:`UnsafeFileError` naming the file and the key; the parameters
    load with ``torch.load(weights_only=True)``. ``env`` (a VecEnv, for training on) gives the spaces when they
    are not passed. A missing, truncated or damaged file raises :class:`ModelFileError`.
    """
    import io
    import pickle

    path = Path(path)
    if env is not None:
        observation_space = observation_space or env.observation_space
        action_space = action_space or env.action_space
    raw, data = read_model_data(path)
    custom = safe_custom_objects(data, cls, observation_space=observation_space, action_space=action_space,
                                 algo_cfg=algo_cfg, file=str(path))
    leftover = [k for k, v in data.items() if _is_pickled(v) and k not in custom]
    assert not leftover, leftover  # every pickled entry is replaced: SB3 never decodes one
    try:
        return cls.load(io.BytesIO(raw), env=env, device=device, custom_objects=custom)
    except pickle.UnpicklingError as err:
        raise UnsafeFileError(f"refusing to load {path}: a tensor file inside it is not weights-only (it would need "
                              f"code to unpickle: {str(err).splitlines()[0] if str(err) else err})") from None
    except (RuntimeError, EOFError, KeyError, AssertionError, TypeError, ValueError) as err:
        if isinstance(err, ModelFileError):
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelFileError(f"{path} cannot be loaded as a {cls.__name__} model for this env ({first})") from None


def check_run_model(path: Path | str) -> None:
    """Before an evaluation writes anything: the model file of a run folder (or the checkpoint ``path`` names)
    holds nothing this project would refuse to load (:func:`safe_custom_objects` for SB3 runs, spaces aside: they
    are checked against the env at load; a weights-only read for custom trainers' ``.pt`` files); raises the
    loader's error otherwise."""
    run_dir, checkpoint = split_run_path(path)
    cfg = load_run_config(run_dir)
    spec = get_spec(cfg.algo)
    if spec.kind == "reference":
        return
    if spec.kind == "custom":
        model_file = run_dir / (checkpoint or "model.pt")
        if model_file.is_file():
            safe_torch_load(model_file)
        return
    model_file = run_dir / (checkpoint or MODEL_FILE)
    if not model_file.is_file():
        raise ValueError(f"{run_dir} has no {checkpoint or MODEL_FILE} (training interrupted before the first save?)")
    data = read_model_data(model_file)[1]
    safe_custom_objects(data, spec.load_target(), observation_space=None, action_space=None, algo_cfg=cfg.algo,
                        file=str(model_file), need_spaces=False)


def safe_torch_load(path: Path | str, device: str = "cpu", what: str = "model file") -> Any:
    """``torch.load(path, weights_only=True)`` with the project's errors: UnsafeFileError for a file that needs
    code to unpickle, ModelFileError for a missing, truncated or damaged one."""
    import pickle

    import torch

    path = Path(path)
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as err:
        raise UnsafeFileError(
            f"refusing to load {str(path)!r}: it is not a weights-only {what} (only tensors and plain values are "
            f"allowed; files the project writes are). Details: {str(err).splitlines()[0] if str(err) else err}"
        ) from None
    except (OSError, EOFError, RuntimeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelFileError(f"{path} cannot be read as a {what}: truncated or damaged ({first})") from None


def save_config_model(path: Path, model: Any, **meta: Any) -> Path:
    """Save a torch model with a ``cfg.to_dict()`` as ``{"model_config", "state_dict", "meta"}``: tensors and
    plain values only, so :func:`load_config_model` reads it weights-only (the UEC and OINC trainers' format)."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model_config": model.cfg.to_dict(), "state_dict": model.state_dict(), "meta": meta}, path)
    return path


def load_config_model(path: Path | str, device: str, what: str, build: Callable[[dict], Any]) -> tuple[Any, dict]:
    """A torch model saved as ``{"model_config": {...}, "state_dict": ..., ...}`` (the CoRaiS and UEC attention
    trainers' format): read weights-only (:func:`safe_torch_load`), built by ``build(model_config)``, loaded and
    put in eval mode; returns (model, the file's dict). A file of another shape raises :class:`ModelFileError`."""
    blob = safe_torch_load(path, device, what=what)
    if not (isinstance(blob, dict) and isinstance(blob.get("model_config"), dict) and "state_dict" in blob):
        raise ModelFileError(f"{str(path)!r} is not a {what}: expected a dict with 'model_config' and 'state_dict'")
    try:
        model = build(blob["model_config"]).to(device)
        model.load_state_dict(blob["state_dict"])
    except (TypeError, RuntimeError, ValueError) as err:
        raise ModelFileError(f"{str(path)!r} does not hold a {what} this code can build "
                             f"({str(err).splitlines()[0]})") from None
    model.eval()
    return model, blob


# ------------------------------------------------------------------------------------------- replay buffers

#: array attributes of SB3's ReplayBuffer / DictReplayBuffer saved by :func:`save_replay_buffer`
_BUFFER_ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def save_replay_buffer(buffer: Any, path: Path | str) -> Path:
    """Save an SB3 replay buffer as arrays (``np.savez``; no pickle), atomically (a temporary file renamed)."""
    import os

    path = Path(path)
    arrays: dict[str, np.ndarray] = {"pos": np.asarray(int(buffer.pos)), "full": np.asarray(bool(buffer.full))}
    for name in _BUFFER_ARRAYS:
        value = getattr(buffer, name, None)
        if isinstance(value, dict):
            for key, array in value.items():
                arrays[f"{name}/{key}"] = np.asarray(array)
        elif value is not None:
            arrays[name] = np.asarray(value)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
    os.replace(tmp, path)
    return path


def load_replay_buffer(buffer: Any, path: Path | str) -> None:
    """Fill ``buffer`` (the model's freshly built one) from :func:`save_replay_buffer`'s file.

    Reads with ``np.load(allow_pickle=False)``: UnsafeFileError for object arrays, ModelFileError for a
    truncated file or arrays whose names, shapes or dtypes differ from the buffer's.
    """
    import zipfile

    path = Path(path)
    if path.suffix == ".pkl":
        raise UnsafeFileError(f"refusing to load {path}: replay buffers saved as pickles are never loaded (they "
                              "could run code); delete it to resume with an empty replay buffer")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except ValueError as err:
        if "allow_pickle" in str(err) or "pickled" in str(err):
            raise UnsafeFileError(f"refusing to load {path}: it holds pickled objects, not plain arrays") from None
        raise ModelFileError(f"{path} is truncated or damaged: {err}") from None
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as err:
        raise ModelFileError(f"{path} is truncated or damaged: {err}") from None
    expected: dict[str, np.ndarray] = {}
    for name in _BUFFER_ARRAYS:
        value = getattr(buffer, name, None)
        if isinstance(value, dict):
            expected.update({f"{name}/{key}": array for key, array in value.items()})
        elif value is not None:
            expected[name] = value
    missing = sorted(({*expected, "pos", "full"}) - set(arrays))
    if missing:
        raise ModelFileError(f"{path} is not a replay buffer of this run: it lacks {missing}")
    for name, target in expected.items():
        array = arrays[name]
        if array.shape != target.shape or array.dtype != target.dtype:
            raise ModelFileError(f"{path}: {name} has shape {array.shape} {array.dtype}, this run's buffer "
                                 f"{target.shape} {target.dtype} (another buffer_size, n_envs or env?)")
    pos, full = int(arrays["pos"]), bool(arrays["full"])
    if not 0 <= pos < buffer.buffer_size:
        raise ModelFileError(f"{path}: pos={pos} is outside the buffer (size {buffer.buffer_size})")
    for name, target in expected.items():
        target[...] = arrays[name]
    buffer.pos, buffer.full = pos, full


def strip_pickles(raw: bytes, describe: dict[str, dict[str, Any]] | None = None) -> bytes:
    """An SB3 model archive with the pickles of its ``data`` removed (each entry keeps its plain description, which
    :func:`load_sb3_model` rebuilds from; ``describe`` adds plain fields to entries); every other member is copied
    unchanged."""
    import io
    import json
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as archive, zipfile.ZipFile(out, "w") as target:
        for item in archive.infolist():
            payload = archive.read(item.filename)
            if item.filename == "data":
                data = json.loads(payload)
                for value in data.values():
                    if isinstance(value, dict):
                        value.pop(":serialized:", None)
                for key, fields in (describe or {}).items():
                    if isinstance(data.get(key), dict):
                        data[key].update(fields)
                payload = json.dumps(data, indent=4).encode()
            target.writestr(item, payload)
    return out.getvalue()


def save_sb3_model(model: Any, path: Path | str) -> Path:
    """Save an SB3 model in the safe format (no pickles; :func:`strip_pickles`), atomically: a temporary file
    renamed over ``path``, so a crash mid-save never leaves a truncated model."""
    import io
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    model.save(buffer)
    describe = {}
    train_freq = getattr(model, "train_freq", None)
    if train_freq is not None and hasattr(train_freq, "frequency"):  # a NamedTuple: SB3 pickles it without fields
        describe["train_freq"] = {"frequency": int(train_freq.frequency), "unit": str(train_freq.unit.value)}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(strip_pickles(buffer.getvalue(), describe))
    os.replace(tmp, path)
    return path


def load_run_model(model_file: Path | str, device: str = "cpu") -> Any:
    """The SB3 model of a run's ``model.zip`` or checkpoint, loaded safely (:func:`load_sb3_model`) with the
    spaces of the env its config.yaml names (what ``DiscreteSAC.load(path)`` was, for files in the safe format)."""
    from envs.problems import make

    model_file = Path(model_file)
    run_dir, _ = split_run_path(model_file)
    cfg = load_run_config(run_dir)
    env_cfg = OmegaConf.to_container(cfg.env, resolve=True)
    env = make(str(env_cfg["id"]), env_cfg.get("kwargs") or {}, env_cfg.get("wrappers") or ())
    try:
        return load_sb3_model(model_file, get_spec(cfg.algo).load_target(), observation_space=env.observation_space,
                              action_space=env.action_space, algo_cfg=cfg.algo, device=device)
    finally:
        env.close()
