"""Train a learner (or log a non-learning reference) on one of the suite's envs.

    python train.py env=uec-v0 algo=sac                 # the default budget (algo.default_steps)
    python train.py env=uec-v0 algo=dqn steps=50000 seed=1 n_envs=2 out=runs device=cpu
    python train.py env=uec-v0 algo=rescue              # evaluate RESCUE, log it like a run
    python train.py env=oinc-v0 algo=ppo_mask n_envs=64 vec_env=native   # batched MaskablePPO, on any env
    python train.py env=oinc-v0 +experiment=oinc_sac_paper   # a paper preset (edge_sched_gym/conf/experiment/)
    python train.py -m env=uec-v0 algo=sac seed=0,1,2   # a sweep, one job after the other
    python train.py -m seed=0,1 hydra/launcher=joblib   # jobs in parallel processes (hydra-joblib-launcher)
    python train.py -m seed=0,1,2 hydra/launcher=submitit_slurm hydra.launcher.partition=gpu \
        hydra.launcher.timeout_min=240 device=cuda      # one SLURM job per run (hydra-submitit-launcher)
    python train.py --cfg job                           # print the composed configuration (add --resolve)
    python train.py --help                              # config groups and every key with its default
    python train.py resume=runs/uec-v0__sac__0__<time> steps=60000   # continue a stopped run

The dataclasses below (``TrainConfig``, ``EvalConfig``, ``EnvConfig``) and those of agents.registry
(one per algorithm) are Hydra structured-config schemas in Hydra's ConfigStore: ``train_schema`` is
the root of edge_sched_gym/conf/config.yaml, ``algo/<name>_schema`` the first default of edge_sched_gym/conf/algo/<name>.yaml. They
are the one source of keys, types and defaults, so Hydra itself rejects an unknown key, a wrong type
or an unknown env/algo choice (listing the available ones). Ranges a type cannot express (steps >= 0,
gamma in (0, 1], batch_size <= buffer_size, ...) are checked before any run folder is made: an
``error: <key>=<value> is invalid: expected ...`` line and exit status 2.

Each run writes ``<out>/<env>__<algo>__<seed>__<time>/`` (a ``-<n>`` suffix when parallel jobs meet)
with config.yaml, TensorBoard event files, progress.csv, eval.csv, train.log, checkpoints/ and the final
model.zip, and prints that folder and the ``tensorboard --logdir`` command on its last lines. SIGINT,
SIGTERM and SIGHUP stop at the next env step, save model.zip, an interrupt checkpoint (and the replay
buffer), flush the logs and exit with 128 + the signal's number. ``resume=<run folder>`` continues a run
in its folder from its newest intact checkpoint with its saved config.yaml (:func:`prepare_resume`): an empty
``resume=`` is an error; ``steps`` must exceed the step the run reached (its model.zip or newest checkpoint); a
damaged checkpoint or replay buffer is skipped for the previous intact one, with a warning; rows of eval.csv and
progress.csv past the checkpoint move to ``<name>.superseded.csv``; a newer model.zip is never replaced by an
older model. Models and checkpoints are saved without pickles and replay buffers as arrays
(``model_replay_buffer_<n>_steps.npz``); loading goes through :func:`agents.loading.load_sb3_model`, which never
unpickles (an old ``.pkl`` buffer is refused, never loaded). The end of training is saved as a checkpoint too.

``run(cfg)`` is the whole program; ``main`` is only the Hydra wrapper (tests call ``run``).
"""

from __future__ import annotations

import logging
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import hydra
import numpy as np
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

# re-exported: benchmarks/training_speed's worker reads them as train.<name>
from agents.ppo import fast_distributions, is_maskable_ppo, learn_kwargs, speed_up_policy
from agents.registry import (
    COUNT,
    EPISODES,
    N_ENVS,
    NATURAL,
    SEED,
    STEPS,
    Rule,
    check_ranges,
    check_writable_folder,
    register_configs,
)
from edge_sched_gym import CONF_DIR
from offline.provenance import check_output_path

log = logging.getLogger("train")


# --------------------------------------------------------------------------------------------------
# Schemas (Hydra structured configs)
# --------------------------------------------------------------------------------------------------


class Device(str, Enum):
    auto = "auto"  # cuda when available, else cpu
    cpu = "cpu"
    cuda = "cuda"


class VecEnv(str, Enum):
    dummy = "dummy"  # DummyVecEnv: the n_envs envs step in this process
    subproc = "subproc"  # SubprocVecEnv: one process per env
    native = "native"  # the env's own numpy-batched VectorEnv (registered vector_entry_point, e.g. UEC-v0)


@dataclass
class EnvConfig:
    """edge_sched_gym/conf/env/<name>.yaml (contract 1), shared with evaluate.py."""

    name: str = "???"  # the run folder's env part, e.g. uec-v0
    id: str = "???"  # the registered Gymnasium id (envs.problems.PROBLEMS), e.g. UEC-v0
    kwargs: dict[str, Any] = field(default_factory=dict)  # gym.make(id, **kwargs)
    wrappers: list[str] = field(default_factory=list)  # "module:Class" gymnasium wrappers, applied in order
    reference_policy: Any = None  # non-learning policy (or list: the best of them) logged next to the learner
    algo_overrides: dict[str, Any] = field(default_factory=dict)  # algo name -> keys merged over edge_sched_gym/conf/algo
    algo_wrappers: dict[str, Any] = field(default_factory=dict)  # algo name -> wrappers appended for that algo only


