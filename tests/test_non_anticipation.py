"""Non-anticipation is a contract (offline/protocol.py): no policy that does not declare ``clairvoyant = True``
may reach the episode's future (every registered non-learning policy and every shipped learner is checked).

Proof by experiment, per env: two episodes that share their past and differ in their future (the same reset
seed; from decision ``m`` on, the env draws its exogenous randomness from another stream). Every registered
non-clairvoyant policy, reset with the same seed, must make the same decisions 0..m in both: decision m is the
last one taken before the episodes differ. The harness itself is checked: a policy that reads the future (the
clairvoyant references, and a peeking policy written here) does differ, and the view refuses it the future.
CoRaiS episodes are one dispatch each (no future inside an episode); the test checks that and the view.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from envs.aset.env import ASETEnvV1
from envs.common.clairvoyance import episode_draws
from envs.oinc.env import OINCEnv
from envs.uec.env import UECEnv
from offline.protocol import PolicyView, is_clairvoyant, policy_env, policy_seed_for, run_episode
from offline.registry import available_policies, make_policy

pytestmark = pytest.mark.filterwarnings("ignore:.*is out of date.*:DeprecationWarning")

#: Decision index from which the two episodes differ (their last shared decision).
SPLIT = 6
#: Reset seeds of the episode pairs.
SEEDS = (3, 11)
#: Seed of the other future (the twin of every episode)
FUTURE_SEED = 10_007


class SplicedUEC(UECEnv):
    """UEC-v0 whose arrivals after the ``split``-th and the durations from it on come from another stream."""

    def __init__(self, split: int, future_seed: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.split, self.future_seed = split, future_seed

    def _draw_arrivals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        slots, devices, u = super()._draw_arrivals()
        if self.future_seed is None or slots.size <= self.split + 1:
            return slots, devices, u
        rng = np.random.default_rng(self.future_seed)
        inst, last = self.instance, int(slots[self.split])
        draw = rng.random(inst.horizon)
        device = (draw[:, None] >= self._arrival_cdf).sum(axis=1)
        later = np.flatnonzero(device < inst.num_devices)
        later = later[later > last]
        slots = np.concatenate([slots[: self.split + 1], later])
        devices = np.concatenate([devices[: self.split + 1], device[later]])
        u = np.concatenate([u[: self.split], rng.random(slots.size - self.split)])  # arrival split's duration too
        return slots, devices, u


class SplicedOINC(OINCEnv):
    """OINC-v0 whose exogenous draws of slots after ``split`` come from another episode's draws."""

    def __init__(self, split: int, future_seed: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.split, self.future_seed = split, future_seed

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = super().reset(seed=seed, options=options)
        if self.future_seed is not None:
            other = self.scenario.draw_episode(self.instance, np.random.default_rng(self.future_seed))
            for name in ("data_bits", "cycles", "drift_u", "job_cycles", "job_slack_s"):
                getattr(self._draws, name)[self.split + 1 :] = getattr(other, name)[self.split + 1 :]
        return obs, info


class SplicedASET(ASETEnvV1):
    """ASET-v1 whose windows from ``split`` on draw arrivals and choices from other streams. A plain copy of the
    env switches too (it holds the real future: a clairvoyant reference copying the env must see the twin's);
    a ``fork`` does not (it has redrawn its streams: what a non-anticipative rollout simulates)."""

    def __init__(self, split: int, future_seed: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.split, self.future_seed = split, future_seed

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        out = super().reset(seed=seed, options=options)
        self._realised_stream = self._arrival_rng  # a deepcopy keeps this identity, a fork replaces the stream
        return out

    def step(self, action: Any):
        if (self.future_seed is not None and self.state.window == self.split
                and self._arrival_rng is self._realised_stream):
            self._arrival_rng = np.random.default_rng(self.future_seed)
            self._choice_rng = np.random.default_rng(self.future_seed + 1)
        return super().step(action)


SPLICED = {"UEC-v0": (SplicedUEC, {"scenario": "paper"}), "OINC-v0": (SplicedOINC, {}),
           "ASET-v1": (SplicedASET, {})}
#: Per-env settings that keep a decision cheap (the contract does not depend on the size).
POLICY_KWARGS = {"ASET-v1": {"lookahead_oracle": {"horizon": 3}, "clairvoyant_beam": {"width": 1}}}


_ENVS: dict[tuple[str, int | None], gym.Env] = {}


def _spliced(env_id: str, future_seed: int | None) -> gym.Env:
    """One env per (env, future); kept, so that the policies' per-instance tables (RESCUE's LP) are built once."""
    if (env_id, future_seed) not in _ENVS:
        cls, kwargs = SPLICED[env_id]
        env = _ENVS[env_id, future_seed] = cls(SPLIT, future_seed, **kwargs)
        if env_id == "UEC-v0" and future_seed is not None:  # the same instance object: its LP is solved once
            env._set_instance(_spliced(env_id, None).instance)
    return _ENVS[env_id, future_seed]


def decisions(env: gym.Env, policy: Any, seed: int, count: int) -> list[Any]:
    """The first ``count`` actions of ``policy`` on ``env`` reset with ``seed`` (as run_episode hands it the env)."""
    obs, info = env.reset(seed=seed)
    policy.reset(policy_env(env, policy), seed=policy_seed_for(seed))
    actions = []
    for _ in range(count):
        action = policy.act(obs, info)
        actions.append(np.asarray(action).tolist())
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return actions


def shared_past_decisions(env_id: str, name: str, seed: int) -> tuple[list[Any], list[Any]]:
    """Decisions 0..SPLIT of ``name`` on the episode and on its twin with another future."""
    runs = []
    for future_seed in (None, FUTURE_SEED):
        env = _spliced(env_id, future_seed)
        policy = make_policy(env_id, name, env, **POLICY_KWARGS.get(env_id, {}).get(name, {}))
        runs.append(decisions(env, policy, seed, SPLIT + 1))
    return runs[0], runs[1]


def _policies(env_id: str, clairvoyant: bool) -> list[str]:
    env = _spliced(env_id, None)
    env.reset(seed=0)
    from agents import pretrained

    shipped = [f"pretrained:{n}" for n, meta in pretrained.available().items() if meta.get("env_id") == env_id]
    names = [n for n in [*available_policies(env_id, learned=True), *shipped]
             if is_clairvoyant(make_policy(env_id, n, env, **POLICY_KWARGS.get(env_id, {}).get(n, {}))) == clairvoyant]
    return names


def test_the_twins_share_their_past_and_differ_in_their_future() -> None:
    """The harness: the realised draws agree before the split and differ after it."""
    for env_id in ("UEC-v0", "OINC-v0"):
        a, b = _spliced(env_id, None), _spliced(env_id, 99)
        a.reset(seed=5)
        b.reset(seed=5)
        if env_id == "UEC-v0":
            (sa, da, ua), (sb, db, ub) = episode_draws(a), episode_draws(b)
            assert np.array_equal(sa[: SPLIT + 1], sb[: SPLIT + 1]) and np.array_equal(da[: SPLIT + 1], db[: SPLIT + 1])
            assert np.array_equal(ua[:SPLIT], ub[:SPLIT]) and not np.array_equal(ua[SPLIT:SPLIT + 2], ub[SPLIT:SPLIT + 2])
        else:
            wa, wb = episode_draws(a), episode_draws(b)
            assert np.array_equal(wa.cycles[: SPLIT + 1], wb.cycles[: SPLIT + 1])
            assert not np.array_equal(wa.cycles[SPLIT + 1 :], wb.cycles[SPLIT + 1 :])


@pytest.mark.parametrize("env_id", ["UEC-v0", "OINC-v0", "ASET-v1"])
def test_every_non_clairvoyant_policy_decides_the_same_until_the_futures_differ(env_id: str) -> None:
    names = _policies(env_id, clairvoyant=False)
    assert len(names) >= 5, names
    reached = 0
    for name in names:
        for seed in SEEDS:
            first, twin = shared_past_decisions(env_id, name, seed)
            reached += len(first) == SPLIT + 1  # an ASET episode may end (success below theta) before the split
            assert first == twin, f"{env_id} {name} (seed {seed}) decided differently before the futures differed"
    assert reached >= len(names), f"only {reached} of {2 * len(names)} episodes reached the split: pick other seeds"


def test_the_harness_catches_policies_that_read_the_future() -> None:
    """ASET's clairvoyant references declare it; the lookahead oracle (it simulates copies of the env, so the real
    arrivals ahead) decides differently on the twin for some seed."""
    assert {"lookahead_oracle", "clairvoyant_beam", "best_static_hindsight"} <= set(_policies("ASET-v1", True))
    assert any(a != b for a, b in (shared_past_decisions("ASET-v1", "lookahead_oracle", s) for s in (*SEEDS, 21)))


class PeekingUEC:
    """Accepts an arrival on the first free SSP only if the *next* arrival is of an even device: its decisions depend on the future. Without ``clairvoyant = True`` the view refuses it the draws."""

    name = "peeking"

    def __init__(self, clairvoyant: bool) -> None:
        self.clairvoyant = clairvoyant

    def reset(self, env: Any, seed: int | None = None) -> None:
        from envs.common.clairvoyance import episode_draws

        self._slots, self._devices = episode_draws(env)[:2]
        self._i = 0

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        i, self._i = self._i, self._i + 1
        nxt = i + 1 < self._slots.size and self._devices[i + 1] % 2 == 0
        free = np.flatnonzero(info["action_mask"][1:])
        return int(1 + free[0]) if nxt and free.size else 0


def test_a_peeking_policy_is_refused_the_future_and_caught_when_it_declares_it() -> None:
    env = _spliced("UEC-v0", None)
    with pytest.raises(TypeError, match="not a policy's view"):
        run_episode(env, PeekingUEC(clairvoyant=False), seed=3)
    caught = False
    for seed in (*SEEDS, 21, 22, 23):
        runs = []
        for future_seed in (None, FUTURE_SEED):
            twin = _spliced("UEC-v0", future_seed)
            runs.append(decisions(twin, PeekingUEC(clairvoyant=True), seed, SPLIT + 1))
        caught |= runs[0] != runs[1]
    assert caught


@pytest.mark.parametrize("attribute", ["episode_draws", "_episode_draws", "np_random", "_state", "_arrival_slots",
                                       "_duration_u", "_obs_table"])
def test_the_view_shows_no_future(attribute: str) -> None:
    env = gym.make("UEC-v0")
    env.reset(seed=0)
    view = PolicyView(env)
    assert view.unwrapped is view and view.instance is env.unwrapped.instance
    with pytest.raises(AttributeError, match="not visible to a policy"):
        getattr(view, attribute)
    with pytest.raises(TypeError):
        copy.deepcopy(view)
    with pytest.raises(AttributeError):
        view.instance = None


def test_corais_episodes_are_one_dispatch_and_policies_get_the_view() -> None:
    """CoRaiS has no future inside an episode: one decision, then the end."""
    env = gym.make("CoRaiS-v1")
    seen: list[Any] = []

    class Spy:
        name = "spy"

        def reset(self, env: Any, seed: int | None = None) -> None:
            seen.append(env)

        def act(self, obs: Any, info: dict[str, Any]) -> Any:
            return env.action_space.sample()

    result = run_episode(env, Spy(), seed=0)
    assert result.decisions == 1 and isinstance(seen[0], PolicyView)
    env.close()
