"""CoRaiS-v0/v1's native vector envs (envs.corais.vector): every sub-env is the single env, bit for bit.

The key property: sub-env i reset with ``seed + i`` gives exactly the observations, rewards, flags and infos
of ``gym.make(id)`` reset with ``seed + i`` and stepped with the same actions, across auto-resets, in both
autoreset modes, for drawn, fixed (``instance_seed``), characteristic and option-given instances. The
batched generator it relies on (``generate_batch``, ``generate_seeded``, the compiled PCG64 draws) is
checked against numpy's own draws here too.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv
from hypothesis import given, settings
from hypothesis import strategies as st

import envs  # noqa: F401
from envs.corais.env import CoRaiSEnv, CoRaiSEnvV1
from envs.corais.generator import (
    V1_DEFAULTS,
    GeneratorDraws,
    RawDraws,
    generate,
    generate_batch,
    generate_seeded,
    make_scenario,
)
from envs.corais.vector import STEP_KEYS, CoRaiSVectorEnv, CoRaiSVectorEnvV1

ENV_IDS = ("CoRaiS-v0", "CoRaiS-v1")
pytestmark = pytest.mark.filterwarnings("ignore:.*CoRaiS-v0 is out of date")


def make_vec(env_id: str, num_envs: int, **kwargs: Any) -> CoRaiSVectorEnv:
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def assert_same(a: Any, b: Any, what: str) -> None:
    """Bit-for-bit equality of arrays (dtype and shape too), dicts of them and plain values."""
    if isinstance(b, dict):
        assert isinstance(a, dict) and set(a) == set(b), what
        for key in b:
            assert_same(a[key], b[key], f"{what}[{key!r}]")
    elif isinstance(b, np.ndarray):
        a = np.asarray(a)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), what
    else:
        assert type(a) is type(b) or isinstance(a, np.generic), what
        assert a == b, what


def assert_info_row(infos: dict[str, Any], i: int, single: dict[str, Any], what: str) -> None:
    """Sub-env i's entries of the batched ``infos`` are the single env's ``info`` (every key, with its mask)."""
    for key, value in single.items():
        assert infos["_" + key][i], f"{what}: {key} missing"
        got = infos[key][i]
        assert_same(got if isinstance(value, (np.ndarray, tuple)) else type(value)(got), value, f"{what}: {key}")


def assert_same_as_single_envs(env_id: str, num_envs: int, seed: int, steps: int, policy_seed: int = 0,
                               autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
                               options: dict[str, Any] | None = None, **kwargs: Any) -> int:
    """Step the vector env and ``num_envs`` single envs with the same uniformly random actions; assert
    every sub-env matches its single env. Returns the number of finished episodes."""
    vec = make_vec(env_id, num_envs, autoreset_mode=autoreset_mode, **kwargs)
    singles = [gym.make(env_id, **kwargs) for _ in range(num_envs)]
    obs, infos = vec.reset(seed=seed, options=options)
    single = [env.reset(seed=seed + i, options=options) for i, env in enumerate(singles)]
    rng = np.random.default_rng(policy_seed)
    pending = [False] * num_envs  # NEXT_STEP: this sub-env resets at the next step
    episodes = 0
    q = int(vec.single_action_space.nvec[0])
    for step in range(steps):
        assert vec.observation_space.contains(obs)
        for i, (s_obs, s_info) in enumerate(single):
            assert_same({key: value[i] for key, value in obs.items()}, s_obs, f"step {step} obs {i}")
            assert_info_row(infos, i, s_info, f"step {step} info {i}")
        actions = rng.integers(0, q, size=vec.action_space.shape)
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        assert rewards.dtype == np.float64 and terminated.dtype == truncated.dtype == np.bool_
        assert rewards.shape == terminated.shape == truncated.shape == (num_envs,) and not truncated.any()
        for i, env in enumerate(singles):
            if pending[i]:  # NEXT_STEP: the vector env resets sub-env i now, ignoring its action
                single[i] = env.reset()
                pending[i] = False
                assert rewards[i] == 0.0 and not terminated[i]
                assert all(not infos.get("_" + key, np.zeros(num_envs, bool))[i] for key in STEP_KEYS)
                continue
            s_obs, s_reward, s_term, s_trunc, s_info = env.step(actions[i])
            assert rewards[i] == s_reward and terminated[i] == s_term and truncated[i] == s_trunc
            assert s_term  # every CoRaiS episode is one dispatch
            episodes += 1
            if autoreset_mode == AutoresetMode.NEXT_STEP:
                assert_info_row(infos, i, s_info, f"step {step} step-info {i}")
                pending[i] = True
                single[i] = (s_obs, s_info)
            else:
                assert infos["_final_obs"][i] and infos["_final_info"][i]
                assert_same(infos["final_obs"][i], s_obs, f"step {step} final_obs {i}")
                assert_info_row(infos["final_info"], i, s_info, f"step {step} final_info {i}")
                single[i] = env.reset()
    return episodes


# --- equality with the single env ------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    env_id=st.sampled_from(ENV_IDS),
    seed=st.integers(0, 2**31),
    num_envs=st.integers(1, 4),
    scale=st.sampled_from(["tiny", (6, 1, 3), (5, 2, 1), (12, 4, 9), (20, 10, 50)]),
    overrides=st.sampled_from([{}, {"data_size": (0.2, 0.9), "mu": 2.5, "coord_max": 3.0, "replicas": (2, 4)},
                               {"backlog_max": 0, "backlog_load": 0.0}, {"backlog_load": 3.0, "coef_b": (0.0, 0.5)}]),
    flat_observation=st.booleans(),
    autoreset_mode=st.sampled_from([AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP]),
)
def test_corais_vector__sub_envs_equal_the_single_env(env_id, seed, num_envs, scale, overrides, flat_observation,
                                                      autoreset_mode):
    episodes = assert_same_as_single_envs(
        env_id, num_envs, seed, steps=6, policy_seed=seed, autoreset_mode=autoreset_mode, scale=scale,
        scenario_overrides=overrides, flat_observation=flat_observation,
    )
    assert episodes >= 2 * num_envs  # the test crosses auto-resets


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("autoreset_mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_corais_vector__default_scale_sub_envs_equal_the_single_env(env_id, autoreset_mode):
    assert assert_same_as_single_envs(env_id, 3, seed=11, steps=5, autoreset_mode=autoreset_mode) >= 6


@pytest.mark.parametrize("kwargs", [
    {"scale": "tiny", "instance_seed": 3},
    {"scale": (5, 5, 20), "characteristic": "workload_perception"},
    {"scale": (5, 5, 8), "characteristic": "heterogeneity_mixed_sizes", "flat_observation": True},
])
@pytest.mark.parametrize("autoreset_mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_corais_vector__fixed_and_characteristic_instances_equal_the_single_env(kwargs, autoreset_mode):
    assert assert_same_as_single_envs("CoRaiS-v1", 3, seed=2, steps=4, autoreset_mode=autoreset_mode, **kwargs) >= 6


def test_corais_vector__reset_option_instance_reaches_every_sub_env():
    inst = generate(make_scenario("tiny", **V1_DEFAULTS), np.random.default_rng(42))
    assert_same_as_single_envs("CoRaiS-v1", 2, seed=5, steps=3, options={"instance": inst}, scale="tiny")
    vec, single = make_vec("CoRaiS-v1", 2, scale="tiny"), gym.make("CoRaiS-v1", scale="tiny")
    obs, _ = vec.reset(seed=[8, 9], options={"instance": None})
    assert_same({k: v[1] for k, v in obs.items()}, single.reset(seed=9)[0], "options instance None")
    with pytest.raises(ValueError, match="unknown reset option"):
        vec.reset(options={"bogus": 1})
    with pytest.raises(ValueError, match="instance"):
        vec.reset(options={"instance": "nope"})


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("autoreset_mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_corais_vector__everything_equals_sync_vector_env(env_id, autoreset_mode):
    """The whole return values, infos included (keys, masks, dtypes, final_obs / final_info), equal
    Gymnasium's SyncVectorEnv over the single env."""
    kwargs = {"scale": (8, 3, 12)}
    vec = make_vec(env_id, 3, autoreset_mode=autoreset_mode, **kwargs)
    sync = gym.make_vec(env_id, num_envs=3, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": autoreset_mode}, **kwargs)

    def same(a: Any, b: Any, what: str) -> None:
        if isinstance(b, np.ndarray) and b.dtype == object:
            assert a.dtype == object and a.shape == b.shape, what
            for x, y in zip(a, b, strict=True):
                same(x, y, what)
        elif isinstance(b, dict):
            assert set(a) == set(b), what
            for key in b:
                same(a[key], b[key], f"{what}[{key!r}]")
        elif isinstance(b, tuple) and not isinstance(b[0], int):  # a reset's / step's return values
            assert len(a) == len(b), what
            for k, (x, y) in enumerate(zip(a, b, strict=True)):
                same(x, y, f"{what}[{k}]")
        else:
            assert_same(a, b, what)

    same(vec.reset(seed=4), sync.reset(seed=4), "reset")
    rng = np.random.default_rng(0)
    for step in range(4):
        actions = rng.integers(0, 3, size=(3, 12))
        same(vec.step(actions), sync.step(actions), f"step {step}")


# --- the batched generator ---------------------------------------------------------------------------
@pytest.mark.parametrize("backlog", ["uniform", "load"])
@pytest.mark.parametrize("scale", [(10, 5, 100), (1, 1, 1), (20, 10, 50)])
def test_corais_vector__generate_batch_and_seeded_equal_generate(backlog, scale):
    scenario = make_scenario(scale, backlog=backlog)
    seeds = [0, 7, 2**40 + 3, 2**63 - 2]
    rngs = [np.random.default_rng(s) for s in seeds]
    batch, seeded = generate_batch(scenario, rngs), generate_seeded(scenario, seeds)
    for b, s in enumerate(seeds):
        ref_rng = np.random.default_rng(s)
        ref = generate(scenario, ref_rng)
        assert rngs[b].bit_generator.state == ref_rng.bit_generator.state  # the generator state afterwards too
        for got in (batch.instance(b), seeded.instance(b)):
            for name in ("coords", "replicas", "coef_a", "coef_b", "workload", "req_src", "req_pred", "req_d", "req_o"):
                assert_same(getattr(got, name), getattr(ref, name), name)
            for name in ("edge", "transferred", "src", "pred", "d", "o"):
                assert_same(getattr(got.backlog, name), getattr(ref.backlog, name), "backlog." + name)
            for name in ("cmp", "trn", "res", "src", "workload"):
                assert_same(getattr(got.tables, name), getattr(ref.tables, name), "tables." + name)


def test_corais_vector__compiled_draws_equal_numpy_generator_draws():
    """RawDraws (PCG64 outputs turned into doubles and bounded integers in compiled code, and default_rng's
    seeding) against numpy's Generator, with ranges where Lemire's rejection happens often."""
    plan = np.random.default_rng(99)
    for s in [*range(40), 2**32 - 1, 2**32, 2**63 - 2]:
        numpy_rng, mine = np.random.default_rng(s), np.random.default_rng(s)
        kept = RawDraws([mine.bit_generator])  # keeps the generator's state up to date
        seeded = RawDraws(seeds=[s])  # default_rng(s) seeded in compiled code
        reference: list[np.ndarray] = []
        for _ in range(8):
            c = int(plan.integers(0, 9))
            if plan.random() < 0.4:
                reference.append(numpy_rng.random(c))
                for draws in (kept, seeded):
                    assert_same(draws.doubles(np.array([c])), reference[-1], f"doubles seed {s}")
            else:
                span = int(plan.choice([1, 2, 3, 7, 100, 3_000_000_000, 2**31 + 1, 2**32 - 1, 2**32]))
                low = int(plan.integers(-5, 5))
                reference.append(numpy_rng.integers(low, low + span, size=c))
                for draws in (kept, seeded):
                    assert_same(draws.integers(low, low + span, np.array([c])), reference[-1], f"ints seed {s}")
        kept.finish()
        assert mine.bit_generator.state == numpy_rng.bit_generator.state


def test_corais_vector__other_bit_generators_draw_with_the_generator_calls():
    scenario = make_scenario("tiny", **V1_DEFAULTS)
    rngs = [np.random.Generator(np.random.MT19937(s)) for s in range(3)]
    batch = generate_batch(scenario, rngs)
    for b in range(3):
        reference = generate(scenario, np.random.Generator(np.random.MT19937(b)))
        assert_same(batch.instance(b).tables.cmp, reference.tables.cmp, "MT19937")
    draws = GeneratorDraws([np.random.default_rng(0)])
    assert_same(draws.integers(0, 5, np.array([4])), np.random.default_rng(0).integers(0, 5, size=4), "ints")


# --- the VectorEnv contract ----------------------------------------------------------------------------
def test_corais_vector__make_vec_gives_the_native_batched_env():
    vec = make_vec("CoRaiS-v1", 5, scale="tiny")
    assert isinstance(vec, CoRaiSVectorEnvV1) and isinstance(vec, VectorEnv)
    assert isinstance(make_vec("CoRaiS-v0", 2), CoRaiSVectorEnv) and not isinstance(make_vec("CoRaiS-v0", 2),
                                                                                    CoRaiSVectorEnvV1)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = CoRaiSEnvV1(scale="tiny")
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space
    assert vec.observation_space["edges"].shape == (5, 3, 10) and vec.observation_space["requests"].shape == (5, 6, 6)
    # batch_space of the single MultiDiscrete([3] * 6), as SyncVectorEnv's: Box(0, 2, (5, 6), int64)
    assert vec.action_space == gym.make_vec("CoRaiS-v1", num_envs=5, scale="tiny").action_space
    assert vec.action_space == gym.spaces.Box(0, 2, (5, 6), np.int64)
    obs, infos = vec.reset(seed=0)
    assert obs["edges"].dtype == obs["requests"].dtype == np.float32 and vec.observation_space.contains(obs)
    assert infos["_scale"].all() and infos["scale"][0] == (4, 3, 6)
    assert vec.get_attr("scenario")[0] == single.scenario
    flat = make_vec("CoRaiS-v0", 2, scale="tiny", flat_observation=True)
    assert flat.observation_space["edges"].shape == (2, 30)
    assert flat.observation_space.contains(flat.reset(seed=1)[0])
    same = make_vec("CoRaiS-v1", 2, scale="tiny", autoreset_mode="SameStep")
    assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert CoRaiSVectorEnv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # per instance, not the class's


def test_corais_vector__step_before_reset_and_after_close_raises():
    vec = make_vec("CoRaiS-v1", 2, scale="tiny")
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros((2, 6), np.int64))
    vec.reset(seed=0)
    vec.step(np.zeros((2, 6), np.int64))
    vec.close()
    with pytest.raises(RuntimeError, match="after close"):
        vec.step(np.zeros((2, 6), np.int64))
    with pytest.raises(RuntimeError, match="after close"):  # a closed vector env stays closed
        vec.reset(seed=0)


