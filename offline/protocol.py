"""The one policy protocol every policy (learned or not) follows, and a rollout helper.

A policy is reset at the start of each episode with a view of the env (non-learning policies may read
``env.unwrapped.instance``; they say so in their docstring) and then maps ``(obs, info)`` to an action.
They act only through ``env.step``, so every policy is measured by the same simulator on the same seeds.

**Non-anticipation is a contract.** :func:`run_episode` hands a policy a :class:`PolicyView`, not the env: it
exposes the instance (the distributions every draw comes from), the spaces and the present state the env's class
lists in ``POLICY_VISIBLE``, and nothing that holds the episode's future (the realised draws, ``np_random``, the
env object itself, so no copy of it either). A policy that reads the future must say so with a class attribute
``clairvoyant = True``: it gets the env itself and belongs to the ladder's clairvoyant rung, never among the
baselines or the online policies. ``tests/test_non_anticipation.py`` plays every registered policy that does
not declare it on two episodes that share their past and differ in their future, and checks that its decisions
agree until the episodes differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np


@runtime_checkable
class Policy(Protocol):
    """What evaluate.py, the benchmarks and the tests call."""

    name: str

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Prepare for a new episode on ``env`` (already reset); ``seed`` seeds the policy's own randomness."""

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """Return the action for the current decision."""


#: What every env's view shows besides the attributes its class lists in ``POLICY_VISIBLE``.
VIEW_ATTRIBUTES: tuple[str, ...] = (
    "action_space", "observation_space", "spec", "metadata", "instance", "scenario", "render_mode",
)


def is_clairvoyant(policy: Any) -> bool:
    """Whether ``policy`` declares that it reads the episode's future (``clairvoyant = True``)."""
    return bool(getattr(policy, "clairvoyant", False))


class PolicyView(gym.Env):
    """What a non-clairvoyant policy sees of ``env``: the instance, the spaces, the present state.

    Reading an attribute forwards to ``env.unwrapped`` if it is in :data:`VIEW_ATTRIBUTES` or the env class's
    ``POLICY_VISIBLE`` (present-state accessors such as OINC's ``current_tasks``); anything else raises
    AttributeError naming the contract. ``unwrapped`` is the view itself, so ``env.unwrapped.instance`` works.
    ``action_masks()`` is the env's current mask (present state); ``get_wrapper_attr`` looks visible names up
    through the wrappers, as Gymnasium's does. It is a ``gym.Env`` so that a policy may wrap it in observation
    wrappers that only read it (a learner's feature wrappers); ``step`` and ``reset`` raise.
    """

    def __init__(self, env: gym.Env) -> None:
        base = env.unwrapped
        object.__setattr__(self, "_env", base)
        object.__setattr__(self, "_outer", env)
        object.__setattr__(self, "_visible", frozenset(VIEW_ATTRIBUTES) | frozenset(getattr(base, "POLICY_VISIBLE", ())))

    @property
    def unwrapped(self) -> PolicyView:
        return self

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(view, UECEnv) holds, as code written against the env expects
        return type(self._env)

    @property
    def spec(self) -> Any:  # type: ignore[override]
        return self._env.spec

    @property
    def metadata(self) -> dict[str, Any]:  # type: ignore[override]
        return self._env.metadata

    @property
    def render_mode(self) -> str | None:  # type: ignore[override]
        return self._env.render_mode

    @property
    def np_random(self) -> np.random.Generator:  # type: ignore[override]
        raise AttributeError("'np_random' is not visible to a policy: it draws the episode's future "
                             "(offline.protocol: non-anticipation); seed your own rng in reset(env, seed)")

    def step(self, action: Any) -> Any:
        raise RuntimeError("a policy acts by returning actions; the evaluation loop steps the env")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        raise RuntimeError("a policy does not reset the env; the evaluation loop does")

    def action_masks(self) -> np.ndarray:
        return self._env.action_masks()

    def get_wrapper_attr(self, name: str) -> Any:
        """Gymnasium's lookup through the wrappers (a wrapper's ``layout`` first), for visible names only."""
        if name not in self._visible:
            return self.__getattr__(name)  # raises, naming the contract
        outer = self._outer
        return outer.get_wrapper_attr(name) if hasattr(outer, "get_wrapper_attr") else getattr(self._env, name)

    def __getattr__(self, name: str) -> Any:
        if name in object.__getattribute__(self, "_visible"):
            return getattr(object.__getattribute__(self, "_env"), name)
        env = object.__getattribute__(self, "_env")
        raise AttributeError(
            f"{name!r} is not visible to a policy: {type(env).__name__} shows policies only "
            f"{sorted(object.__getattribute__(self, '_visible'))} (offline.protocol: non-anticipation). A policy that "
            "reads the episode's future must declare clairvoyant = True and is then a clairvoyant reference"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a PolicyView is read-only (tried to set {name!r})")

    def __deepcopy__(self, memo: dict[int, Any]) -> PolicyView:
        raise TypeError("a PolicyView cannot be copied: a copy of the env would hold the episode's future")

    __copy__ = __deepcopy__  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        raise TypeError("a PolicyView cannot be pickled: a copy of the env would hold the episode's future")

    def __repr__(self) -> str:
        return f"PolicyView({type(self._env).__name__})"


def policy_env(env: gym.Env, policy: Any) -> gym.Env | PolicyView:
    """What ``policy.reset`` receives: the env itself for a clairvoyant policy, else a :class:`PolicyView`."""
    return env if is_clairvoyant(policy) else PolicyView(env)


class TimedPolicy:
    """A transparent proxy that records each ``act`` time in ``seconds`` (attributes, ``isinstance`` and the
    ``clairvoyant`` flag go to the wrapped policy): how the ladder and ``edge_sched_gym.score`` time decisions."""

    def __init__(self, policy: Any, seconds: list[float]) -> None:
        object.__setattr__(self, "_policy", policy)
        object.__setattr__(self, "_seconds", seconds)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(proxy, ExactPolicy) sees the wrapped class, as hooks expect
        return type(self._policy)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._policy, name, value)

    def reset(self, env: Any, seed: int | None = None) -> None:
        self._policy.reset(env, seed)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        from time import perf_counter

        start = perf_counter()
        action = self._policy.act(obs, info)
        self._seconds.append(perf_counter() - start)
        return action


