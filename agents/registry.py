"""One registry of algorithms (name → how to train it), like rl-baselines3-zoo's ``ALGOS``.

Three kinds:

* ``sb3``       an SB3 algorithm class (DiscreteSAC, MaskedDQN, MaskablePPO) built by train.py;
* ``custom``    a trainer function per contract 5 (``train(env_cfg, algo_cfg, *, run_dir, seed, steps,
                device) -> model path``) plus ``load_policy(run_dir, env)``, e.g. CoRaiS' REINFORCE;
* ``reference`` a non-learning policy from ``offline.registry`` that is only evaluated and logged
                (any ``edge_sched_gym/conf/algo/<name>.yaml`` with ``kind: reference`` and ``policy: <name>``).

Every algorithm has a dataclass schema, the ONE source of its hyper-parameters' defaults and types.
:func:`register_configs` stores each in Hydra's ConfigStore as ``algo/<name>_schema``; a
``edge_sched_gym/conf/algo/<name>.yaml`` starts with ``defaults: [<name>_schema, _self_]`` and keeps only what differs
from the schema, so Hydra itself rejects unknown keys and wrong types. Ranges that a type cannot say
(``gamma`` in (0, 1], ``batch_size <= buffer_size``, ...) are checked by :func:`check_algo_ranges`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from gymnasium import spaces
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from envs.problems import load_attr
from offline.provenance import check_writable_folder  # noqa: F401  (re-exported: train.py, evaluate.py)

# --------------------------------------------------------------------------------------------------
# Schemas (Hydra structured configs)
# --------------------------------------------------------------------------------------------------


class Mask(str, Enum):
    """Where an SB3 learner reads the action mask (agents.masking.infer_mask_dim)."""

    auto = "auto"  # the observation's tail, when the env declares observation_ends_with_action_mask
    none = "none"  # no masking


@dataclass
class SACConfig:
    """edge_sched_gym/conf/algo/sac.yaml — :class:`agents.sac.DiscreteSAC` hyper-parameters."""

    name: str = "sac"
    kind: str = "sb3"
    default_steps: int = 30_000  # the budget used when `steps` is not given
    mask: Mask = Mask.auto  # auto: read the action mask from the observation tail if the env has one
    policy: str = "MlpPolicy"
    learning_rate: float = 3e-4
    buffer_size: int = 100_000
    learning_starts: int = 1_000
    batch_size: int = 128
    tau: float = 0.005
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    n_steps: int = 1
    ent_coef: Any = "auto"  # "auto" (learned temperature, starting at ent_coef_init) or a fixed float
    ent_coef_init: float = 1.0  # OINC Table I: initial temperature 1.0
    target_entropy_ratio: float = 0.6  # target entropy = ratio * log(#feasible actions), per state
    target_kl: float = 0.05  # instead, with a head that starts as a heuristic: target KL(pi || heuristic) in nats
    target_update_interval: int = 1
    max_grad_norm: float | None = None
    update_ratio: float | None = None  # gradient steps per env step; when set it replaces train_freq/gradient_steps
    learning_rate_final: float | None = None  # linear decay of the learning rate to this value over the run
    policy_kwargs: dict[str, Any] = field(default_factory=lambda: {"net_arch": [128, 128]})


@dataclass
class DQNConfig:
    """edge_sched_gym/conf/algo/dqn.yaml — :class:`agents.dqn.MaskedDQN` (SB3 DQN) hyper-parameters."""

    name: str = "dqn"
    kind: str = "sb3"
    default_steps: int = 30_000
    mask: Mask = Mask.auto
    policy: str = "MlpPolicy"
    learning_rate: float = 1e-4
    buffer_size: int = 100_000
    learning_starts: int = 1_000
    batch_size: int = 64
    tau: float = 1.0
    gamma: float = 0.99
    train_freq: int = 4
    gradient_steps: int = 1
    n_steps: int = 1
    target_update_interval: int = 1_000
    exploration_fraction: float = 0.3
    exploration_initial_eps: float = 1.0
    exploration_final_eps: float = 0.05
    max_grad_norm: float = 10.0
    update_ratio: float | None = None  # gradient steps per env step; when set it replaces train_freq/gradient_steps
    policy_kwargs: dict[str, Any] = field(default_factory=lambda: {"net_arch": [256, 256]})


@dataclass
class MaskablePPOConfig:
    """edge_sched_gym/conf/algo/ppo_mask.yaml — sb3-contrib's MaskablePPO (masks from ``env.action_masks()``)."""

    name: str = "ppo_mask"
    kind: str = "sb3"
    default_steps: int = 30_000
    mask: Mask = Mask.auto  # unused: MaskablePPO calls env.action_masks() itself
    policy: str = "auto"  # auto: MultiInputPolicy for a Dict observation (CoRaiS), else MlpPolicy
    learning_rate: float = 3e-4
    n_steps: int = 64  # per env: a rollout is n_steps x n_envs transitions (4096 at n_envs=64)
    batch_size: int = 1024  # minibatch; capped at the rollout's n_steps x n_envs
    n_epochs: int = 10
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    policy_kwargs: dict[str, Any] = field(default_factory=lambda: {"net_arch": [128, 128]})


