"""One way to name a policy: offline.registry.make_policy resolves every kind of name (issue 28, item 4).

Non-learning names come from offline's table; the rest (shipped learned policies, ``pretrained:<name>``, a run
folder or model file, observation ablations) from the resolvers of ``offline.registry.RESOLVERS``, which offline
names as strings and imports on demand (offline never imports agents: tests/test_house.py checks the imports).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from offline import registry
from offline.registry import available_policies, make_policy

PRETRAINED = "agents/pretrained/uec-v0-sac"


def _acts(policy, env: gym.Env, seed: int = 0) -> None:
    """The policy plays a few steps through the env (protocol: reset(env), act(obs, info))."""
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed)
    for _ in range(3):
        action = policy.act(obs, info)
        assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype).reshape(
            env.action_space.shape) if env.action_space.shape else int(action))
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break


@pytest.mark.parametrize(("env_id", "name"), [
    ("UEC-v0", "rescue"),  # non-learning (offline's table)
    ("UEC-v0", "pretrained:uec-v0-sac"),  # a shipped agent by name
    ("UEC-v0", PRETRAINED),  # a run folder
    ("UEC-v0", f"{PRETRAINED}/model.zip"),  # a model file in a run folder
    ("UEC-v0", "zeroed-obs:pretrained:uec-v0-sac"),  # an observation ablation of a learned policy
    ("UEC-v0", "shuffled-obs:rescue"),  # ... and of a non-learning one
    ("CoRaiS-v1", "corais_greedy"),  # a shipped learned policy (agents.corais registers it)
    ("OINC-v0", "liu"),
])
def test_registry__make_policy_resolves_every_kind_of_name(env_id: str, name: str) -> None:
    env = gym.make(env_id)
    try:
        _acts(make_policy(env_id, name, env), env)
    finally:
        env.close()


def test_registry__learned_names_are_listed_beside_the_non_learning_ones() -> None:
    assert "corais_greedy" not in available_policies("CoRaiS-v1")
    assert {"corais_greedy", "list_greedy"} <= set(available_policies("CoRaiS-v1", learned=True))


def test_registry__an_unknown_name_lists_the_valid_ones() -> None:
    env = gym.make("CoRaiS-v1")
    with pytest.raises(ValueError, match=r"policy='bogus' is not known for CoRaiS-v1.*corais_greedy"):
        make_policy("CoRaiS-v1", "bogus", env)


def test_registry__without_the_learners_non_learning_names_still_resolve(monkeypatch) -> None:
    """An installation without agents (no resolver found) keeps the table and says what the rest needs."""
    monkeypatch.setattr(registry, "RESOLVERS", [{"resolve": "no_such_package_xyz.loading:resolve_policy"}])
    env = gym.make("CoRaiS-v1")
    assert make_policy("CoRaiS-v1", "list_greedy", env) is not None
    with pytest.raises(ValueError, match="need the agents package"):
        make_policy("CoRaiS-v1", "corais_greedy", env)


def test_registry__resolvers_are_named_not_imported() -> None:
    """offline names its resolvers as "module:function" strings (entry-point style), never as imported objects."""
    assert all(isinstance(path, str) and ":" in path for entry in registry.RESOLVERS for path in entry.values())
    assert registry.RESOLVERS[0]["resolve"] == "agents.loading:resolve_policy"
    registry.register_resolver("agents.loading:resolve_policy", "agents.loading:available_policies")
    assert len(registry.RESOLVERS) == 1  # idempotent


def test_registry__labeller_names_table_rows_and_registration_stays_idempotent(monkeypatch) -> None:
    """The built-in resolver names its labeller; registering the same resolver again adds only missing keys, and
    policy_label goes through every labeller (a third party's too)."""
    assert registry.RESOLVERS[0]["labeller"] == "agents.loading:policy_label"
    monkeypatch.setattr(registry, "RESOLVERS", [dict(e) for e in registry.RESOLVERS])
    registry.register_resolver("agents.loading:resolve_policy")
    assert len(registry.RESOLVERS) == 1 and registry.RESOLVERS[0]["labeller"] == "agents.loading:policy_label"
    registry.register_resolver("json:loads", labeller="builtins:str")
    assert len(registry.RESOLVERS) == 2 and registry.RESOLVERS[1] == {"resolve": "json:loads", "labeller": "builtins:str"}
    assert registry.policy_label("lp_bid_price") == "lp_bid_price"
