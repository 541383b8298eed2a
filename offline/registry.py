"""One registry of policy names per environment id, like rl-baselines3-zoo's ALGOS.

Each problem's policies module (``Problem.policies`` of :mod:`envs.problems`: ``offline.uec``, ...)
registers its policies with :func:`register_policy`; the module is imported on first use so that asking
for UEC policies does not import the CoRaiS solver. Trained runs and shipped models are resolved by
``agents.loading.resolve_policy`` (offline never imports agents).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from envs.problems import get_problem
from offline.protocol import Policy

PolicyFactory = Callable[..., Policy]

_REGISTRY: dict[str, dict[str, PolicyFactory]] = {}


def register_policy(env_id: str, name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    """Decorator: register ``factory(env, **kwargs) -> Policy`` under ``name`` for ``env_id``."""

    def decorator(factory: PolicyFactory) -> PolicyFactory:
        table = _REGISTRY.setdefault(env_id, {})
        if name in table and table[name] is not factory:
            raise ValueError(f"policy {name!r} is already registered for {env_id}")
        table[name] = factory
        return factory

    return decorator


def _load(env_id: str) -> dict[str, PolicyFactory]:
    importlib.import_module(get_problem(env_id).policies)
    return _REGISTRY.get(env_id, {})


def available_policies(env_id: str) -> list[str]:
    """Names of the non-learning policies registered for ``env_id``."""
    return sorted(_load(env_id))


def make_policy(env_id: str, name: str, env: gym.Env, **kwargs: Any) -> Policy:
    """Create the policy ``name`` for ``env``; raises ValueError listing the valid names."""
    table = _load(env_id)
    if name not in table:
        raise ValueError(f"policy={name!r} is not known for {env_id}; valid policies: {sorted(table)}")
    return table[name](env, **kwargs)
