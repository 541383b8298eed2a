"""``python -m agents.zoo enjoy``: play an rl-zoo3 log folder through the suite's safe loaders.

rl-zoo3's own ``enjoy`` reads ``args.yml`` / ``config.yml`` with ``yaml.UnsafeLoader`` (a ``!!python/object/apply``
tag runs code) and the model with SB3's ``load`` (it unpickles). Here the two files are read with
``yaml.safe_load`` (the one data tag rl-zoo3 itself writes, ``collections.OrderedDict``, becomes a dict; every other
``python/`` tag is refused), every key must be one rl-zoo3 or the algorithm knows and hold a plain value, the env id
must be one of the problem registry's and its wrappers on the allow-list (:mod:`envs.allowlist`), and the model
loads through :func:`agents.loading.load_sb3_model` (pickled entries rebuilt or refused, tensors weights-only).
Anything else is refused with :class:`agents.loading.UnsafeFileError` naming the file and the key.
"""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import Any

import numpy as np
import yaml

#: config.yml keys that make rl-zoo3 load a pickle or import code at play time: refused when set
_REFUSED_CONFIG = ("vec_env_wrapper", "frame_stack", "normalize_kwargs", "replay_buffer_class", "callback")
#: config.yml keys besides the algorithm's constructor arguments (rl-zoo3's hyperparameter file and the export)
_CONFIG_KEYS = {"n_timesteps", "policy", "policy_kwargs", "n_envs", "normalize", "env_kwargs", "env_wrapper",
                "pretrained", "eval_env_kwargs", *_REFUSED_CONFIG}
#: args.yml keys: rl-zoo3 train's command-line options (rl_zoo3/train.py) and the export's
_ARGS_KEYS = {"algo", "env", "tensorboard_log", "trained_agent", "truncate_last_trajectory", "n_timesteps",
              "num_threads", "log_interval", "eval_freq", "optimization_log_path", "eval_episodes", "n_eval_envs",
              "save_freq", "save_replay_buffer", "log_folder", "seed", "vec_env", "device", "n_trials",
              "max_total_trials", "optimize_hyperparameters", "no_optim_plots", "n_jobs", "sampler", "pruner",
              "n_startup_trials", "n_evaluations", "storage", "study_name", "trial_id", "verbose", "gym_packages",
              "env_kwargs", "eval_env_kwargs", "hyperparams", "conf_file", "uuid", "track", "wandb_project_name",
              "wandb_entity", "wandb_group", "progress", "wandb_tags"}


