"""Suite-level guarantees for every registered env: made by id both ways, both checkers pass silently."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import envs
from envs.problems import PROBLEMS
from offline.registry import available_policies, make_policy

ROOT = Path(__file__).resolve().parents[1]


def test_suite__every_env_id_has_policies_registered():
    assert set(envs.ENV_IDS) == set(PROBLEMS)
    for env_id in envs.ENV_IDS:
        assert available_policies(env_id), f"{env_id} registers no non-learning policy"


#: Warnings the checkers are expected to give, per env, with the reason.
EXPECTED_WARNINGS = {
    # CoRaiS observes sets of edges and requests as (Q, 10) and (Z, 6) matrices, read by the attention
    # dispatcher; SB3 recommends flattening such observations for its MLP policies.
    "CoRaiS-v0": r"Your observation (edges|requests) has an unconventional shape"
                 r"|.*The environment CoRaiS-v0 is out of date",  # Gymnasium's note that CoRaiS-v1 exists
    "CoRaiS-v1": r"Your observation (edges|requests) has an unconventional shape",
    "ASET-v0": r".*The environment ASET-v0 is out of date",  # Gymnasium's note that ASET-v1 exists
}


@pytest.mark.parametrize("env_id", envs.ENV_IDS)
def test_suite__env_passes_gymnasium_and_sb3_checkers_without_unexpected_warnings(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if env_id in EXPECTED_WARNINGS:
            warnings.filterwarnings("ignore", message=EXPECTED_WARNINGS[env_id])
        check_env(gym.make(env_id).unwrapped)
        sb3_check_env(gym.make(env_id).unwrapped, warn=True)


def test_suite__every_id_can_be_made_with_the_module_prefix_in_a_fresh_interpreter():
    code = (
        "import gymnasium as gym\n"
        f"for env_id in {list(envs.ENV_IDS)!r}:\n"
        "    env = gym.make('envs:' + env_id); env.reset(seed=0); print(env_id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == list(envs.ENV_IDS)


@pytest.mark.parametrize("env_id", envs.ENV_IDS)
def test_suite__unknown_policy_name_lists_the_valid_ones(env_id):
    names = available_policies(env_id)
    assert names
    with pytest.raises(ValueError, match=r"policy='no_such_policy' is not known .*valid policies: \["):
        make_policy(env_id, "no_such_policy", gym.make(env_id))