@dataclass
class EvalConfig:
    freq: int = 2000  # env steps between evaluations; 0 = only at the start and the end
    episodes: int = 10  # one episode per seed: seed, seed + 1, ...
    seed: int = 1000  # evaluation seeds are disjoint from the training seeds (seed, seed + 1, ...)
    reference: bool = True  # evaluate env.reference_policy on the same seeds and log it
    bound: bool = True  # log env/competitive_ratio against the env's upper bound (UEC: OPT(LP), one LP solve)


@dataclass
class TrainConfig:
    """The root of edge_sched_gym/conf/config.yaml (ConfigStore ``train_schema``)."""

    env: EnvConfig = field(default_factory=EnvConfig)  # env=<edge_sched_gym/conf/env/*.yaml>
    algo: Any = None  # algo=<edge_sched_gym/conf/algo/*.yaml>, typed by its own schema (agents.registry)
    steps: int = "${algo.default_steps}"  # type: ignore[assignment]  # env steps, summed over the n_envs envs
    seed: int = 0  # 0 .. 2**32 - 1, like eval.seed and evaluate.py's seed
    out: str = "runs"  # root folder; each run writes <out>/<env>__<algo>__<seed>__<time>/
    n_envs: int = 1  # vectorised training envs
    vec_env: VecEnv = VecEnv.dummy
    device: Device = Device.auto
    threads: int = 1  # torch CPU threads (small MLPs are fastest on one thread)
    progress: bool = True  # progress bar
    checkpoint_freq: int = 10_000  # env steps between checkpoints (checkpoints/model_<steps>_steps.zip)
    eval: EvalConfig = field(default_factory=EvalConfig)
    resume: str | None = None  # a run folder to continue from its latest checkpoint, with its config.yaml


#: ranges of the top-level keys (types are the schema's).
TOP_RULES: dict[str, Rule] = {
    "steps": STEPS,
    "seed": SEED,
    "n_envs": N_ENVS,
    "threads": COUNT,
    "checkpoint_freq": COUNT,
    "eval.freq": NATURAL,
    "eval.episodes": EPISODES,
    "eval.seed": SEED,
}


def check_hydra_keys(hydra_cfg: Any) -> None:
    """Refuse keys under ``hydra.`` that Hydra does not define (``+hydra.foo=1`` was silently accepted): the composed
    hydra node against Hydra's own HydraConf schema, in its typed parts (the launcher, sweeper, logging and
    callbacks nodes hold their plugins' own keys and are left to them)."""
    import dataclasses

    from hydra.conf import HydraConf

    def walk(node: Any, schema: Any, prefix: str) -> None:
        if not (isinstance(node, DictConfig) and isinstance(schema, DictConfig)):
            return
        typ = OmegaConf.get_type(schema)
        if typ is None or not dataclasses.is_dataclass(typ):
            return
        typed = set(schema.keys())  # ``in`` is False for a key whose default is MISSING (e.g. run.dir)
        # Hydra's own config group hydra/env (in its defaults list) is not a HydraConf field
        known = typed | {"env"} if prefix == "hydra." else typed
        for key in node:
            if key not in known:
                raise ValueError(f"{prefix}{key} is not a Hydra setting; valid keys under {prefix[:-1]}: "
                                 f"{sorted(str(k) for k in known)}")
            if key in typed:
                walk(node._get_node(key), schema._get_node(key), f"{prefix}{key}.")

    walk(hydra_cfg, OmegaConf.structured(HydraConf), "hydra.")


def register_schemas() -> None:
    """Put ``train_schema`` and every ``algo/<name>_schema`` into Hydra's ConfigStore (idempotent)."""
    ConfigStore.instance().store(name="train_schema", node=TrainConfig)
    register_configs()


register_schemas()  # before Hydra (or a test's compose) reads edge_sched_gym/conf/config.yaml


