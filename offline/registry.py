"""One registry of policy names per environment id, like rl-baselines3-zoo's ALGOS.

Each problem's policies module (``Problem.policies`` of :mod:`envs.problems`: ``offline.uec``, ...)
registers its policies with :func:`register_policy`; the module is imported on first use so that asking
for UEC policies does not import the CoRaiS solver.

:func:`make_policy` is the one way to name a policy. Names this table does not hold (shipped learned policies such
as ``corais_greedy``, ``pretrained:<name>``, a training run folder or a model file in one, observation ablations
such as ``zeroed-obs:<policy>``) go to the resolvers of :data:`RESOLVERS`, entry-point style: each is a
``"module:function"`` string imported on first use, so offline never imports agents (the import direction stays
envs <- offline <- agents), and an installation without the learners still resolves every non-learning name.
A third-party package adds its own with :func:`register_resolver`.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
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


#: ``resolve(env_id, name, env, **kwargs) -> Policy`` for names outside the table, as "module:function" strings imported
#: on demand, tried in order; each raises ValueError for a name it does not know. ``lister`` gives the names it
#: accepts for an env (the forms it also accepts, run folders and prefixes, are described in its error message).
#: ``labeller(name) -> str`` gives the name tables show for a name it resolves (``pretrained:<name>`` for a shipped
#: agent's folder, wherever it is installed).
RESOLVERS: list[dict[str, str]] = [
    {"resolve": "agents.loading:resolve_policy", "lister": "agents.loading:available_policies",
     "labeller": "agents.loading:policy_label"},
]


def register_resolver(resolve: str, lister: str | None = None, labeller: str | None = None) -> None:
    """Add a resolver (``"module:function"``; ``lister`` and ``labeller`` the same for its names and its table
    labels) after the built-in ones."""
    entry = {"resolve": resolve, **({"lister": lister} if lister else {}), **({"labeller": labeller} if labeller else {})}
    known = next((e for e in RESOLVERS if e["resolve"] == resolve), None)
    if known is None:
        RESOLVERS.append(entry)
    else:  # the same resolver again: idempotent, adding only what it did not name
        for key, value in entry.items():
            known.setdefault(key, value)


def _resolvers(key: str) -> list[Callable[..., Any]]:
    """The ``key`` function of every resolver whose package is installed (a missing package is skipped)."""
    from envs.problems import load_attr

    found = []
    for entry in RESOLVERS:
        if key not in entry:
            continue
        module = entry[key].partition(":")[0]
        try:
            if importlib.util.find_spec(module.partition(".")[0]) is None:
                continue
        except (ImportError, ValueError):
            continue
        found.append(load_attr(entry[key]))
    return found


def _load(env_id: str) -> dict[str, PolicyFactory]:
    importlib.import_module(get_problem(env_id).policies)
    return _REGISTRY.get(env_id, {})


def available_policies(env_id: str, learned: bool = False) -> list[str]:
    """Names of the non-learning policies registered for ``env_id``; ``learned=True`` adds the names the
    resolvers list (shipped learned policies such as ``corais_greedy``)."""
    names = set(_load(env_id))
    if learned:
        for lister in _resolvers("lister"):
            names.update(lister(env_id))
    return sorted(names)


def policy_label(name: str | Path) -> str:
    """The name an evaluation table or CSV row shows for the policy ``name``: a shipped agent as
    ``pretrained:<name>`` (the resolvers' labellers), a path inside the working directory relative to it (a run
    folder given as an absolute path), anything else unchanged. Pure naming: what is played does not change."""
    text = str(name)
    for labeller in _resolvers("labeller"):
        text = labeller(text)
    cwd = Path.cwd()
    parts = []
    for token in re.split(r"([=+:])", text):  # the tokens of ``oinc=<run>``, ``<run>+aret``, ``zeroed-obs:<run>``
        path = Path(token)
        if path.is_absolute() and path.exists() and path.resolve().is_relative_to(cwd.resolve()):
            token = str(path.resolve().relative_to(cwd.resolve())) or "."
        parts.append(token)
    return "".join(parts)


def make_policy(env_id: str, name: str | Path, env: gym.Env, **kwargs: Any) -> Policy:
    """Create the policy ``name`` for ``env``: a non-learning policy of this table, else whatever the resolvers of
    :data:`RESOLVERS` accept (a shipped learned policy, ``pretrained:<name>``, a run folder or model file, an
    ablation ``zeroed-obs:<policy>`` / ``shuffled-obs:<policy>``). Raises ValueError listing the valid names."""
    table = _load(env_id)
    if isinstance(name, str) and name in table:
        return table[name](env, **kwargs)
    resolvers = _resolvers("resolve")
    if not resolvers:
        raise ValueError(f"policy={str(name)!r} is not known for {env_id}; valid policies: {sorted(table)} (learned "
                         "policies, pretrained: names and run folders need the agents package)")
    errors = []
    for resolve in resolvers:
        try:
            return resolve(env_id, name, env, **kwargs)
        except ValueError as err:
            errors.append(err)
    if len(errors) == 1:
        raise errors[0]
    raise ValueError("; ".join(str(err) for err in errors))