@pytest.mark.parametrize("actions", [
    np.zeros((2, 5), np.int64), np.zeros(6, np.int64), np.zeros((3, 6), np.int64), np.zeros((2, 6)),
    np.zeros((2, 6), bool), np.full((2, 6), 3), np.full((2, 6), -1), "0", [[0] * 6, [0] * 5],
])
def test_corais_vector__actions_outside_the_space_raise(actions):
    vec = make_vec("CoRaiS-v1", 2, scale="tiny")
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        vec.step(actions)


@pytest.mark.parametrize("kwargs", [
    {"scale": "nope"}, {"scale": (4, 5, 6)}, {"instance_seed": -1}, {"flat_observation": "yes"},
    {"characteristic": "bogus"}, {"characteristic": "load_balancing", "scale": "tiny"},
    {"scenario_overrides": {"mu": -1.0}}, {"scenario_overrides": {"unknown": 1}},
])
def test_corais_vector__bad_kwargs_raise_the_single_env_error(kwargs):
    with pytest.raises(ValueError) as single_error:
        CoRaiSEnv(**kwargs)
    with pytest.raises(ValueError, match=re.escape(str(single_error.value))):
        make_vec("CoRaiS-v0", 2, **kwargs)


def test_corais_vector__unseeded_resets_differ_and_seed_lists_reach_each_sub_env():
    vec = make_vec("CoRaiS-v1", 2, scale="tiny")
    first, _ = vec.reset()
    second, _ = vec.reset()
    assert not np.array_equal(first["requests"], second["requests"])
    obs, _ = vec.reset(seed=[3, None])
    assert_same(obs["requests"][0], gym.make("CoRaiS-v1", scale="tiny").reset(seed=3)[0]["requests"], "seed list")


def test_corais_vector__works_with_gymnasium_vector_wrappers():
    vec = gym.wrappers.vector.RecordEpisodeStatistics(make_vec("CoRaiS-v1", 3, scale="tiny"))
    vec.reset(seed=0)
    rng, returns = np.random.default_rng(0), []
    for _ in range(6):
        _, rewards, terminated, _, infos = vec.step(rng.integers(0, 3, size=(3, 6)))
        if "episode" in infos:
            returns.extend(infos["episode"]["r"][infos["_episode"]])
            np.testing.assert_allclose(infos["episode"]["r"][terminated], rewards[terminated])
            np.testing.assert_allclose(rewards[terminated], -infos["cost"][terminated])
    assert len(returns) >= 6