@dataclass
class ReferenceConfig:
    """edge_sched_gym/conf/algo/<policy>.yaml with ``kind: reference`` — evaluate a non-learning policy and log it."""

    name: str = "???"  # the run folder's algo part
    kind: str = "reference"
    policy: Any = "???"  # a name registered in offline.registry for the env, or a list: the best of them
    default_steps: int = 0
    policy_kwargs: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlgoSpec:
    """How to train (or just run) one algorithm and which action spaces it accepts."""

    name: str
    kind: str  # sb3 | custom | reference
    target: str  # "module:attr" of the SB3 class or trainer function ("" for reference)
    schema: type | str  # the config dataclass, or its "module:attr" (custom trainers: imported on demand)
    action_spaces: tuple[type[spaces.Space], ...] | None  # None = the trainer decides
    loader: str | None = None  # custom trainers: "module:load_policy"
    needs_action_masks_method: bool = False
    #: action spaces on which a ``needs_action_masks_method`` algo also trains without masks (MaskablePPO on
    #: OINC/CoRaiS' MultiDiscrete: ``learn(use_masking=False)``, plain PPO)
    masks_optional_for: tuple[type[spaces.Space], ...] = ()
    env_ids: tuple[str, ...] | None = None  # custom trainers built for specific envs only

    def load_target(self) -> Any:
        return load_attr(self.target)  # the registry's own "module:attr" (code, not a file)

    @property
    def schema_class(self) -> type:
        """The config dataclass (imports a custom trainer's module the first time)."""
        return load_attr(self.schema) if isinstance(self.schema, str) else self.schema


ALGOS: dict[str, AlgoSpec] = {
    "sac": AlgoSpec("sac", "sb3", "agents.sac:DiscreteSAC", SACConfig, (spaces.Discrete, spaces.MultiDiscrete)),
    "dqn": AlgoSpec("dqn", "sb3", "agents.dqn:MaskedDQN", DQNConfig, (spaces.Discrete,)),
    "ppo_mask": AlgoSpec("ppo_mask", "sb3", "sb3_contrib:MaskablePPO", MaskablePPOConfig,
                         (spaces.Discrete, spaces.MultiDiscrete), needs_action_masks_method=True,
                         masks_optional_for=(spaces.MultiDiscrete,)),
    "corais": AlgoSpec("corais", "custom", "agents.corais.trainer:train", "agents.corais.trainer:TrainConfig", None,
                       loader="agents.corais.trainer:load_policy", env_ids=("CoRaiS-v0", "CoRaiS-v1")),
    "corais_pomo": AlgoSpec("corais_pomo", "custom", "agents.corais.pomo_train:train",
                            "agents.corais.pomo_train:TrainConfig", None,
                            loader="agents.corais.pomo_train:load_policy", env_ids=("CoRaiS-v1",)),
    "corais_uec": AlgoSpec("corais_uec", "custom", "agents.uec.trainer:train", "agents.uec.trainer:TrainConfig", None,
                           loader="agents.uec.trainer:load_policy", env_ids=("UEC-v0",)),
    "aset_dagger": AlgoSpec("aset_dagger", "custom", "agents.aset.dagger:train", "agents.aset.dagger:TrainConfig", None,
                            loader="agents.aset.dagger:load_policy", env_ids=("ASET-v0", "ASET-v1")),
    "oinc_dagger": AlgoSpec("oinc_dagger", "custom", "agents.oinc.dagger:train", "agents.oinc.dagger:TrainConfig", None,
                            loader="agents.oinc.prior:load_policy", env_ids=("OINC-v0",)),
    "oinc_prior": AlgoSpec("oinc_prior", "custom", "agents.oinc.prior:train", "agents.oinc.prior:TrainConfig", None,
                           loader="agents.oinc.prior:load_policy", env_ids=("OINC-v0",)),
}