def available_choices(group: str) -> list[str]:
    """The config files of a Hydra group (``env``, ``algo`` or ``experiment``)."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


# --------------------------------------------------------------------------------------------------
# Validation and composition
# --------------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """A validated run: plain dicts for the env and the (env-overridden) algo, plus the top level."""

    cfg: DictConfig  # the full resolved configuration that is saved as config.yaml
    env: dict[str, Any]
    algo: dict[str, Any]
    spec: Any  # agents.registry.AlgoSpec
    steps: int


def _algo_cli_overrides(overrides: list[str] | None) -> list[tuple[str, Any]]:
    """``algo.<key>=<value>`` command-line overrides, parsed like Hydra does (they beat algo_overrides)."""
    if not overrides:
        return []
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return [
        (o.key_or_group.lstrip("+")[len("algo."):], o.value())
        for o in parsed
        if o.key_or_group.lstrip("+").startswith("algo.") and not o.is_delete()
    ]


def prepare(cfg: DictConfig, overrides: list[str] | None = None) -> Prepared:
    """Validate ``cfg`` and merge ``env.algo_overrides[<algo>]`` into the algo config.

    Precedence: the algo schema < edge_sched_gym/conf/algo/<algo>.yaml < env's algo_overrides < ``algo.*`` command-line
    overrides. Raises ValueError naming the key and the valid values on any bad input.
    """
    from agents.registry import get_spec, validate_algo_config

    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    cfg.pop("hydra", None)
    env_cfg = cfg.get("env")
    if not isinstance(env_cfg, DictConfig) or "id" not in env_cfg:
        raise ValueError(f"env must be chosen with env=<name>; valid envs: {available_choices('env')}")
    algo_cfg = cfg.get("algo")
    if not isinstance(algo_cfg, DictConfig) or "name" not in algo_cfg:
        raise ValueError(f"algo must be chosen with algo=<name>; valid algos: {available_choices('algo')}")

    # env overrides, then the command line's algo.* overrides again on top
    algo_name = str(algo_cfg.name)
    env_overrides = (env_cfg.get("algo_overrides") or {}).get(algo_name) or {}
    merged = OmegaConf.merge(algo_cfg, env_overrides)
    for key, value in _algo_cli_overrides(overrides):
        OmegaConf.update(merged, key, value, merge=True, force_add=True)
    cfg.algo = merged

    # top level against the schema (types, unknown keys), then ranges
    try:
        top = OmegaConf.merge(OmegaConf.structured(TrainConfig), cfg)
        plain = OmegaConf.to_container(top, resolve=True, throw_on_missing=True, enum_to_str=True)
    except OmegaConfBaseException as err:
        if "default_steps" in str(err):
            raise ValueError(f"algo={algo_name} has no default budget: give steps=N") from None
        key = f" at {err.full_key}" if getattr(err, "full_key", None) else ""
        valid = sorted(TrainConfig.__dataclass_fields__)
        raise ValueError(f"invalid configuration{key} ({str(err.msg).splitlines()[0]}); "
                         f"valid top-level keys: {valid}") from None
    assert isinstance(plain, dict)
    # the env's wrappers for this algo only (e.g. the main job's heuristic scores) join env.wrappers, so the run's
    # config.yaml lists every wrapper it was trained with and a resume does not apply them twice
    extra = (plain["env"].get("algo_wrappers") or {}).get(algo_name) or []
    plain["env"]["wrappers"] = [*plain["env"]["wrappers"], *(w for w in extra if w not in plain["env"]["wrappers"])]
    plain["env"]["algo_wrappers"] = {}
    check_ranges(plain, TOP_RULES)
    if not str(plain["out"]).strip():
        raise ValueError(f"out={plain['out']!r} is invalid: expected a folder (each run writes <out>/<env>__<algo>__"
                         "<seed>__<time>/), e.g. out=runs")
    from agents.registry import check_env_kwargs

    check_env_kwargs(str(plain["env"]["id"]), plain["env"].get("kwargs"))
    if plain["device"] == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("device=cuda but no CUDA device is available; valid values here: ['auto', 'cpu']")

    if plain["vec_env"] == "native":
        check_native_vector_env(plain["env"])
    spec = get_spec(plain["algo"])
    plain["algo"] = validate_algo_config(plain["algo"])
    top = OmegaConf.create(plain)
    env = dict(plain["env"])
    if spec.kind == "sb3" and top.steps == 0:
        raise ValueError(f"steps=0 is invalid for algo={spec.name}: expected an integer >= 1")
    return Prepared(cfg=top, env=env, algo=plain["algo"], spec=spec, steps=int(top.steps))


def check_native_vector_env(env_cfg: dict[str, Any]) -> None:
    """``vec_env=native`` needs an env registered with a ``vector_entry_point`` and no wrappers."""
    import envs  # noqa: F401  (registers the suite's problems)
    from envs.problems import PROBLEMS

    native = [env_id for env_id, problem in PROBLEMS.items() if problem.vector_entry_point]
    problem = PROBLEMS.get(str(env_cfg["id"]))
    if problem is None or not problem.vector_entry_point:
        raise ValueError(f"vec_env=native is invalid for env {env_cfg['id']}: envs with a native vector env: {native}; "
                         "valid values here: ['dummy', 'subproc']")
    if env_cfg.get("wrappers"):
        raise ValueError(f"vec_env=native cannot apply env.wrappers={list(env_cfg['wrappers'])} (they wrap single "
                         "envs; env.algo_wrappers.<algo> joins them): use vec_env=dummy, or env.wrappers=[] "
                         "env.algo_wrappers.<algo>=[] to train without them")


def make_native_vec_env(env_cfg: dict[str, Any], n_envs: int, seed: int) -> Any:
    """The env's own batched VectorEnv (SAME_STEP autoreset) as an SB3 VecEnv with episode statistics."""
    import gymnasium as gym
    from gymnasium.vector import AutoresetMode
    from stable_baselines3.common.vec_env import VecMonitor

    from agents.vec_env import GymnasiumVectorToSB3

    vector = gym.make_vec(str(env_cfg["id"]), num_envs=n_envs, vectorization_mode="vector_entry_point",
                          autoreset_mode=AutoresetMode.SAME_STEP, **(env_cfg.get("kwargs") or {}))
    venv = GymnasiumVectorToSB3(vector)
    venv.seed(seed)
    return VecMonitor(venv)


