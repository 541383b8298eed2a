"""The contract every native vector env shares (envs.common.vector.SubEnvBatch), for each registered one.

Each problem's own test file checks its sub-envs equal the single env bit for bit; this file checks, once for all
of them, what they share with Gymnasium's SyncVectorEnv: the construction checks and the sub-env seeds.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from envs.problems import PROBLEMS, load_attr

#: Small kwargs per problem, so each vector env builds fast.
SMALL = {"uec": {"scenario": "tiny"}, "oinc": {"scenario": "tiny"}, "aset": {"topology": "dc-cloud", "horizon": 4},
         "corais": {"scale": "tiny"}}
VECTOR_IDS = [env_id for env_id, problem in PROBLEMS.items() if problem.vector_entry_point]


def test_vector_envs__every_problem_has_one():
    assert {PROBLEMS[env_id].package for env_id in VECTOR_IDS} == {p.package for p in PROBLEMS.values()}


@pytest.mark.parametrize("env_id", VECTOR_IDS)
@pytest.mark.parametrize("kwargs", [{"num_envs": 0}, {"num_envs": 2.5}, {"autoreset_mode": "Disabled"},
                                    {"autoreset_mode": "sometimes"}, {"render_mode": "ansi"}])
def test_vector_envs__bad_vector_kwargs_raise_naming_the_parameter(env_id, kwargs):
    cls = load_attr(PROBLEMS[env_id].vector_entry_point)
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        cls(**{"num_envs": 2, **SMALL[PROBLEMS[env_id].package], **kwargs})


@pytest.mark.parametrize("env_id", VECTOR_IDS)
def test_vector_envs__reset_seeds_are_seed_plus_i_or_one_per_sub_env(env_id):
    kwargs = SMALL[PROBLEMS[env_id].package]
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    with pytest.raises(ValueError, match="seed"):
        vec.reset(seed=-1)
    with pytest.raises(ValueError, match="seed"):
        vec.reset(seed=[1, -2])
    with pytest.raises(ValueError, match="num_envs=2"):
        vec.reset(seed=[1, 2, 3])
    as_int, as_list = vec.reset(seed=5)[0], vec.reset(seed=[5, 6])[0]
    for a, b in zip(gym.vector.utils.iterate(vec.observation_space, as_int),
                    gym.vector.utils.iterate(vec.observation_space, as_list), strict=True):
        np.testing.assert_equal(a, b)
    vec.close()
