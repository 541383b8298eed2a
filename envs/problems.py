"""The one problem registry: every list of env ids in the suite derives from :data:`PROBLEMS`.

A :class:`Problem` record names, as import strings (so this module imports nothing heavy and nothing
from ``offline`` or ``agents``), everything the rest of the suite needs to know about a problem:

| field              | used by                                                                       |
|--------------------|-------------------------------------------------------------------------------|
| ``env_id``         | Gymnasium registration (``gym.make("UEC-v0")``)                              |
| ``entry_point``    | Gymnasium registration                                                        |
| ``config``         | the Hydra config ``edge_sched_gym/conf/env/<config>.yaml`` of train.py and evaluate.py       |
| ``presets``        | ``"module:attr"`` of the named scenarios the env accepts (``preset_names()``)  |
| ``policies``       | the module that registers the non-learning policies (``offline.registry``)    |
| ``evaluation``     | ``"module:attr"`` of the problem's evaluation hook (``offline.runner``)        |
| ``episode_bound``  | ``"module:attr"`` of a factory of an upper bound on an episode's return, for  |
|                    | the learning curves' ``env/competitive_ratio`` (``agents.callbacks``)         |
| ``ladder``         | ``"module:attr"`` of the env's ``offline.ladder_spec.LadderSpec`` (the        |
|                    | reference ladder, ``offline.ladder``); None: the env has no ladder            |

Adding a problem = one :func:`register_problem` call (here for the suite's own four) plus its folders
``envs/<p>/``, ``offline/<p>/``, ``edge_sched_gym/conf/env/<config>.yaml`` and ``tests/<p>/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import register, registry

__all__ = ["PROBLEMS", "Problem", "check_env_id", "get_problem", "load_attr", "make", "problem_for_config",
           "register_problem", "wrap"]


@dataclass(frozen=True)
class Problem:
    """What the suite knows about one problem (see the module docstring for who reads which field)."""

    env_id: str
    entry_point: str
    config: str
    policies: str
    evaluation: str | None = None
    episode_bound: str | None = None
    presets: str | None = None
    ladder: str | None = None
    vector_entry_point: str | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("env_id", "entry_point", "config", "policies"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Problem.{name}={value!r} is invalid: expected a non-empty string")
        if ":" not in self.entry_point:
            raise ValueError(f"Problem.entry_point={self.entry_point!r} is invalid: expected 'module:Class'")
        for name in ("evaluation", "episode_bound", "presets", "ladder"):
            value = getattr(self, name)
            if value is not None and ":" not in value:
                raise ValueError(f"Problem.{name}={value!r} is invalid: expected 'module:attr' or None")


    @property
    def package(self) -> str:
        """The problem's folder name: ``envs/<package>/``, ``offline/<package>/``, ``agents/<package>/``."""
        parts = self.entry_point.partition(":")[0].split(".")
        return parts[1] if len(parts) > 2 else parts[-1]

    def preset_names(self) -> list[str]:
        """Names of the env's named scenarios (imports the generator module)."""
        return [] if self.presets is None else list(load_attr(self.presets))


def load_attr(path: str) -> Any:
    """The object ``"package.module:attr"`` names (imported on demand)."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{path!r} is not an import path like 'package.module:attr'")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError as err:
        raise ValueError(f"{module_name!r} has no attribute {attr!r} (import path {path!r})") from err


#: env id -> problem, in registration order.
PROBLEMS: dict[str, Problem] = {}


def register_problem(problem: Problem) -> Problem:
    """Add ``problem`` to :data:`PROBLEMS` and register its env id with Gymnasium (idempotent)."""
    known = PROBLEMS.get(problem.env_id)
    if known is not None and known != problem:
        raise ValueError(f"env id {problem.env_id!r} is already registered with another Problem record")
    clash = [p.env_id for p in PROBLEMS.values() if p.config == problem.config and p.env_id != problem.env_id]
    if clash:
        raise ValueError(f"Problem.config={problem.config!r} is already used by {clash[0]}")
    PROBLEMS[problem.env_id] = problem
    if problem.env_id not in registry:
        register(
            id=problem.env_id,
            entry_point=problem.entry_point,
            vector_entry_point=problem.vector_entry_point,
            kwargs=dict(problem.kwargs),
        )
    return problem


def get_problem(env_id: str) -> Problem:
    """The record of ``env_id``; raises ValueError listing the registered ids."""
    if env_id not in PROBLEMS:
        raise ValueError(f"env id {env_id!r} is not a registered problem; valid env ids: {list(PROBLEMS)}")
    return PROBLEMS[env_id]


def check_env_id(env_id: object, where: str = "env.id") -> str:
    """``env_id`` when it is one of the problem registry's ids; ValueError naming ``where`` otherwise. Call it before
    ``gym.make`` on an id read from a file: Gymnasium imports ``module`` for an id ``module:UEC-v0``."""
    import envs  # noqa: F401  (registers the suite's problems)

    if not isinstance(env_id, str) or env_id not in PROBLEMS:
        raise ValueError(f"{where}={env_id!r} is not an env id of the problem registry (an id with a module part is "
                         f"never imported); valid env ids: {list(PROBLEMS)}")
    return env_id


def make(env_id: str, kwargs: Mapping[str, Any] | None = None, wrappers: Sequence[str] = ()) -> gym.Env:
    """``gym.make(env_id, **kwargs)`` then each wrapper (``"module:Class"``, applied in order).

    The env configs of train.py and evaluate.py (``edge_sched_gym/conf/env/<config>.yaml``) list wrappers this way, e.g.
    UEC's ``offline.uec.features:LPFeatures`` (RESCUE's value functions appended to the observation).
    """
    check_env_id(env_id)
    return wrap(gym.make(env_id, **dict(kwargs or {})), wrappers)


def wrap(env: gym.Env, wrappers: Sequence[str]) -> gym.Env:
    """``env`` inside each wrapper of ``wrappers`` (``"module:Class"`` of a gymnasium.Wrapper), in order; every
    name is checked against :mod:`envs.allowlist` before its module is imported."""
    from envs.allowlist import import_allowed

    for path in wrappers:
        wrapper = import_allowed(str(path), "env.wrappers entry")
        if not (isinstance(wrapper, type) and issubclass(wrapper, gym.Wrapper)):
            raise ValueError(f"wrappers entry {path!r} is invalid: expected a gymnasium.Wrapper subclass")
        env = wrapper(env)
    return env


def problem_for_config(config: str) -> Problem:
    """The record whose Hydra env config is ``edge_sched_gym/conf/env/<config>.yaml``."""
    for problem in PROBLEMS.values():
        if problem.config == config:
            return problem
    raise ValueError(f"env config {config!r} names no registered problem; valid: {[p.config for p in PROBLEMS.values()]}")