#: ConfigStore name of an algo's schema: ``edge_sched_gym/conf/algo/<name>.yaml`` starts with ``defaults: [<name>_schema, _self_]``.
SCHEMA_SUFFIX = "_schema"


def register_configs() -> None:
    """Store every algo schema in Hydra's ConfigStore (group ``algo``); idempotent.

    ``algo/<name>_schema`` for each entry of :data:`ALGOS` and ``algo/reference_schema`` for the
    non-learning ``kind: reference`` configs.
    """
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for name, spec in ALGOS.items():
        store.store(group="algo", name=f"{name}{SCHEMA_SUFFIX}", node=spec.schema_class)
    store.store(group="algo", name=f"reference{SCHEMA_SUFFIX}", node=ReferenceConfig)


def import_path(path: str, where: str = "class") -> Any:
    """Import ``"package.module:attr"`` or ``"package.module.attr"`` (YAML writes classes this way), a name a config
    or a file gives: only after :mod:`envs.allowlist` accepted it (:class:`envs.allowlist.NotAllowedError`, a
    ValueError naming ``where``, otherwise; nothing is imported then)."""
    from envs.allowlist import import_allowed

    return import_allowed(path, where)


def get_spec(algo_cfg: DictConfig | Mapping[str, Any]) -> AlgoSpec:
    """The spec of an algo config; ``kind: reference`` configs get a generic reference spec."""
    name = algo_cfg.get("name")
    if algo_cfg.get("kind") == "reference":
        return AlgoSpec(str(name), "reference", "", ReferenceConfig, None)
    if name not in ALGOS:
        raise ValueError(
            f"algo={name!r} is not a known algorithm; valid algos: {sorted(ALGOS)} "
            "or any non-learning policy config with `kind: reference`"
        )
    return ALGOS[str(name)]