def decision_ms(seconds: list[float]) -> tuple[float, float]:
    """(mean, p99) in milliseconds of decision times, the first left out as warm-up (a JIT compile, a cache
    filled on first use) when there are others; (nan, nan) for none."""
    values = 1e3 * np.asarray(seconds[1:] if len(seconds) > 1 else seconds, dtype=float)
    if not values.size:
        return float("nan"), float("nan")
    return float(values.mean()), float(np.percentile(values, 99))


class MaskedRandomPolicy:
    """Uniform over the currently feasible actions (``info["action_mask"]``), for any Discrete env."""

    name = "random_feasible"

    def __init__(self) -> None:
        self._rng = np.random.default_rng()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        feasible = np.flatnonzero(info["action_mask"])
        return int(feasible[self._rng.integers(feasible.size)])


def episode_seed(seed: int, instance: int, episode: int) -> int:
    """Reset seed of episode ``episode`` on instance ``instance`` of an evaluation seeded ``seed``; every
    policy gets the same one (common random numbers). Used by the OINC and ASET evaluations."""
    return 1_000_003 * (seed + instance) + episode


def policy_seed_for(seed: int | None) -> int | None:
    """The policy seed :func:`run_episode` uses with the env's reset ``seed``: a separate stream of the same seed."""
    return None if seed is None else int(np.random.SeedSequence([int(seed), 35_001]).generate_state(1)[0])


@dataclass
class EpisodeResult:
    """What one episode of one policy produced: the return, the decision count, the final info."""

    total_reward: float
    decisions: int
    decision_seconds: list[float] = field(default_factory=list)
    final_info: dict[str, Any] = field(default_factory=dict)
    step_infos: list[dict[str, Any]] = field(default_factory=list)


def run_episode(
    env: gym.Env,
    policy: Policy,
    *,
    seed: int | None,
    options: dict[str, Any] | None = None,
    policy_seed: int | None = None,
    time_decisions: bool = False,
    keep_step_infos: bool = False,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> EpisodeResult:
    """Run one episode of ``policy`` on ``env`` reset with ``seed`` (common random numbers across policies).

    ``policy_seed`` seeds the policy's own randomness; by default it is derived from ``seed`` (:func:`policy_seed_for`),
    never equal to it: Gymnasium seeds ``np_random`` with ``default_rng(seed)``, so a policy seeded with the same
    number would draw the very uniforms the env drew its episode from."""
    from time import perf_counter

    obs, info = env.reset(seed=seed, options=options)
    policy.reset(policy_env(env, policy), seed=policy_seed if policy_seed is not None else policy_seed_for(seed))
    result = EpisodeResult(total_reward=0.0, decisions=0)
    done = False
    while not done:
        if time_decisions:
            start = perf_counter()
            action = policy.act(obs, info)
            result.decision_seconds.append(perf_counter() - start)
        else:
            action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        result.total_reward += float(reward)
        result.decisions += 1
        if keep_step_infos:
            result.step_infos.append(info)
        if on_step is not None:
            on_step(info)
        done = terminated or truncated
    result.final_info = info
    return result
