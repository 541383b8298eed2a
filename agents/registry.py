"""One registry of algorithms (name → how to train it), like rl-baselines3-zoo's ``ALGOS``.

Three kinds:

* ``sb3``       an SB3 algorithm class (DiscreteSAC, MaskedDQN, MaskablePPO) built by train.py;
* ``custom``    a trainer function per contract 5 (``train(env_cfg, algo_cfg, *, run_dir, seed, steps,
                device) -> model path``) plus ``load_policy(run_dir, env)``, e.g. CoRaiS' REINFORCE;
* ``reference`` a non-learning policy from ``offline.registry`` that is only evaluated and logged
                (any ``conf/algo/<name>.yaml`` with ``kind: reference`` and ``policy: <name>``).

Each SB3 algorithm has a dataclass schema; its YAML (``conf/algo/<name>.yaml``) merged with the env's
``algo_overrides`` is checked against it, so a typo or a wrong type fails before anything runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from gymnasium import spaces
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

# --------------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------------


@dataclass
class SACConfig:
    """conf/algo/sac.yaml — :class:`agents.sac.DiscreteSAC` hyper-parameters."""

    name: str = "sac"
    kind: str = "sb3"
    default_steps: int = 30_000  # the budget used when `steps` is not given
    mask: str = "auto"  # auto: read the action mask from the observation tail if the env has one
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
    ent_coef: Any = "auto"
    ent_coef_init: float = 1.0
    target_entropy_ratio: float = 0.6
    target_update_interval: int = 1
    max_grad_norm: Any = None
    policy_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class DQNConfig:
    """conf/algo/dqn.yaml — :class:`agents.dqn.MaskedDQN` (SB3 DQN) hyper-parameters."""

    name: str = "dqn"
    kind: str = "sb3"
    default_steps: int = 30_000
    mask: str = "auto"
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
    policy_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class MaskablePPOConfig:
    """conf/algo/ppo_mask.yaml — sb3-contrib's MaskablePPO (masks from ``env.action_masks()``)."""

    name: str = "ppo_mask"
    kind: str = "sb3"
    default_steps: int = 30_000
    mask: str = "auto"
    policy: str = "MlpPolicy"
    learning_rate: float = 3e-4
    n_steps: int = 512
    batch_size: int = 64
    n_epochs: int = 10
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    policy_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReferenceConfig:
    """conf/algo/<policy>.yaml with ``kind: reference`` — evaluate a non-learning policy and log it."""

    name: str = "rescue"
    kind: str = "reference"
    policy: str = "rescue"
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
    schema: type | None
    action_spaces: tuple[type[spaces.Space], ...] | None  # None = the trainer decides
    loader: str | None = None  # custom trainers: "module:load_policy"
    needs_action_masks_method: bool = False
    env_ids: tuple[str, ...] | None = None  # custom trainers built for specific envs only

    def load_target(self) -> Any:
        return import_path(self.target)


ALGOS: dict[str, AlgoSpec] = {
    "sac": AlgoSpec("sac", "sb3", "agents.sac:DiscreteSAC", SACConfig, (spaces.Discrete, spaces.MultiDiscrete)),
    "dqn": AlgoSpec("dqn", "sb3", "agents.dqn:MaskedDQN", DQNConfig, (spaces.Discrete,)),
    "ppo_mask": AlgoSpec("ppo_mask", "sb3", "sb3_contrib:MaskablePPO", MaskablePPOConfig,
                         (spaces.Discrete, spaces.MultiDiscrete), needs_action_masks_method=True),
    "corais": AlgoSpec("corais", "custom", "agents.corais.trainer:train", None, None,
                       loader="agents.corais.trainer:load_policy", env_ids=("CoRaiS-v0",)),
    "corais_uec": AlgoSpec("corais_uec", "custom", "agents.uec.trainer:train", None, None,
                           loader="agents.uec.trainer:load_policy", env_ids=("UEC-v0",)),
}


def import_path(path: str) -> Any:
    """Import ``"package.module:attr"`` or ``"package.module.attr"``."""
    module_name, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"{path!r} is not an import path like 'package.module:Name'")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError as err:
        raise ValueError(f"{module_name!r} has no attribute {attr!r} (import path {path!r})") from err


def get_spec(algo_cfg: DictConfig | dict[str, Any]) -> AlgoSpec:
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


def validate_algo_config(algo_cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    """Check an algo config against its schema; returns it as a plain dict with defaults filled in."""
    spec = get_spec(algo_cfg)
    raw = algo_cfg if isinstance(algo_cfg, DictConfig) else OmegaConf.create(algo_cfg)
    if spec.schema is None:  # custom trainers own their schema
        return OmegaConf.to_container(raw, resolve=True)  # type: ignore[return-value]
    try:
        merged = OmegaConf.merge(OmegaConf.structured(spec.schema), raw)
    except OmegaConfBaseException as err:
        valid = sorted(spec.schema.__dataclass_fields__)
        raise ValueError(f"algo={spec.name}: invalid configuration ({err.msg}); valid keys: {valid}") from None
    return OmegaConf.to_container(merged, resolve=True)  # type: ignore[return-value]


def check_action_space(spec: AlgoSpec, action_space: spaces.Space, env_id: str, has_masks_method: bool) -> None:
    """Fail at once when the algorithm cannot act in this env, naming the algorithms that can."""
    fits = spec.action_spaces is None or isinstance(action_space, spec.action_spaces)
    if fits and spec.needs_action_masks_method and not has_masks_method:
        fits = False
    if fits:
        return
    valid = [
        name for name, other in ALGOS.items()
        if (other.env_ids is None or env_id in other.env_ids) and (other.action_spaces is None or (
            isinstance(action_space, other.action_spaces)
            and (has_masks_method or not other.needs_action_masks_method)
        ))
    ]
    raise ValueError(
        f"algo={spec.name} does not fit {env_id}: its action space is {action_space}, and {spec.name} "
        f"accepts {[s.__name__ for s in spec.action_spaces or ()]}"
        f"{' with an action_masks() method' if spec.needs_action_masks_method else ''}; "
        f"algos that fit {env_id}: {valid}"
    )


def resolve_policy_kwargs(policy_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Turn import-path strings in ``*_class`` / ``*_fn`` entries into objects (YAML can't hold classes)."""
    out = dict(policy_kwargs)
    for key, value in policy_kwargs.items():
        if isinstance(value, str) and (key.endswith("_class") or key.endswith("_fn")):
            out[key] = import_path(value)
    return out