def make_env(env_cfg: dict[str, Any]) -> Any:
    """``envs.problems.make(env.id, env.kwargs, env.wrappers)`` with a clear error for a bad id or wrapper."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the suite's problems)
    from envs.problems import PROBLEMS, make

    env_id = str(env_cfg["id"])
    try:
        return make(env_id, env_cfg.get("kwargs"), env_cfg.get("wrappers") or ())
    except gym.error.Error as err:
        raise ValueError(f"env id {env_id!r} cannot be made ({err}); registered suite ids: {list(PROBLEMS)}") from None
    except ModuleNotFoundError as err:
        raise ValueError(f"env {env_id!r} is registered but a module it needs is missing ({err})") from None
    except TypeError as err:  # a constructor argument of the wrong kind that the env did not check itself
        raise ValueError(f"env.kwargs of {env_id} are invalid ({str(err).splitlines()[0]})") from None


def check_fit(prepared: Prepared) -> tuple[Any, int]:
    """Build one env, check the algo fits its action space; returns (env, mask_dim)."""
    from gymnasium import spaces as gym_spaces

    from agents.masking import infer_mask_dim
    from agents.registry import AUTO_POLICY, check_action_space, resolve_policy_name

    env = make_env(prepared.env)
    has_masks = callable(getattr(env.unwrapped, "action_masks", None))
    check_action_space(prepared.spec, env.action_space, str(prepared.env["id"]), has_masks)
    if prepared.spec.env_ids is not None and str(prepared.env["id"]) not in prepared.spec.env_ids:
        env.close()
        raise ValueError(f"algo={prepared.spec.name} trains only on {list(prepared.spec.env_ids)}, "
                         f"not on {prepared.env['id']}")
    if prepared.spec.kind == "sb3" and prepared.algo.get("policy") == AUTO_POLICY:  # saved resolved in config.yaml
        prepared.algo["policy"] = resolve_policy_name(AUTO_POLICY, env.observation_space)
        prepared.cfg.algo.policy = prepared.algo["policy"]
    policy = str(prepared.algo.get("policy", ""))
    if prepared.spec.kind == "sb3" and policy in ("MlpPolicy", "CnnPolicy") and isinstance(env.observation_space, gym_spaces.Dict):
        from agents.registry import ALGOS

        env.close()
        fits = [n for n, s in ALGOS.items() if s.env_ids is not None and str(prepared.env["id"]) in s.env_ids]
        raise ValueError(
            f"algo={prepared.spec.name} does not fit {prepared.env['id']}: its observation space is a Dict "
            f"({sorted(env.observation_space.spaces)}), which algo.policy={policy} cannot read "
            f"(algo.policy=MultiInputPolicy or a flat observation option of the env can); algos that fit "
            f"{prepared.env['id']}: {fits}"
        )
    mask_dim = infer_mask_dim(env, prepared.algo.get("mask", "auto")) if prepared.spec.kind == "sb3" else 0
    if prepared.spec.kind == "sb3":  # before any folder: classes named in policy_kwargs import and are classes
        from agents.registry import resolve_policy_kwargs

        resolve_policy_kwargs(prepared.algo.get("policy_kwargs") or {})  # no env: its head_kwargs come at build
    wanted = prepared.env.get("reference_policy")
    if prepared.cfg.eval.reference and wanted:  # a misspelt reference is an error, not a silent substitute
        from offline.registry import available_policies

        valid = available_policies(str(prepared.env["id"]))
        names = [str(wanted)] if isinstance(wanted, str) else [str(n) for n in wanted]
        unknown = [n for n in names if n not in valid]
        if unknown:
            env.close()
            raise ValueError(f"env.reference_policy={wanted!r} is invalid: {unknown} not known for "
                             f"{prepared.env['id']}; valid policies: {valid} (or eval.reference=false)")
    return env, mask_dim


# --------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------


def make_run_dir(out: str, env_name: str, algo_name: str, seed: int) -> Path:
    """A fresh ``<out>/<env>__<algo>__<seed>__<time>[-<n>]`` folder (safe when parallel jobs race for it)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(out) / f"{env_name}__{algo_name}__{seed}__{stamp}"
    base.parent.mkdir(parents=True, exist_ok=True)
    run_dir, n = base, 1
    while True:
        try:
            run_dir.mkdir()
            return run_dir
        except FileExistsError:
            run_dir, n = base.with_name(f"{base.name}-{n}"), n + 1


def episode_bound(env_cfg: dict[str, Any]) -> Any:
    """The env's upper-bound function for env/competitive_ratio (``Problem.episode_bound``; None if none)."""
    import envs  # noqa: F401  (registers the suite's problems)
    from envs.problems import get_problem, load_attr

    path = get_problem(str(env_cfg["id"])).episode_bound
    if path is None:
        return None
    try:
        return load_attr(path)()
    except Exception as err:  # the bound is a nicety: never stop training for it
        log.warning("env/competitive_ratio not logged: the episode bound %s is not available (%s)", path, err)
        return None


def reference_summary(
    env_cfg: dict[str, Any], seeds: list[int], bound: Any = None, env: Any = None
) -> tuple[str | None, dict[str, float] | None]:
    """Evaluate the env's reference policy on ``seeds``; never raises.

    ``reference_policy`` is a name or a list of names (then the best of them on these seeds, e.g. UEC's
    best faithful baseline). If none is given or none runs, fall back to the best registered policy for
    the env; if there is none, log why and return (None, None).
    """
    from agents.callbacks import best_policy
    from offline.registry import available_policies

    env_id, wanted = str(env_cfg["id"]), env_cfg.get("reference_policy")
    own_env = env is None
    env = make_env(env_cfg) if own_env else env
    try:
        if wanted:
            names = [str(wanted)] if isinstance(wanted, str) else [str(n) for n in wanted]
            best = best_policy(env, env_id, names, seeds, bound)
            if best[0] is not None:
                if len(names) > 1:
                    log.info("reference: %s, the best of %s on the eval seeds", best[0], names)
                return best
            log.warning("reference policy %s for %s is not available", names, env_id)
        try:
            names = available_policies(env_id)
        except Exception as err:
            log.warning("no reference policy logged: no policies are registered for %s (%s)", env_id, err)
            return None, None
        best = best_policy(env, env_id, names, seeds, bound)
        if best[0] is None:
            log.warning("no reference policy logged: none of %s could run on %s", names, env_id)
        else:
            log.warning("using the best available registered policy %r as the reference instead", best[0])
        return best
    finally:
        if own_env:
            env.close()