def validate_algo_config(algo_cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Check an algo config against its schema and ranges; returns a plain dict with defaults filled in.

    Raises ValueError naming the key and the allowed values.
    """
    spec = get_spec(algo_cfg)
    schema = spec.schema_class
    raw = algo_cfg if isinstance(algo_cfg, DictConfig) else OmegaConf.create(dict(algo_cfg))
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), raw)
        algo = OmegaConf.to_container(merged, resolve=True, throw_on_missing=True, enum_to_str=True)
    except OmegaConfBaseException as err:
        key = f" at algo.{err.full_key}" if getattr(err, "full_key", None) else ""
        valid = sorted(schema.__dataclass_fields__)
        raise ValueError(f"algo={spec.name}: invalid configuration{key} ({str(err.msg).splitlines()[0]}); valid keys: {valid}") from None
    assert isinstance(algo, dict)
    check_algo_ranges(algo)
    if isinstance(algo.get("policy_kwargs"), Mapping):  # a preset name or head class must exist
        resolve_policy_kwargs({k: algo["policy_kwargs"].get(k) for k in ("net_arch", "head")})
    if hasattr(schema, "from_dict"):  # a custom trainer's own checks (e.g. CoRaiS' baseline names)
        schema.from_dict(algo)
    return algo


# --------------------------------------------------------------------------------------------------
# Range checks (what a type annotation cannot say)
# --------------------------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: (test, allowed values) by key; :func:`check_ranges` applies the ones whose key is in the config.
Rule = tuple[Callable[[Any], bool], str]
POSITIVE: Rule = (lambda v: _number(v) and v > 0, "a finite number > 0")
NON_NEGATIVE: Rule = (lambda v: _number(v) and v >= 0, "a finite number >= 0")
UNIT: Rule = (lambda v: _number(v) and 0 < v <= 1, "a number in (0, 1]")
PROBABILITY: Rule = (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]")
COUNT: Rule = (lambda v: _integer(v) and v >= 1, "an integer >= 1")
#: every seed key (train.py's seed and eval.seed, evaluate.py's seed) has this one range: numpy's legacy seeding,
#: which SB3 uses, takes 32-bit seeds.
SEED_MAX = 2**32 - 1
SEED: Rule = (lambda v: _integer(v) and 0 <= v <= SEED_MAX, "an integer in [0, 2**32 - 1] (0..4294967295)")
NATURAL: Rule = (lambda v: _integer(v) and v >= 0, "an integer >= 0")


def bounded(low: int, high: int, what: str = "") -> Rule:
    """An integer in ``[low, high]``: size keys get an upper bound so that ``n_envs=10**20`` is refused before
    anything is allocated (``what`` says what the bound guards)."""
    note = f" ({what})" if what else ""
    return (lambda v: _integer(v) and low <= v <= high, f"an integer in [{low}, {high:_}]{note}")


#: upper bounds of the size keys, far above any run of this suite, well below an allocation that cannot succeed.
N_ENVS_MAX = 4096
STEPS_MAX = 10**12
BUFFER_MAX = 10**8
BATCH_MAX = 10**7
EPISODES_MAX = 10**6
#: n_envs and the like (envs built at once), total timesteps, replay buffer and batch sizes, instances/episodes.
N_ENVS: Rule = bounded(1, N_ENVS_MAX, "envs built at once")
STEPS: Rule = bounded(0, STEPS_MAX, "env steps")
BUFFER: Rule = bounded(1, BUFFER_MAX, "transitions held in memory")
BATCH: Rule = bounded(1, BATCH_MAX, "transitions per batch")
EPISODES: Rule = bounded(1, EPISODES_MAX, "played one after another")
OPTIONAL_POSITIVE: Rule = (lambda v: v is None or (_number(v) and v > 0), "null or a finite number > 0")


def _ent_coef(value: Any) -> bool:
    if isinstance(value, str):
        return value == "auto" or (value.startswith("auto_") and _number(_float(value[5:])) and _float(value[5:]) > 0)
    return _number(value) and value >= 0


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


ALGO_RULES: dict[str, Rule] = {
    "default_steps": STEPS,
    "learning_rate": POSITIVE,
    "lr": POSITIVE,
    "lr_final": OPTIONAL_POSITIVE,
    "gamma": UNIT,
    "tau": UNIT,
    "buffer_size": BUFFER,
    "batch_size": BATCH,
    "learning_starts": NATURAL,
    "train_freq": COUNT,
    "gradient_steps": (lambda v: _integer(v) and (v >= 1 or v == -1), "an integer >= 1, or -1 (one per env step)"),
    "n_steps": BATCH,
    "n_epochs": COUNT,
    "target_update_interval": COUNT,
    "exploration_fraction": PROBABILITY,
    "exploration_initial_eps": PROBABILITY,
    "exploration_final_eps": PROBABILITY,
    "max_grad_norm": OPTIONAL_POSITIVE,
    "learning_rate_final": OPTIONAL_POSITIVE,
    "update_ratio": (lambda v: v is None or (_number(v) and v >= 1 / 16),
                     "null or a number >= 0.0625 (gradient steps per env step)"),
    "gae_lambda": PROBABILITY,
    "clip_range": POSITIVE,
    "vf_coef": NON_NEGATIVE,
    "ent_coef": (_ent_coef, "'auto', 'auto_<initial value > 0>' or a finite number >= 0"),
    "ent_coef_init": POSITIVE,
    "target_entropy_ratio": UNIT,
    "target_kl": POSITIVE,
    "grad_clip": POSITIVE,
    "max_minutes": POSITIVE,
    "entropy_coef": NON_NEGATIVE,
    # the custom trainers' (their from_dict checks the rest, e.g. corais_uec's samples >= 2)
    "samples": BATCH,
    "seeds_per_batch": BATCH,
    "greedy_phase": PROBABILITY,
    "eval_every": COUNT,
    "eval_instances": EPISODES,
    "eval_episodes": EPISODES,
    "eval_time_limit": POSITIVE,
    "eval_seed": SEED,
    "checkpoint_every": COUNT,
}


def check_ranges(cfg: Mapping[str, Any], rules: Mapping[str, Rule], prefix: str = "") -> None:
    """Raise ValueError ``<prefix><key>=<value> is invalid: expected <allowed>`` for the first bad key."""
    for key, (test, allowed) in rules.items():
        head, _, rest = key.partition(".")
        node: Any = cfg
        for part in (head, *([rest] if rest else [])):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            if not test(node):
                raise ValueError(f"{prefix}{key}={node!r} is invalid: expected {allowed}")


def check_algo_ranges(algo: Mapping[str, Any]) -> None:
    """:data:`ALGO_RULES` on an algo config, plus ``1 <= batch_size <= buffer_size`` and an exploration rate
    that decays (``exploration_final_eps <= exploration_initial_eps``)."""
    check_ranges(algo, ALGO_RULES, prefix="algo.")
    final, initial = algo.get("exploration_final_eps"), algo.get("exploration_initial_eps")
    if final is not None and initial is not None and final > initial:
        raise ValueError(f"algo.exploration_final_eps={final} is invalid: expected a number in [0, "
                         f"algo.exploration_initial_eps={initial}]")
    if "buffer_size" in algo and "batch_size" in algo and algo["batch_size"] > algo["buffer_size"]:
        raise ValueError(
            f"algo.batch_size={algo['batch_size']} is invalid: expected 1 <= batch_size <= "
            f"algo.buffer_size={algo['buffer_size']}"
        )


#: keyword arguments gym.make consumes itself (not the env's constructor)
GYM_MAKE_KWARGS = ("render_mode", "max_episode_steps", "disable_env_checker")


def check_env_kwargs(env_id: str, kwargs: Mapping[str, Any] | None, key: str = "env.kwargs") -> None:
    """Raise ValueError naming an ``env.kwargs`` entry the env's constructor does not take, listing the accepted
    ones (before any env is made; an unknown id is left to the caller's own error)."""
    import inspect

    import gymnasium as gym

    import envs  # noqa: F401  (registers the suite's problems)

    if not kwargs:
        return
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"{key}={kwargs!r} is invalid: expected a mapping of constructor arguments of {env_id}")
    mode = kwargs.get("render_mode")
    if mode is not None and not isinstance(mode, str):  # gym.make itself fails on it with a raw AttributeError
        raise ValueError(f"{key}.render_mode={mode!r} is invalid: expected None or a render mode name, e.g. 'ansi'")
    from envs.problems import PROBLEMS

    if str(env_id) not in PROBLEMS:  # gym.spec("module:id") would import module: the caller refuses the id
        return
    try:
        entry = gym.spec(str(env_id)).entry_point
        target = load_attr(entry) if isinstance(entry, str) else entry
        params = inspect.signature(target).parameters
    except Exception:  # an unknown id or an entry point without a signature: the env reports it itself
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    accepted = sorted({*(n for n, p in params.items() if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                                     inspect.Parameter.KEYWORD_ONLY)),
                       *GYM_MAKE_KWARGS})
    unknown = sorted(str(k) for k in kwargs if str(k) not in accepted)
    if unknown:
        raise ValueError(f"{key}.{unknown[0]} is not an argument of {env_id}"
                         f"{f' (nor {unknown[1:]})' if len(unknown) > 1 else ''}; accepted {key}: {accepted}")


