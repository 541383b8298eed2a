"""One episode contract for every registered env (envs.problems.PROBLEMS), on small scenarios.

* ``step`` before the first ``reset`` and after the episode ended (terminated or truncated) raises
  RuntimeError until the next ``reset``;
* bad input raises ValueError naming the parameter: unknown reset option keys (listing the valid ones),
  a wrongly typed ``options["instance"]``, actions that are not of the action space's integer type
  (strings, floats — even integral ones —, bools, other shapes) or out of range, negative or non-integer
  seeds, non-bool values of boolean constructor arguments; a rejected call leaves the episode unchanged;
* ``instance_seed=None`` means the same thing everywhere: the instance is drawn from the reset seed, so
  ``reset(seed=s)`` reproduces instance and episode, and other seeds give other instances.
"""

from __future__ import annotations

import dataclasses
import inspect

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import envs  # noqa: F401  (registers the ids)
from envs.problems import PROBLEMS, load_attr

#: Small constructor arguments per env so that the whole file runs in seconds (unknown ids: defaults).
SMALL_KWARGS: dict[str, dict] = {
    "UEC-v0": {"scenario": "tiny"},
    "OINC-v0": {"scenario": "tiny"},
    "ASET-v0": {"topology": "dc-cloud", "horizon": 3},
    "ASET-v1": {"topology": "dc-cloud", "horizon": 3},
    "CoRaiS-v0": {"scale": "tiny"},
    "CoRaiS-v1": {"scale": "tiny"},
}
ENV_IDS = list(PROBLEMS)


def make(env_id: str, **kwargs) -> gym.Env:
    return gym.make(env_id, **{**SMALL_KWARGS.get(env_id, {}), **kwargs})


def make_unwrapped(env_id: str, **kwargs) -> gym.Env:
    """The env class itself, built without any Gymnasium wrapper."""
    cls = load_attr(PROBLEMS[env_id].entry_point)
    return cls(**{**SMALL_KWARGS.get(env_id, {}), **kwargs})


def env_class(env_id: str) -> type:
    return load_attr(PROBLEMS[env_id].entry_point)


def feasible_action(env: gym.Env, info: dict):
    """The first feasible action (by the mask when the env gives one), in the action space's own type."""
    space = env.action_space
    if isinstance(space, spaces.Discrete):
        mask = info.get("action_mask")
        return int(np.flatnonzero(mask)[0]) if mask is not None else 0
    if isinstance(space, spaces.MultiDiscrete):
        return np.zeros(space.shape, dtype=np.int64)
    raise AssertionError(f"no feasible-action rule for {space}")


def bad_actions(space: spaces.Space) -> list:
    """Actions of the wrong type, shape or range for ``space`` (each must raise ValueError)."""
    if isinstance(space, spaces.Discrete):
        n = int(space.n)
        return ["1", "x", 1.0, 2.5, np.float32(1.0), np.float64(0.0), True, np.bool_(False), None,
                np.array([1]), np.array([[0]]), np.array(1.0), [0], -1, n, np.int64(n)]
    if isinstance(space, spaces.MultiDiscrete):
        zeros = np.zeros(space.shape, dtype=np.int64)
        return [zeros.astype(np.float64), zeros.astype(np.float32), np.full(space.shape, 0.5), zeros.astype(bool),
                zeros.astype(str), "0", None, 0, zeros[:-1], zeros[None], np.append(zeros, 0),
                np.asarray(space.nvec, dtype=np.int64), np.full(space.shape, -1, dtype=np.int64)]
    raise AssertionError(f"no bad actions listed for {space}")


