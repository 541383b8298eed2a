"""Rendering of every registered env: ``render_mode`` in {None, "ansi", "rgb_array"} (Gymnasium semantics).

* ``metadata["render_modes"]`` is ``["ansi", "rgb_array"]`` with a positive ``render_fps``;
* ``"ansi"`` renders a non-empty str, ``"rgb_array"`` an (H, W, 3) uint8 picture with content (many
  colours, not all white) after reset and after the episode, of the same shape every frame;
* an unknown mode raises ValueError naming the allowed ones; ``render()`` before ``reset()`` raises;
* both env checkers (Gymnasium's and SB3's) pass with each render mode set;
* ``offline.render.save_episode_picture`` writes a PNG of the last frame.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.common.render import RENDER_MODES
from envs.problems import PROBLEMS
from tests.test_env_contract import SMALL_KWARGS, feasible_action, make, make_unwrapped

ENV_IDS = list(PROBLEMS)
pytestmark = pytest.mark.filterwarnings("ignore:.*is out of date.*:DeprecationWarning")


def play(env: gym.Env, seed: int = 0) -> tuple[int, dict]:
    """Reset and play feasible actions to the episode's end; returns (steps, final info)."""
    _, info = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, info = env.step(feasible_action(env, info))
        steps += 1
        done = terminated or truncated
    return steps, info


def assert_picture(frame) -> None:
    assert isinstance(frame, np.ndarray)
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.shape[0] >= 200 and frame.shape[1] >= 400
    colours = np.unique(frame.reshape(-1, 3), axis=0)
    assert len(colours) > 20, f"only {len(colours)} distinct colours: a blank picture?"
    assert (frame < 250).any(axis=2).mean() > 0.02, "the picture is (almost) all white"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__metadata_declares_ansi_and_rgb_array(env_id):
    env = make_unwrapped(env_id)
    assert list(env.metadata["render_modes"]) == list(RENDER_MODES)
    assert env.metadata["render_fps"] > 0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__rgb_array_is_a_picture_after_reset_and_at_the_end(env_id):
    env = make(env_id, render_mode="rgb_array")
    assert env.render_mode == "rgb_array"
    env.reset(seed=0)
    first = env.render()
    assert_picture(first)  # axes, labels and the instance before any step
    play(env)
    last = env.render()
    assert_picture(last)
    assert last.shape == first.shape, "frames of one env must have one size (video wrappers need it)"
    assert not np.array_equal(last, first)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__ansi_is_a_non_empty_str(env_id):
    env = make(env_id, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and text.strip()
    play(env)
    after = env.render()
    assert isinstance(after, str) and after.strip() and after != text


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__unknown_mode_raises_naming_the_allowed_ones(env_id):
    for bad in ("human", "rgb", 3):
        with pytest.raises(ValueError, match=r"render_mode.*'ansi', 'rgb_array'"):
            make_unwrapped(env_id, render_mode=bad)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__none_renders_nothing_and_render_before_reset_raises(env_id):
    env = make_unwrapped(env_id)
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert env.render() is None
    with pytest.raises(RuntimeError, match="reset"):
        make_unwrapped(env_id, render_mode="ansi").render()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__recording_does_not_change_the_episode(env_id):
    """Same seed and actions with and without a render mode: same rewards (history is only recorded)."""
    returns = []
    for mode in (None, "rgb_array"):
        env = make(env_id, render_mode=mode)
        _, info = env.reset(seed=3)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(feasible_action(env, info))
            total += reward
            done = terminated or truncated
        returns.append(total)
    assert returns[0] == returns[1]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__step_after_close_still_raises(env_id):
    env = make_unwrapped(env_id, render_mode="rgb_array")
    _, info = env.reset(seed=0)
    env.close()
    with pytest.raises(RuntimeError, match="close"):
        env.step(feasible_action(env, info))


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize("mode", RENDER_MODES)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render__gymnasium_and_sb3_checkers_pass_with_render_mode(env_id, mode):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    check_env(make(env_id, render_mode=mode).unwrapped)  # also makes and renders every declared mode
    sb3_check_env(make_unwrapped(env_id, render_mode=mode), warn=False, skip_render_check=False)


@pytest.mark.parametrize("env_id", ["UEC-v0", "CoRaiS-v1"])
def test_render__save_episode_picture_writes_the_last_frame(env_id, tmp_path):
    from matplotlib.image import imread

    from offline.registry import available_policies
    from offline.render import save_episode_picture

    policy = "random" if "random" in available_policies(env_id) else "list_greedy"
    path = save_episode_picture(env_id, SMALL_KWARGS[env_id], policy, 0, tmp_path / "pictures" / "episode.png")
    assert path.is_file() and path.suffix == ".png"
    picture = imread(path)
    assert picture.ndim == 3 and picture.shape[0] >= 200
    with pytest.raises(ValueError, match="png"):
        save_episode_picture(env_id, SMALL_KWARGS[env_id], policy, 0, tmp_path / "episode.jpg")


def test_render__evaluate_py_render_true_saves_one_picture_per_policy(tmp_path):
    from omegaconf import OmegaConf

    from edge_sched_gym import evaluate

    cfg = OmegaConf.create({
        "env": {"name": "corais-v1", "id": "CoRaiS-v1", "kwargs": {"scale": [5, 3, 12]}},
        "policies": ["list_greedy", "random1"], "instances": 1, "episodes": 1, "seed": 0,
        "out": str(tmp_path / "out"), "progress": False, "render": True, "evaluation_kwargs": {"exact_time_limit": 1.0},
        "sweeps": [],
    })
    out = evaluate.run(cfg)
    pictures = sorted(p.name for p in (out / "pictures").iterdir())
    assert pictures == ["list_greedy.png", "random1.png"]
    assert all((out / "pictures" / name).stat().st_size > 10_000 for name in pictures)