def _hparams(prepared: Prepared) -> dict[str, Any]:
    flat: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}{key}.", value)
        else:
            flat[prefix[:-1]] = node if isinstance(node, (int, float, str, bool)) else str(node)

    walk("algo.", {k: v for k, v in prepared.algo.items()})
    walk("env.", prepared.env.get("kwargs") or {})
    flat.update(steps=prepared.steps, seed=int(prepared.cfg.seed), n_envs=int(prepared.cfg.n_envs))
    return flat


#: the keys a resumed run takes from the command line; everything else comes from the run's config.yaml.
RESUME_KEYS = ("resume", "steps", "progress", "device", "threads")


@dataclass
class Resume:
    """Where a resumed run continues: its folder and, for SB3 algos, the checkpoint and its step count."""

    run_dir: Path
    checkpoint: Path | None = None
    start_step: int = 0
    buffer: Path | None = None  # the replay buffer (arrays) saved with the checkpoint, if any
    reached: int = 0  # the furthest step the run had reached (its model.zip or newest checkpoint)


def _parsed_overrides(overrides: list[str] | None) -> list[tuple[str, Any]]:
    """(key, value) of command-line ``key=value`` overrides (``+``/``++`` prefixes dropped)."""
    if not overrides:
        return []
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return [(o.key_or_group.lstrip("+"), None if o.is_delete() else o.value()) for o in parsed]


def prepare_resume(cfg: DictConfig, overrides: list[str] | None = None) -> tuple[Prepared, Resume]:
    """The saved configuration of the run ``cfg.resume`` (plus ``steps``, ``progress``, ``device``, ``threads``
    from the command line) and where it continues. Raises ValueError for anything else on the command line,
    a folder that is not a run, an algo that cannot resume or a budget already reached."""
    from agents.loading import load_run_config

    if cfg.get("resume") is None or not str(cfg.resume).strip():
        raise ValueError("resume= is empty: expected a training run folder, e.g. resume=runs/uec-v0__sac__0__<time>")
    run_dir = Path(str(cfg.resume))
    if not (run_dir / "config.yaml").is_file():
        raise ValueError(f"resume={run_dir} is not a training run folder: it has no config.yaml")
    from agents.loading import check_no_symlinks

    check_no_symlinks(run_dir)  # a resume appends and replaces files there: never through a link out of the folder
    given = _parsed_overrides(overrides)
    refused = [key for key, _ in given if key not in RESUME_KEYS]
    if refused:
        raise ValueError(f"resume={run_dir} continues the run with its saved config.yaml; the command line may "
                         f"only set {list(RESUME_KEYS)}, not {refused}")
    try:
        saved = load_run_config(run_dir)
    except ValueError as err:
        raise ValueError(f"resume={run_dir}: {err}") from None
    for key, value in given:
        OmegaConf.update(saved, key, value, force_add=True)
    saved.resume = str(run_dir)
    if "env" in saved:  # the saved algo already holds the env's overrides (and the command line's on top)
        saved.env.algo_overrides = {}
    try:
        prepared = prepare(saved)
    except ValueError as err:
        raise ValueError(f"resume={run_dir}: its {run_dir / 'config.yaml'} is invalid: {err}") from None
    check_writable_folder("resume", run_dir)
    if prepared.spec.kind == "reference":
        raise ValueError(f"resume={run_dir} is a run of the non-learning policy {prepared.spec.name}: nothing to resume")
    if prepared.spec.kind == "custom":
        import inspect

        if "resume" not in inspect.signature(prepared.spec.load_target()).parameters:
            from agents.registry import ALGOS

            resumable = [n for n, a in ALGOS.items() if a.kind == "sb3" or (
                a.kind == "custom" and "resume" in inspect.signature(a.load_target()).parameters)]
            raise ValueError(f"algo={prepared.spec.name} cannot resume a run; algos that can: {resumable}")
        return prepared, Resume(run_dir)
    return prepared, choose_checkpoint(run_dir, prepared)