def observations_equal(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


def instance_arrays(instance) -> list[np.ndarray]:
    """Every numeric array / number of a (nested) instance dataclass, in field order."""
    out: list[np.ndarray] = []

    def walk(value) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            out.append(value)
        elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            out.append(np.asarray(value))
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(instance)
    return out


def same_instance(a, b) -> bool:
    xa, xb = instance_arrays(a), instance_arrays(b)
    return len(xa) == len(xb) and all(x.shape == y.shape and np.array_equal(x, y, equal_nan=True) for x, y in zip(xa, xb))


def rollout(env: gym.Env, seed: int, steps: int = 4) -> list:
    """The first observation and (obs, reward) of up to ``steps`` feasible steps."""
    obs, info = env.reset(seed=seed)
    trace = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(feasible_action(env, info))
        trace.append((obs, reward))
        if terminated or truncated:
            break
    return trace


def traces_equal(a: list, b: list) -> bool:
    if len(a) != len(b) or not observations_equal(a[0], b[0]):
        return False
    return all(observations_equal(x[0], y[0]) and x[1] == y[1] for x, y in zip(a[1:], b[1:]))


def bool_arguments(env_id: str) -> list[str]:
    """Constructor parameters whose default is a bool."""
    params = inspect.signature(env_class(env_id)).parameters.values()
    return [p.name for p in params if isinstance(p.default, bool)]


def has_parameter(env_id: str, name: str) -> bool:
    return name in inspect.signature(env_class(env_id)).parameters


# ----------------------------------------------------------------------------------- episode order
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__step_before_reset_raises(env_id):
    with pytest.raises(RuntimeError, match="reset"):
        make_unwrapped(env_id).step(make_unwrapped(env_id).action_space.sample())
    env = make(env_id)
    # Gymnasium's OrderEnforcing wrapper answers first with its own ResetNeeded
    with pytest.raises((RuntimeError, gym.error.ResetNeeded)):
        env.step(env.action_space.sample())


@pytest.mark.parametrize("wrapped", [True, False], ids=["gym.make", "unwrapped"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__step_after_the_episode_ended_raises_until_reset(env_id, wrapped):
    env = make(env_id) if wrapped else make_unwrapped(env_id)
    obs, info = env.reset(seed=0)
    for _ in range(100_000):
        obs, reward, terminated, truncated, info = env.step(feasible_action(env, info))
        if terminated or truncated:
            break
    else:
        pytest.fail(f"{env_id}: the episode did not end")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="reset"):
            env.step(feasible_action(env, info))
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    env.step(feasible_action(env, info))  # a new episode steps again


@pytest.mark.parametrize("wrapped", [True, False], ids=["gym.make", "unwrapped"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__step_after_close_raises_runtime_error_until_reset(env_id, wrapped):
    env = make(env_id) if wrapped else make_unwrapped(env_id)
    obs, info = env.reset(seed=0)
    action = feasible_action(env, info)
    env.close()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="close"):
            env.step(action)
    obs, info = env.reset(seed=0)  # a reset starts over
    env.step(feasible_action(env, info))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__render_mode_none_is_accepted_by_every_env(env_id):
    for env in (make(env_id, render_mode=None), make_unwrapped(env_id, render_mode=None)):
        assert env.render_mode is None
        env.reset(seed=0)
    with pytest.raises(ValueError, match="render_mode"):
        make_unwrapped(env_id, render_mode="no-such-mode")


# ----------------------------------------------------------------------------------- reset options
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__unknown_reset_options_are_named_with_the_valid_ones(env_id):
    env = make(env_id)
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['no_such_option'\]; valid options: \[") as err:
        env.reset(seed=0, options={"no_such_option": 1})
    assert "'instance'" in str(err.value)
    with pytest.raises(ValueError, match="options"):
        env.reset(seed=0, options=["instance"])
    env.reset(seed=0, options={})  # known (empty) options still work
    env.reset(seed=0, options=None)


@pytest.mark.parametrize("bad", ["x", 3, {"instance": 1}, np.zeros(3)], ids=["str", "int", "dict", "array"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__wrongly_typed_instance_option_raises_value_error(env_id, bad):
    env = make(env_id)
    with pytest.raises(ValueError, match=r"options\['instance'\]=.* is invalid: expected"):
        env.reset(seed=0, options={"instance": bad})


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__instance_option_pins_the_instance_and_none_means_absent(env_id):
    env = make(env_id, instance_seed=3)
    env.reset(seed=0)
    pinned = make(env_id, instance_seed=4)
    pinned.reset(seed=0)
    env.reset(seed=5, options={"instance": pinned.unwrapped.instance})
    assert same_instance(env.unwrapped.instance, pinned.unwrapped.instance)
    env.reset(seed=5, options={"instance": None})  # None = no instance option


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__resample_option_must_be_a_bool(env_id):
    env = make(env_id)
    try:
        env.reset(seed=0, options={"resample": False})
    except ValueError as err:
        assert "unknown reset option" in str(err)  # an env without resampling rejects the key itself
        return
    with pytest.raises(ValueError, match=r"options\['resample'\]='false' is invalid: expected True or False"):
        env.reset(seed=0, options={"resample": "false"})


# ----------------------------------------------------------------------------------- actions
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__actions_of_the_wrong_type_shape_or_range_raise_and_change_nothing(env_id):
    env, twin = make(env_id, instance_seed=0), make(env_id, instance_seed=0)
    obs, info = env.reset(seed=11)
    twin.reset(seed=11)
    for action in bad_actions(env.action_space):
        with pytest.raises(ValueError, match="action"):
            env.step(action)
    action = feasible_action(env, info)
    got, want = env.step(action), twin.step(action)
    assert observations_equal(got[0], want[0]) and got[1:4] == want[1:4]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__integer_actions_of_every_integer_type_are_accepted_alike(env_id):
    space = make(env_id).action_space
    if isinstance(space, spaces.Discrete):
        variants = [1, np.int64(1), np.int32(1), np.array(1)]
    else:
        ones = np.ones(space.shape, dtype=np.int64)
        variants = [ones, ones.astype(np.int32), ones.tolist()]
    results = []
    for action in variants:
        env = make(env_id, instance_seed=0)
        env.reset(seed=2)
        obs, reward, terminated, truncated, _ = env.step(action)
        results.append((obs, reward, terminated, truncated))
    for obs, reward, terminated, truncated in results[1:]:
        assert observations_equal(obs, results[0][0]) and (reward, terminated, truncated) == results[0][1:]


# ----------------------------------------------------------------------------------- seeds and bools
@pytest.mark.parametrize("seed", [-1, 1.0, "1", True])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__bad_reset_seed_raises_value_error_naming_seed(env_id, seed):
    env = make(env_id)
    with pytest.raises(ValueError, match=r"seed=.* (is invalid|is out of range): expected a non-negative integer"):
        env.reset(seed=seed)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__numpy_integer_reset_seed_equals_the_int_seed(env_id):
    a = rollout(make(env_id, instance_seed=0), seed=7)
    b = rollout(make(env_id, instance_seed=0), seed=np.int64(7))
    assert traces_equal(a, b)


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__bad_instance_seed_raises_value_error_naming_it(env_id, seed):
    if not has_parameter(env_id, "instance_seed"):
        pytest.skip(f"{env_id} has no instance_seed")
    with pytest.raises(ValueError, match=r"instance_seed=.* (is invalid|is out of range): expected a non-negative"):
        make_unwrapped(env_id, instance_seed=seed)


@pytest.mark.parametrize("value", ["false", "True", 1, 0, None])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__boolean_constructor_arguments_reject_non_bools(env_id, value):
    names = bool_arguments(env_id)
    assert names, f"{env_id} has no boolean constructor argument to check"
    for name in names:
        with pytest.raises(ValueError, match=rf"{name}={value!r} is invalid: expected True or False"):
            make_unwrapped(env_id, **{name: value})
        make_unwrapped(env_id, **{name: np.bool_(False)})  # numpy bools are bools


# ----------------------------------------------------------------------------------- instance_seed=None
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract__instance_seed_none_draws_the_instance_from_the_reset_seed(env_id):
    if not has_parameter(env_id, "instance_seed"):
        pytest.skip(f"{env_id} has no instance_seed")
    env, other = make(env_id, instance_seed=None), make(env_id, instance_seed=None)
    first = rollout(env, seed=5)
    instance_5 = env.unwrapped.instance
    rollout(env, seed=6)
    assert not same_instance(env.unwrapped.instance, instance_5)  # another reset seed, another instance
    assert traces_equal(rollout(env, seed=5), first)  # the same reset seed again: same instance and episode
    assert same_instance(env.unwrapped.instance, instance_5)
    assert traces_equal(rollout(other, seed=5), first)  # and in a fresh env
    # a fixed instance_seed keeps one instance whatever the reset seed
    fixed = make(env_id, instance_seed=5)
    fixed.reset(seed=1)
    kept = fixed.unwrapped.instance
    fixed.reset(seed=2)
    assert same_instance(fixed.unwrapped.instance, kept)