class _ZooLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` plus rl-zoo3's OrderedDict tag, built as a plain dict from its (key, value) pairs."""


def _ordered_dict(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    pairs = loader.construct_sequence(node.value[0], deep=True) if isinstance(node, yaml.SequenceNode) and node.value \
        else []
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise yaml.constructor.ConstructorError(None, None, "an OrderedDict that is not a list of pairs",
                                                node.start_mark)
    return {str(k): v for k, v in pairs}


_ZooLoader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.OrderedDict", _ordered_dict)


def read_yaml(path: Path, known: set[str]) -> dict[str, Any]:
    """A mapping of plain values from ``path`` (safe YAML), every key in ``known``; UnsafeFileError otherwise."""
    from agents.loading import UnsafeFileError

    if not path.is_file():
        return {}
    try:
        data = yaml.load(path.read_text(), Loader=_ZooLoader)  # a SafeLoader subclass
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnsafeFileError(f"refusing {path}: it does not parse as plain YAML ({first}); only files that hold "
                              "data (no python/ tags) are read") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UnsafeFileError(f"refusing {path}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if str(k) not in known)
    if unknown:
        raise UnsafeFileError(f"refusing {path}: {unknown} are not keys rl-zoo3 or this suite writes; known: "
                              f"{sorted(known)}")
    return data


def _model_file(folder: Path, algo: str, env_id: str, exp_id: int) -> Path:
    """``<folder>/<algo>/<env_id>_<exp_id>/<env_id>.zip`` (exp_id 0: the highest id there), as rl-zoo3 files it."""
    base = folder / algo
    if exp_id == 0:
        ids = [int(p.name.rpartition("_")[2]) for p in base.glob(f"{env_id}_*") if p.name.rpartition("_")[2].isdigit()]
        if not ids:
            raise ValueError(f"no experiment of {algo} on {env_id} in {base} (expected {env_id}_<exp_id>/)")
        exp_id = max(ids)
    run = base / f"{env_id}_{exp_id}"
    model = run / f"{env_id}.zip"
    if not model.is_file():
        raise ValueError(f"{model} does not exist: -f/--folder, --algo, --env and --exp-id must name an rl-zoo3 "
                         "experiment (python -m agents.pretrained export=<name> out=<folder> writes one)")
    return model


def load_zoo_model(folder: Path | str, algo: str, env_id: str, exp_id: int = 0,
                   env_kwargs: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """(model, env) of an rl-zoo3 experiment, read safely (module docstring); ValueError for anything refused."""
    from agents.loading import UnsafeFileError, load_sb3_model
    from agents.zoo import register_algos
    from envs.allowlist import check_allowed
    from envs.problems import check_env_id, make

    algos = register_algos()
    if algo not in algos:
        raise ValueError(f"--algo={algo!r} is invalid: expected one of {sorted(algos)}")
    check_env_id(env_id, "--env")
    model_file = _model_file(Path(folder), algo, env_id, exp_id)
    stats = model_file.parent / env_id
    cls = algos[algo]
    known = _CONFIG_KEYS | {name for klass in cls.__mro__ if "__init__" in vars(klass)
                            for name in inspect.signature(klass.__init__).parameters} - {"self", "args", "kwargs"}
    config = read_yaml(stats / "config.yml", known)
    args = read_yaml(stats / "args.yml", _ARGS_KEYS)
    if config.get("normalize") or (stats / "vecnormalize.pkl").is_file():
        raise UnsafeFileError(f"refusing {stats}: a VecNormalize statistics file is a pickle, which this suite never "
                              "loads (normalize: true)")
    for key in _REFUSED_CONFIG:
        if config.get(key):
            raise UnsafeFileError(f"refusing {stats / 'config.yml'}: {key}={config[key]!r} is not played by this "
                                  "suite (rl-zoo3 would import or unpickle for it)")
    for key, value in (("args.yml: env", args.get("env")), ("args.yml: algo", args.get("algo"))):
        if value is not None and str(value) not in (env_id, algo):
            raise UnsafeFileError(f"refusing {stats}: {key}={value!r} differs from --env {env_id} / --algo {algo}")
    wrappers = config.get("env_wrapper") or []
    wrappers = [wrappers] if isinstance(wrappers, str) else wrappers
    if not isinstance(wrappers, list) or not all(isinstance(w, str) for w in wrappers):
        raise UnsafeFileError(f"refusing {stats / 'config.yml'}: env_wrapper={wrappers!r} is not a list of class "
                              "names (wrappers with arguments are not played here)")
    for wrapper in wrappers:
        check_allowed(wrapper, f"{stats / 'config.yml'}: env_wrapper entry", UnsafeFileError)
    kwargs = {**(config.get("env_kwargs") or {}), **(args.get("env_kwargs") or {}), **(env_kwargs or {})}
    if not isinstance(kwargs, dict):
        raise UnsafeFileError(f"refusing {stats}: env_kwargs is not a mapping")
    from agents.registry import check_env_kwargs

    check_env_kwargs(env_id, kwargs, key="env_kwargs")
    env = make(env_id, kwargs, wrappers)  # each wrapper imported only after the allow-list check
    # the plain numbers of the hyperparameters (learning_rate, clip_range, ...) stand in for pickled schedules
    algo_cfg = {k: v for k, v in config.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)}
    model = load_sb3_model(model_file, cls, observation_space=env.observation_space, action_space=env.action_space,
                           algo_cfg=algo_cfg)
    return model, env


def enjoy(argv: list[str]) -> float:
    """Parse rl-zoo3's ``enjoy`` options this suite plays, load safely and play ``-n`` steps; prints the mean reward
    of the finished episodes (rl-zoo3's ``Mean reward`` line) and returns it (NaN when none finished)."""
    from agents.loading import SB3ModelPolicy

    parser = argparse.ArgumentParser(prog="python -m agents.zoo enjoy",
                                     description="play an rl-zoo3 experiment through the suite's safe loaders")
    parser.add_argument("--env", required=True)
    parser.add_argument("-f", "--folder", default="rl-trained-agents")
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("-n", "--n-timesteps", type=int, default=1000)
    parser.add_argument("--exp-id", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--stochastic", action="store_true")
    parser.add_argument("--no-render", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--num-threads", "-nt", type=int, default=-1)
    parser.add_argument("--gym-packages", nargs="+", default=[])
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args(argv)
    for package in args.gym_packages:
        if package not in ("envs", "agents.zoo"):
            raise ValueError(f"--gym-packages {package!r} is not imported by this suite's enjoy: its ids are "
                             "registered by envs (the default)")
    if args.num_threads > 0:
        import torch

        torch.set_num_threads(args.num_threads)
    from offline.protocol import policy_env

    model, env = load_zoo_model(args.folder, args.algo, args.env, args.exp_id)
    print(f"Loaded {args.folder}/{args.algo}/{args.env}_* safely (agents.loading)")
    policy = SB3ModelPolicy(model, name=args.algo, deterministic=not args.stochastic)
    obs, info = env.reset(seed=args.seed)
    policy.reset(policy_env(env, policy), args.seed)
    rewards, total, episode = [], 0.0, 0
    for _ in range(args.n_timesteps):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        total += float(reward)
        if terminated or truncated:
            rewards.append(total)
            if args.verbose > 0:
                print(f"Episode Reward: {total:.2f}")
            episode += 1
            total = 0.0
            obs, info = env.reset(seed=args.seed + episode)
            policy.reset(policy_env(env, policy), args.seed + episode)
    env.close()
    mean = float(np.mean(rewards)) if rewards else float("nan")
    if rewards:
        print(f"Mean reward: {mean:.2f} +/- {float(np.std(rewards)):.2f} over {len(rewards)} episodes")
    else:
        print(f"no episode finished in -n {args.n_timesteps} steps")
    return mean
