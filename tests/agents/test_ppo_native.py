"""``algo=ppo_mask vec_env=native``: one batched MaskablePPO trainer on every env (issue 27).

Masks come from ``action_masks()`` on UEC and ASET; OINC and CoRaiS (MultiDiscrete, no masks) learn unmasked;
CoRaiS' Dict observation gets ``MultiInputPolicy`` from ``policy=auto``. Each run is 2 envs and a few hundred
steps, in this process (``train.run``), well under 20 s.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import torch
from conftest import interrupt_training
from gymnasium import spaces
from hydra import compose, initialize_config_dir

from agents.ppo import grouped_multicategorical
from agents.registry import ALGOS, check_action_space, resolve_policy_name
from edge_sched_gym import train

FAST = ["algo=ppo_mask", "vec_env=native", "n_envs=2", "algo.n_steps=32", "algo.n_epochs=2",
        "algo.policy_kwargs.net_arch=[32,32]", "eval.episodes=1", "eval.freq=0", "eval.reference=false",
        "eval.bound=false", "checkpoint_freq=128", "progress=false"]
#: env config -> the policy ``policy=auto`` resolves to, and whether MaskablePPO reads masks
ENVS = {"uec-v0": ("MlpPolicy", True), "oinc-v0": ("MlpPolicy", False), "aset-v1": ("MlpPolicy", True),
        "corais-v1": ("MultiInputPolicy", False)}


@pytest.fixture(autouse=True)
def _restore_distribution_validation():
    """train.run turns torch.distributions validation off process-wide: restore it for the other tests."""
    previous = torch.distributions.Distribution._validate_args
    yield
    torch.distributions.Distribution.set_default_validate_args(previous)


def _run(overrides: list[str]) -> Path:
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return train.run(cfg, overrides=overrides)


@pytest.mark.parametrize("env", list(ENVS))
def test_ppo_native__two_env_run_writes_a_complete_run_folder(tmp_path, env: str):
    from omegaconf import OmegaConf
    from sb3_contrib import MaskablePPO

    from agents.loading import load_run_model

    run_dir = _run([f"env={env}", *FAST, "steps=256", f"out={tmp_path}"])
    for name in ("config.yaml", "model.zip", "eval.csv", "progress.csv", "train.log", "checkpoints/model_128_steps.zip",
                 "checkpoints/model_256_steps.zip"):
        assert (run_dir / name).is_file(), name
    assert list(run_dir.glob("events.out.tfevents.*"))
    policy, masked = ENVS[env]
    assert OmegaConf.load(run_dir / "config.yaml").algo.policy == policy  # auto, resolved and saved
    assert torch.distributions.Distribution._validate_args is False
    model = load_run_model(run_dir / "model.zip")
    assert isinstance(model, MaskablePPO) and model.num_timesteps == 256 and model.n_envs == 2
    assert model.batch_size == 64  # the 1024 default capped at n_steps x n_envs
    env_cfg = dict(OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml").env))
    model.set_env(train.make_native_vec_env(env_cfg, 2, seed=0))
    assert train.learn_kwargs(model) == ({} if masked else {"use_masking": False})


def test_ppo_native__unmasked_multidiscrete_run_resumes_from_its_checkpoint(tmp_path):
    from agents.loading import load_run_model

    run_dir = _run(["env=corais-v1", *FAST, "steps=128", f"out={tmp_path}"])
    assert _run([f"resume={run_dir}", "steps=256"]) == run_dir
    assert load_run_model(run_dir / "model.zip").num_timesteps == 256
    assert (run_dir / "checkpoints/model_256_steps.zip").is_file()


def test_ppo_native__sigint_saves_the_model_and_an_interrupt_checkpoint(tmp_path):
    code, output = interrupt_training(["env=corais-v1", *FAST, "steps=10000000", "eval.freq=256", f"out={tmp_path}"],
                                      marker="step 258:", signum=signal.SIGINT)
    assert code == 130, output
    run_dir = next(tmp_path.glob("corais-v1__ppo_mask__0__*"))
    assert (run_dir / "model.zip").is_file()
    assert list((run_dir / "checkpoints").glob("model_interrupted_*_steps.zip")), output


def test_ppo_native__maskable_ppo_takes_multidiscrete_without_masks_but_not_discrete():
    check_action_space(ALGOS["ppo_mask"], spaces.MultiDiscrete([3, 4]), "X-v0", has_masks_method=False)
    with pytest.raises(ValueError, match="action_masks"):
        check_action_space(ALGOS["ppo_mask"], spaces.Discrete(3), "X-v0", has_masks_method=False)


def test_ppo_native__auto_policy_follows_the_observation_space():
    box = spaces.Box(0, 1, (3,))
    assert resolve_policy_name("auto", spaces.Dict({"a": box})) == "MultiInputPolicy"
    assert resolve_policy_name("auto", box) == "MlpPolicy"
    assert resolve_policy_name("CnnPolicy", box) == "CnnPolicy"


@pytest.mark.parametrize("masked", [False, True])
def test_ppo_native__grouped_multicategorical_matches_sb3_contribs_distribution(masked: bool):
    """The batched distribution train.py swaps in for MultiDiscrete MaskablePPO: same log-probs, entropies, modes
    and gradients as sb3-contrib's per-head one (OINC's head sizes 12, 4, 4), samples only where the mask allows."""
    import numpy as np
    from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

    dims = [12, 4, 4] * 5
    torch.manual_seed(0)
    logits = torch.randn(9, sum(dims), requires_grad=True)
    masks = np.random.default_rng(0).random((9, sum(dims))) > 0.4
    masks[:, np.concatenate([[0], np.cumsum(dims)[:-1]])] = True  # every head keeps an action
    ours, theirs = grouped_multicategorical()(dims), MaskableMultiCategoricalDistribution(dims)
    ours.proba_distribution(logits), theirs.proba_distribution(logits)
    if masked:
        ours.apply_masking(masks), theirs.apply_masking(masks)
    actions = ours.sample()
    assert actions.shape == (9, len(dims))
    if masked:
        flat = actions + torch.as_tensor(np.concatenate([[0], np.cumsum(dims)[:-1]]))
        assert masks[np.arange(9)[:, None], flat.numpy()].all()
    torch.testing.assert_close(ours.log_prob(actions), theirs.log_prob(actions))
    torch.testing.assert_close(ours.entropy(), theirs.entropy())
    torch.testing.assert_close(ours.mode(), theirs.mode())
    grads = [torch.autograd.grad((d.log_prob(actions) + d.entropy()).sum(), logits)[0] for d in (ours, theirs)]
    torch.testing.assert_close(*grads)
