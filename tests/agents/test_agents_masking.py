"""Which envs put their action mask at the end of the observation (contract 6)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import envs  # noqa: F401
from agents.masking import infer_mask_dim


def test_masking__uec_declares_its_mask_and_the_tail_matches_action_masks():
    env = gym.make("UEC-v0", scenario="tiny")
    obs, _ = env.reset(seed=0)
    dim = infer_mask_dim(env)
    assert dim == env.action_space.n
    np.testing.assert_array_equal(obs[-dim:] > 0.5, env.unwrapped.action_masks())


def test_masking__an_action_masks_method_alone_does_not_make_the_tail_a_mask():
    env = gym.make("ASET-v0")
    assert callable(env.unwrapped.action_masks)
    assert infer_mask_dim(env) == 0
    assert infer_mask_dim(gym.make("UEC-v0"), mode="none") == 0