def _checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Every SB3 checkpoint of a run, newest first (the interrupt checkpoint first among equal steps)."""
    from agents.loading import _CHECKPOINT

    found = []
    for path in (run_dir / "checkpoints").glob("model_*_steps.zip"):
        match = _CHECKPOINT.match(path.name)
        if match:
            found.append((int(match.group(2)), bool(match.group(1)), path))
    return [(steps, path) for steps, _, path in sorted(found, reverse=True)]


def choose_checkpoint(run_dir: Path, prepared: Prepared) -> Resume:
    """The newest intact checkpoint of an SB3 run (and its replay buffer), falling back past damaged ones with a
    warning; refuses a budget the run already reached (its model.zip or any checkpoint) and old pickled buffers."""
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    from agents.loading import ModelFileError, UnsafeFileError, model_steps, read_model_data, replay_buffer_file

    found = _checkpoints(run_dir)
    if not found:
        raise ValueError(f"resume={run_dir} has no checkpoint to continue from (checkpoints/model_*_steps.zip)")
    final = model_steps(run_dir / "model.zip") if (run_dir / "model.zip").is_file() else None
    reached = max([found[0][0], final or 0])
    if prepared.steps <= reached:
        where = "model.zip" if final is not None and final >= found[0][0] else f"checkpoint {found[0][1].name}"
        raise ValueError(f"steps={prepared.steps} is invalid for resume={run_dir}: the run already reached step "
                         f"{reached} ({where}); expected steps > {reached}")
    off_policy = issubclass(prepared.spec.load_target(), OffPolicyAlgorithm)
    skipped: list[str] = []
    for start, checkpoint in found:
        try:
            read_model_data(checkpoint)
        except ModelFileError as err:
            skipped.append(f"{checkpoint.name} ({err})")
            continue
        buffer = None
        if off_policy:
            npz, pkl = replay_buffer_file(checkpoint), replay_buffer_file(checkpoint, ".pkl")
            if npz.is_file():
                problem = _buffer_problem(npz)
                if problem is not None:
                    skipped.append(f"{npz.name} ({problem})")
                    continue
                buffer = npz
            elif pkl.is_file():
                raise UnsafeFileError(
                    f"resume={run_dir}: the replay buffer of {checkpoint.name} is a pickle ({pkl.name}), which this "
                    "version never loads (it could run code); delete it to resume with an empty replay buffer")
        for line in skipped:
            log.warning("skipping a damaged checkpoint file: %s", line)
        if final is not None and final > start:  # never discard a newer model.zip: continue from it
            log.warning("model.zip (step %d) is newer than every intact checkpoint (newest: %s, step %d): resuming "
                        "from model.zip%s", final, checkpoint.name, start,
                        f" with the replay buffer of {checkpoint.name}" if buffer is not None else "")
            return Resume(run_dir, run_dir / "model.zip", final, buffer, reached)
        if skipped:
            log.warning("resuming from the previous intact checkpoint %s (step %d)", checkpoint.name, start)
        return Resume(run_dir, checkpoint, start, buffer, reached)
    raise ModelFileError(f"resume={run_dir}: no intact checkpoint to continue from; damaged: {'; '.join(skipped)}")


def _buffer_problem(path: Path) -> str | None:
    """Why a saved replay buffer cannot be read back (None when every array reads), without unpickling."""
    import zipfile


    try:
        with np.load(path, allow_pickle=False) as archive:
            for name in archive.files:
                archive[name]
            if not {"pos", "full"} <= set(archive.files):
                return "not a replay buffer file: no pos/full"
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as err:
        return f"truncated or damaged: {err}"
    return None


def run(cfg: DictConfig, overrides: list[str] | None = None) -> Path:
    """Validate, train (or evaluate a reference) and save everything into a fresh run folder.

    With ``resume=<run folder>`` continue that run in its own folder instead (:func:`prepare_resume`).
    Raises ValueError before any folder is made on bad input, and
    :class:`agents.callbacks.TrainingInterrupted` after a stop signal (once everything is saved).
    """
    from agents.callbacks import TrainingInterrupted

    resume: Resume | None = None
    if cfg.get("resume") is not None:  # an empty resume= is an error, not a fresh run
        prepared, resume = prepare_resume(cfg, overrides)
    else:
        prepared = prepare(cfg, overrides)
        check_writable_folder("out", str(prepared.cfg.out))
        check_output_path(str(prepared.cfg.out), publish=False)  # run folders never go among checked-in files
    top = prepared.cfg
    probe_env, mask_dim = check_fit(prepared)
    probe_env.close()
    if resume is not None and resume.checkpoint is not None:  # before anything runs: does the checkpoint fit the env?
        from agents.loading import _check_space, read_model_data

        data = read_model_data(resume.checkpoint)[1]
        try:
            for key in ("observation_space", "action_space"):
                _check_space(data.get(key), getattr(probe_env, key), key, str(resume.checkpoint))
        except ValueError as err:
            raise ValueError(f"resume={resume.run_dir}: its config.yaml names env {prepared.env['id']} "
                             f"({prepared.env.get('name')}), which does not fit its checkpoint: {err}") from None

    import torch

    torch.set_num_threads(int(top.threads))
    if resume is None:
        run_dir = make_run_dir(str(top.out), str(prepared.env["name"]), prepared.spec.name, int(top.seed))
        OmegaConf.save(top, run_dir / "config.yaml")
    else:
        run_dir = resume.run_dir
    file_handler = logging.FileHandler(run_dir / "train.log")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.getLogger().addHandler(file_handler)
    log.setLevel(logging.INFO)
    state = RunState()
    try:
        if resume is None:
            log.info("run folder %s (env=%s algo=%s seed=%s steps=%s)", run_dir, prepared.env["name"],
                     prepared.spec.name, top.seed, prepared.steps)
        else:
            where = f"{resume.checkpoint.name} (step {resume.start_step})" if resume.checkpoint else "its newest checkpoint"
            log.info("resuming %s from %s up to steps=%d", run_dir, where, prepared.steps)
        _dispatch(prepared, run_dir, mask_dim, state, resume)
    except BaseException as err:
        if resume is None and not state.started and not isinstance(err, TrainingInterrupted):
            logging.getLogger().removeHandler(file_handler)
            file_handler.close()
            shutil.rmtree(run_dir, ignore_errors=True)  # nothing was trained: leave no half-made run folder
            log.error("removed %s: the run failed before training started", run_dir)
        raise
    finally:
        logging.getLogger().removeHandler(file_handler)
        file_handler.close()
    if state.signum is not None:
        print(f"interrupted by {signal.Signals(state.signum).name}: {state.saved_message}", file=sys.stderr)
        print(f"continue with: python train.py resume={run_dir}", file=sys.stderr)
    print(f"run folder: {run_dir}")
    print(f"tensorboard --logdir {run_dir.parent}")
    if state.signum is not None:
        raise TrainingInterrupted(state.signum, run_dir)
    return run_dir


@dataclass
class RunState:
    """What the dispatch tells run(): whether training started, and the stop signal (if any) and saves."""

    started: bool = False
    signum: int | None = None
    saved_message: str = ""


def _dispatch(prepared: Prepared, run_dir: Path, mask_dim: int, state: RunState, resume: Resume | None) -> None:
    """Run the algo; records in ``state`` when training started and whether a signal stopped it."""
    from agents.callbacks import TrainingInterrupted

    top, spec = prepared.cfg, prepared.spec
    seeds = [int(top.eval.seed) + i for i in range(int(top.eval.episodes))]
    if spec.kind == "reference":
        _run_reference(prepared, run_dir, seeds)
        return
    if spec.kind == "custom":
        import torch

        trainer = spec.load_target()
        device = str(top.device)
        if device == "auto":  # contract 5 trainers get a concrete torch device
            device = "cuda" if torch.cuda.is_available() else "cpu"
        extra = {"resume": True} if resume is not None else {}
        state.started = True
        try:
            model_path = trainer(prepared.env, prepared.algo, run_dir=run_dir, seed=int(top.seed),
                                 steps=prepared.steps, device=device, **extra)
        except TrainingInterrupted as stop:
            state.signum, state.saved_message = stop.signum, f"saved {stop.saved} in {run_dir}"
            return
        log.info("model saved to %s", model_path)
        return
    _train_sb3(prepared, run_dir, mask_dim, seeds, state, resume)


def _run_reference(prepared: Prepared, run_dir: Path, seeds: list[int]) -> None:
    """A non-learning 'run': evaluate the policy on the eval seeds and log it at step 0."""
    from stable_baselines3.common.logger import configure

    from agents.callbacks import best_policy, evaluate
    from offline.registry import make_policy

    env = make_env(prepared.env)
    bound = episode_bound(prepared.env) if prepared.cfg.eval.bound else None
    wanted = prepared.algo["policy"]
    if isinstance(wanted, str):
        policy = make_policy(str(prepared.env["id"]), wanted, env, **(prepared.algo.get("policy_kwargs") or {}))
        summary = evaluate(env, policy, seeds, bound)
    else:  # a list: the best of them on the eval seeds; config.yaml then names the one chosen
        chosen, summary = best_policy(env, str(prepared.env["id"]), [str(n) for n in wanted], seeds, bound)
        if chosen is None or summary is None:
            raise ValueError(f"algo.policy={list(wanted)}: none of these policies runs on {prepared.env['id']}")
        log.info("reference: %s, the best of %s on the eval seeds", chosen, list(wanted))
        prepared.algo["policy"] = chosen
        saved = OmegaConf.load(run_dir / "config.yaml")
        saved.algo.policy = chosen
        OmegaConf.save(saved, run_dir / "config.yaml")
    env.close()
    logger = configure(str(run_dir), ["tensorboard", "csv"])
    for key, value in summary.items():
        logger.record(key if key.startswith("env/") else f"eval/{key}", value)
    logger.dump(0)
    logger.close()
    with (run_dir / "eval.csv").open("w") as handle:
        handle.write("step," + ",".join(summary) + "\n0," + ",".join(f"{v:.10g}" for v in summary.values()) + "\n")
    log.info("%s: mean reward %.4g over %d seeds", prepared.algo["policy"], summary["mean_reward"], len(seeds))


def _train_sb3(prepared: Prepared, run_dir: Path, mask_dim: int, seeds: list[int], state: RunState,
               resume: Resume | None = None) -> None:
    """Build (or, resuming, load) the SB3 model and learn; a stop signal ends it at the next env step with
    model.zip, an interrupt checkpoint and (off-policy) its replay buffer saved and the logs flushed."""
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import HParam
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from agents.callbacks import (
        GracefulInterrupt,
        PeriodicEvalCallback,
        SafeCheckpointCallback,
        StopOnInterrupt,
        configure_logger,
        drop_rows_after,
        save_checkpoint,
    )
    from agents.loading import (
        MODEL_FILE,
        SB3ModelPolicy,
        load_replay_buffer,
        load_sb3_model,
        model_steps,
        save_sb3_model,
    )
    top, spec, algo = prepared.cfg, prepared.spec, dict(prepared.algo)
    cls = spec.load_target()
    off_policy = issubclass(cls, OffPolicyAlgorithm)
    if is_maskable_ppo(cls):
        fast_distributions()
    n_envs = int(top.n_envs)
    start = resume.start_step if resume is not None else 0
    interrupt = GracefulInterrupt()
    with interrupt:  # from here on a signal stops training at the next env step, with everything saved
        eval_env = make_env(prepared.env)  # one instance for learner and reference: per-instance caches are shared
        vec_cls = SubprocVecEnv if top.vec_env == "subproc" else DummyVecEnv
        # a resumed run draws new training episodes (seed + steps done), not the first ones again
        if top.vec_env == "native":
            venv = make_native_vec_env(prepared.env, n_envs, int(top.seed) + start)
        else:
            venv = make_vec_env(lambda: make_env(prepared.env), n_envs=n_envs, seed=int(top.seed) + start,
                                vec_env_cls=vec_cls)
        if resume is not None and resume.checkpoint is not None:
            model = load_sb3_model(resume.checkpoint, cls, env=venv, algo_cfg=algo, device=str(top.device))
            if is_maskable_ppo(cls):
                speed_up_policy(model)
            if off_policy and resume.buffer is not None:
                load_replay_buffer(model.replay_buffer, resume.buffer)
                log.info("replay buffer of %d transitions loaded from %s", model.replay_buffer.size(), resume.buffer.name)
            elif off_policy:
                log.warning("%s has no replay buffer for %s: resuming with an empty one", run_dir,
                            resume.checkpoint.name)
            for name in ("eval.csv", "progress.csv"):  # one row per step: rows past the checkpoint move aside
                moved = drop_rows_after(run_dir / name, start)
                if moved:
                    log.warning("moved %d rows of %s past step %d (the checkpoint resumed from) to %s", moved, name,
                                start, f"{Path(name).stem}.superseded.csv")
        else:
            model = build_sb3_model(cls, algo, venv, eval_env, mask_dim, seed=int(top.seed), device=str(top.device))
        logger = configure_logger(run_dir, resume=resume is not None)
        model.set_logger(logger)
        logger.record("hparams", HParam(_hparams(prepared), {"eval/mean_reward": 0.0}),
                      exclude=("stdout", "log", "json", "csv"))

        reference_name, reference = (None, None)
        bound = episode_bound(prepared.env) if top.eval.bound else None
        if top.eval.reference:
            reference_name, reference = reference_summary(prepared.env, seeds, bound, env=eval_env)
            if reference is not None:
                log.info("reference %s: mean reward %.4g on %d eval seeds", reference_name,
                         reference["mean_reward"], len(seeds))

        eval_freq = int(top.eval.freq) or 10**12
        callbacks = CallbackList([
            SafeCheckpointCallback(max(int(top.checkpoint_freq) // n_envs, 1), run_dir / "checkpoints",
                                   save_replay_buffer=off_policy, root=run_dir),
            PeriodicEvalCallback(eval_env,
                                 lambda m: SB3ModelPolicy(m, name=spec.name, deterministic=True),
                                 seeds, eval_freq, run_dir / "eval.csv", reference, reference_name, bound),
            StopOnInterrupt(interrupt),
        ])
        state.started = True
        model.learn(total_timesteps=prepared.steps - start, callback=callbacks, log_interval=1,
                    progress_bar=bool(top.progress), reset_num_timesteps=resume is None, **learn_kwargs(model))
        saved = []
        prefix = "model_interrupted" if interrupt.requested else "model"
        checkpoint = run_dir / "checkpoints" / f"{prefix}_{model.num_timesteps}_steps.zip"
        if interrupt.requested or not checkpoint.is_file():  # the end is a checkpoint too: a later resume continues here
            written = save_checkpoint(model, checkpoint, off_policy, root=run_dir)
            saved += [str(p.relative_to(run_dir)) for p in written]
        existing = model_steps(run_dir / MODEL_FILE) if (run_dir / MODEL_FILE).is_file() else None
        if existing is not None and existing > model.num_timesteps:  # never replace a newer model with an older one
            log.warning("kept %s (step %d): it is newer than this model (step %d)", MODEL_FILE, existing,
                        model.num_timesteps)
        else:
            from agents.loading import check_inside

            save_sb3_model(model, check_inside(run_dir, run_dir / MODEL_FILE))
            saved.insert(0, MODEL_FILE)
        logger.close()  # flushes TensorBoard and progress.csv
        venv.close()
        if interrupt.requested:
            state.signum = interrupt.signum
            state.saved_message = f"stopped at step {model.num_timesteps}, saved {', '.join(saved)} in {run_dir}"
            log.warning("%s", state.saved_message)


def build_sb3_model(cls: type, algo: dict[str, Any], venv: Any, env: Any, mask_dim: int, *, seed: int,
                    device: str) -> Any:
    """A fresh SB3 model of ``cls`` from an algo config, as train.py builds it (``env``: one single env, for the
    policy kwargs). MaskablePPO: ``policy=auto`` picks MultiInputPolicy for a Dict observation, and
    ``batch_size`` is capped at the rollout's ``n_steps x n_envs`` (the defaults are sized for 64 envs)."""
    from agents.registry import resolve_policy_kwargs, resolve_policy_name

    kwargs = {k: v for k, v in algo.items() if k not in ("name", "kind", "default_steps", "mask", "policy",
                                                         "policy_kwargs")}
    if "mask_dim" in cls.__init__.__code__.co_varnames:
        kwargs["mask_dim"] = mask_dim
    if is_maskable_ppo(cls) and "n_steps" in kwargs and "batch_size" in kwargs:
        rollout = int(kwargs["n_steps"]) * int(venv.num_envs)
        if kwargs["batch_size"] > rollout:
            log.info("algo.batch_size=%d exceeds the rollout of n_steps x n_envs = %d transitions: using %d",
                     kwargs["batch_size"], rollout, rollout)
            kwargs["batch_size"] = rollout
    policy = resolve_policy_name(str(algo["policy"]), venv.observation_space)
    model = cls(policy, venv, seed=seed, device=device, verbose=0,
                policy_kwargs=resolve_policy_kwargs(algo.get("policy_kwargs") or {}, env), **kwargs)
    if is_maskable_ppo(cls):
        speed_up_policy(model)
    return model


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from agents.callbacks import TrainingInterrupted

    try:
        check_hydra_keys(HydraConfig.get())
        run(cfg, overrides=list(HydraConfig.get().overrides.task))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except TrainingInterrupted as stop:
        sys.exit(stop.exit_code)  # 130 SIGINT, 143 SIGTERM, 129 SIGHUP
    except KeyboardInterrupt:  # a second signal: aborted without saving
        sys.exit(130)


if __name__ == "__main__":
    # Run under the importable name ``edge_sched_gym.train``: the schemas and main() that launchers (joblib,
    # submitit) pickle for their worker processes are then importable there, not __main__'s copies.
    from edge_sched_gym import train

    train.main()