def check_action_space(spec: AlgoSpec, action_space: spaces.Space, env_id: str, has_masks_method: bool) -> None:
    """Fail at once when the algorithm cannot act in this env, naming the algorithms that can."""
    fits = spec.action_spaces is None or isinstance(action_space, spec.action_spaces)
    if fits and not has_masks_method and needs_masks(spec, action_space):
        fits = False
    if fits:
        return
    valid = [
        name for name, other in ALGOS.items()
        if (other.env_ids is None or env_id in other.env_ids) and (other.action_spaces is None or (
            isinstance(action_space, other.action_spaces)
            and (has_masks_method or not needs_masks(other, action_space))
        ))
    ]
    raise ValueError(
        f"algo={spec.name} does not fit {env_id}: its action space is {action_space}, and {spec.name} "
        f"accepts {[s.__name__ for s in spec.action_spaces or ()]}"
        f"{' with an action_masks() method' if needs_masks(spec, action_space) else ''}; "
        f"algos that fit {env_id}: {valid}"
    )


def needs_masks(spec: AlgoSpec, action_space: spaces.Space) -> bool:
    """Whether ``spec`` trains on ``action_space`` only with an env ``action_masks()`` method."""
    return spec.needs_action_masks_method and not isinstance(action_space, spec.masks_optional_for)


