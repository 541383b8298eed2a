"""Every native vector env (envs/<p>/vector.py) raises a clear error on ``step``/``reset`` after ``close()``
(issue 37: step after close on the UEC vector env went on stepping), as Gymnasium's AsyncVectorEnv does."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.common.vector import VectorEnvClosedError
from envs.problems import PROBLEMS

# the old ids (ASET-v0, CoRaiS-v0) are checked too: Gymnasium's note that a -v1 exists is expected
pytestmark = pytest.mark.filterwarnings("ignore:.*is out of date.*:DeprecationWarning")

SMALL = {"uec": {"scenario": "tiny"}, "oinc": {"scenario": "tiny"}, "aset": {"horizon": 3},
         "corais": {"scale": "tiny"}}
VECTOR_IDS = [env_id for env_id, problem in PROBLEMS.items() if problem.vector_entry_point]


def test_vector_close__every_package_has_a_native_vector_env():
    assert {PROBLEMS[env_id].package for env_id in VECTOR_IDS} == set(SMALL)


@pytest.mark.parametrize("env_id", VECTOR_IDS)
def test_vector_close__step_and_reset_after_close_raise(env_id: str):
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", **SMALL[PROBLEMS[env_id].package])
    vec.reset(seed=0)
    actions = vec.action_space.sample()
    vec.step(actions)  # open: steps
    vec.close()
    assert vec.closed
    with pytest.raises(VectorEnvClosedError, match=r"step\(\) after close\(\)"):
        vec.step(actions)
    with pytest.raises(VectorEnvClosedError, match=r"reset\(\) after close\(\)"):
        vec.reset(seed=0)
    # Gymnasium's own error class, and a RuntimeError as the envs raised before
    assert issubclass(VectorEnvClosedError, gym.error.ClosedEnvironmentError)
    assert issubclass(VectorEnvClosedError, RuntimeError)
    vec.close()  # closing twice is harmless


def test_vector_close__a_fresh_env_still_steps():
    vec = gym.make_vec("UEC-v0", num_envs=2, vectorization_mode="vector_entry_point", scenario="tiny")
    vec.reset(seed=0)
    for _ in range(3):
        obs = vec.step(np.zeros(2, np.int64))[0]
    assert np.all(np.isfinite(obs))
    vec.close()
