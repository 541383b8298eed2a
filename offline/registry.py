"""One registry of policy names per environment id, like rl-baselines3-zoo's ALGOS.

Each problem module (``offline.uec``, ``offline.corais``, ...) registers its policies with
:func:`register_policy`; the module is imported on first use so that asking for UEC policies does not
import the CoRaiS solver.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from offline.protocol import Policy

PolicyFactory = Callable[..., Policy]

#: env id -> module that registers that env's policies when imported.
PROBLEM_MODULES: dict[str, str] = {
    "UEC-v0": "offline.uec",
    "OINC-v0": "offline.oinc",
    "ASET-v0": "offline.aset",
    "CoRaiS-v0": "offline.corais",
}

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
    if env_id not in PROBLEM_MODULES:
        raise ValueError(f"env_id={env_id!r} has no policies; valid env ids: {sorted(PROBLEM_MODULES)}")
    importlib.import_module(PROBLEM_MODULES[env_id])
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


def resolve_policy(env_id: str, name_or_run: str, env: gym.Env, **kwargs: Any) -> Policy:
    """A registered policy name, or the path of a training run folder (loaded by ``agents.loading``)."""
    from pathlib import Path

    path = Path(name_or_run)
    if path.is_dir():
        from agents.loading import load_run_policy  # provided by the training code (agents/)

        return load_run_policy(path, env, **kwargs)
    return make_policy(env_id, name_or_run, env, **kwargs)