#: SB3 policy names an ``algo.policy=auto`` resolves to, by observation space
AUTO_POLICY = "auto"


def resolve_policy_name(policy: str, observation_space: spaces.Space) -> str:
    """``auto`` → ``MultiInputPolicy`` for a Dict observation space, else ``MlpPolicy``; other names unchanged."""
    if policy != AUTO_POLICY:
        return policy
    return "MultiInputPolicy" if isinstance(observation_space, spaces.Dict) else "MlpPolicy"


#: Network-size presets for ``policy_kwargs.net_arch`` (hidden layers of actor and critics), e.g.
#: ``algo.policy_kwargs.net_arch=small``; ``oinc_paper`` is OINC's Table I (1024-512).
NET_ARCH_PRESETS: dict[str, list[int]] = {
    "tiny": [64, 64],
    "small": [128, 128],
    "medium": [256, 256],
    "large": [512, 512],
    "oinc_paper": [1024, 512],
}


def resolve_policy_kwargs(policy_kwargs: dict[str, Any], env: Any = None) -> dict[str, Any]:
    """Turn import-path strings in ``*_class`` / ``*_fn`` entries into objects (YAML can't hold classes), a
    :data:`NET_ARCH_PRESETS` name in ``net_arch`` into its layers, and, for a ``head`` whose class has
    ``kwargs_for_env(env)`` (e.g. the UEC per-action scorer), fill ``head_kwargs`` from ``env``."""
    out = dict(policy_kwargs)
    head = policy_kwargs.get("head")
    if head is not None:
        head_class = import_path(head, "algo.policy_kwargs.head") if isinstance(head, str) else head
        from_env = getattr(head_class, "kwargs_for_env", None)
        if env is not None and from_env is not None:
            out["head_kwargs"] = {**from_env(env), **(policy_kwargs.get("head_kwargs") or {})}
    arch = policy_kwargs.get("net_arch")
    if isinstance(arch, str):
        if arch not in NET_ARCH_PRESETS:
            raise ValueError(f"algo.policy_kwargs.net_arch={arch!r} is invalid: expected a list of layer sizes or "
                             f"one of {list(NET_ARCH_PRESETS)}")
        out["net_arch"] = list(NET_ARCH_PRESETS[arch])
    for key, value in policy_kwargs.items():
        if isinstance(value, str) and (key.endswith("_class") or key.endswith("_fn")):
            out[key] = import_path(value, f"algo.policy_kwargs.{key}")  # allow-listed names only
            if key.endswith("_class") and not isinstance(out[key], type):
                raise ValueError(f"algo.policy_kwargs.{key}={value!r} is invalid: it names "
                                 f"{type(out[key]).__name__} {out[key]!r}, not a class")
            if not callable(out[key]):
                raise ValueError(f"algo.policy_kwargs.{key}={value!r} is invalid: expected a class or function")
    return out

