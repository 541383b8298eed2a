"""train.py end to end on UEC-v0 (subprocess smoke runs, SIGINT), save/load, seeding."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import interrupt_training
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger

import envs  # noqa: F401  (registers UEC-v0)
from agents.dqn import MaskedDQN
from agents.loading import load_run_config, load_run_model, load_run_policy
from agents.masking import infer_mask_dim
from agents.sac import DiscreteSAC
from offline.protocol import run_episode

NO_REFERENCE = ["eval.reference=false", "eval.bound=false"]
ROOT = Path(__file__).resolve().parents[2]
SMALL = ["algo.learning_starts=100", "algo.batch_size=32", "algo.policy_kwargs.net_arch=[32,32]",
         "eval.episodes=2", "eval.freq=150", "checkpoint_freq=200", "progress=false"]


def train_cli(args: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "train.py", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kwargs)


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory) -> dict[str, tuple[Path, list[str]]]:
    """`train.py env=uec-v0 algo=<sac|dqn> steps=300` once per algo, run side by side."""
    out = tmp_path_factory.mktemp("runs")
    procs = {algo: train_cli(["env=uec-v0", f"algo={algo}", "steps=300", f"out={out}", *SMALL, *extra])
             for algo, extra in (("sac", []), ("dqn", NO_REFERENCE))}
    results = {}
    for algo, proc in procs.items():
        stdout, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, stdout
        lines = stdout.strip().splitlines()
        results[algo] = (Path(lines[-2].removeprefix("run folder: ")), lines)
    return results


@pytest.mark.parametrize("algo", ["sac", "dqn"])
def test_train__uec_smoke_run_writes_a_complete_run_folder(smoke_runs, algo: str):
    run_dir, lines = smoke_runs[algo]
    assert run_dir.name.startswith(f"uec-v0__{algo}__0__")
    assert lines[-1] == f"tensorboard --logdir {run_dir.parent}"
    for name in ("config.yaml", "model.zip", "eval.csv", "progress.csv", "train.log", "checkpoints/model_200_steps.zip"):
        assert (run_dir / name).is_file(), name
    assert list(run_dir.glob("events.out.tfevents.*"))
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir)).Reload()
    tags = events.Tags()["scalars"]
    assert {"eval/mean_reward", "env/episode_profit", "rollout/ep_rew_mean", "time/fps"} <= set(tags)
    assert events.Scalars("eval/mean_reward")[-1].step == 300  # x-axis = env steps
    if algo == "sac":  # realised profit / OPT(LP) of the instance
        ratio = events.Scalars("env/competitive_ratio")[-1].value
        profit = events.Scalars("env/episode_profit")[-1].value
        assert 0 < ratio < 1 and profit > 0


@pytest.mark.parametrize("algo", ["sac", "dqn"])
def test_train__loaded_run_is_a_policy_that_only_takes_feasible_actions(smoke_runs, algo: str):
    run_dir, _ = smoke_runs[algo]
    env = gym.make("UEC-v0")
    policy = load_run_policy(run_dir, env)
    result = run_episode(env, policy, seed=5, keep_step_infos=True)
    assert result.decisions > 0
    assert not any(info["invalid_action"] for info in result.step_infos)
    again = run_episode(env, load_run_policy(run_dir, env), seed=5)
    assert again.total_reward == result.total_reward
    if algo == "sac":  # the main job trains under NetScoreFeatures: on the bare env the policy adds them itself
        from envs.problems import wrap

        assert load_run_config(run_dir).env.wrappers == ["offline.uec.features:NetScoreFeatures"]
        wrapped = wrap(gym.make("UEC-v0"), ["offline.uec.features:NetScoreFeatures"])
        on_wrapped = run_episode(wrapped, load_run_policy(run_dir, wrapped), seed=5)
        assert on_wrapped.total_reward == result.total_reward and on_wrapped.decisions == result.decisions


def test_train__sigint_saves_a_checkpoint_and_flushes_the_logs(tmp_path):
    # wait until training is under way (first evaluation after learning starts)
    code, output = interrupt_training(["env=uec-v0", "algo=sac", "steps=1000000", f"out={tmp_path}", *SMALL,
                                       *NO_REFERENCE], marker="step 15", signum=signal.SIGINT, wait_s=240)
    assert code == 130, output
    run_dir = next(tmp_path.glob("uec-v0__sac__*"))
    checkpoints = list((run_dir / "checkpoints").glob("model_interrupted_*_steps.zip"))
    assert checkpoints and (run_dir / "model.zip").is_file(), output
    assert f"run folder: {run_dir}" in output
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir)).Reload()
    assert events.Scalars("eval/mean_reward")  # flushed before exiting
    load_run_model(checkpoints[0])  # the checkpoint is a loadable model (the safe loader)


def _small(cls, env: gym.Env, seed: int):
    kwargs = dict(learning_starts=100, batch_size=32, seed=seed, device="cpu", mask_dim=infer_mask_dim(env),
                  policy_kwargs={"net_arch": [32, 32]})
    if cls is MaskedDQN:
        kwargs.update(train_freq=1, target_update_interval=50)
    return cls("MlpPolicy", env, **kwargs)


class _Recorder(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.actions: list[int] = []

    def _on_step(self) -> bool:
        self.actions.append(int(self.locals["actions"][0]))
        return True


class _RecordingLogger(Logger):
    def __init__(self) -> None:
        super().__init__(folder=None, output_formats=[])
        self.history: list[tuple[str, float]] = []

    def record(self, key, value, exclude=None) -> None:
        if key.startswith("train/"):
            self.history.append((key, float(value)))
        super().record(key, value, exclude)


@pytest.mark.parametrize("cls", [DiscreteSAC, MaskedDQN])
def test_train__same_seed_gives_identical_actions_and_losses(cls):
    runs = []
    for _ in range(2):
        model = _small(cls, gym.make("UEC-v0"), seed=3)
        logger, recorder = _RecordingLogger(), _Recorder()
        model.set_logger(logger)
        model.learn(300, callback=recorder)
        runs.append((recorder.actions, logger.history))
    assert runs[0][0] == runs[1][0] and len(runs[0][0]) == 300
    assert runs[0][1] == runs[1][1] and any(k.endswith("loss") for k, _ in runs[0][1])
    other = _small(cls, gym.make("UEC-v0"), seed=4)
    recorder = _Recorder()
    other.learn(150, callback=recorder)
    assert recorder.actions != runs[0][0][:150]


@pytest.mark.parametrize("cls", [DiscreteSAC, MaskedDQN])
def test_train__save_load_round_trip_gives_identical_deterministic_actions(cls, tmp_path):
    env = gym.make("UEC-v0")
    model = _small(cls, env, seed=0)
    model.learn(200)
    model.save(tmp_path / "model")
    loaded = cls.load(tmp_path / "model.zip", device="cpu")
    obs = np.stack([env.reset(seed=s)[0] for s in range(50)])
    assert np.array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    assert loaded.mask_dim == model.mask_dim == env.action_space.n


def test_train__run_in_process_with_two_envs_and_a_reference_algo(tmp_path):
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = ["env=uec-v0", "algo=dqn", "steps=200", "n_envs=2", f"out={tmp_path}", *SMALL, *NO_REFERENCE]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
        reference_cfg = compose("config", overrides=["env=uec-v0", "algo=reference", "algo.policy=pickconfigs",
                                                     "eval.episodes=2", "eval.bound=false", f"out={tmp_path}"])
    run_dir = train.run(cfg, overrides=overrides)
    assert (run_dir / "model.zip").is_file()
    steps = [float(line.split(",")[0]) for line in (run_dir / "eval.csv").read_text().splitlines()[1:]]
    assert steps[-1] >= 200
    reference_dir = train.run(reference_cfg)
    assert reference_dir.name.startswith("uec-v0__reference__0__")
    policy = load_run_policy(reference_dir, gym.make("UEC-v0"))
    assert policy.name == "pickconfigs" or hasattr(policy, "act")


def test_train__unwritable_out_or_negative_seed_exits_2_before_any_run_folder(tmp_path):
    for override, message in (("out=/proc/x", "error: out=/proc/x is not writable: "),
                              ("eval.seed=-1", "error: eval.seed=-1 is invalid: expected an integer in [0, 2**32 - 1]")):
        result = subprocess.run([sys.executable, "train.py", "env=uec-v0", "algo=dqn", "steps=10",
                                 f"out={tmp_path}", override], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())
    from agents.registry import check_writable_folder

    check_writable_folder("out", tmp_path / "new" / "deeper")  # a folder still to be made is fine
    assert not (tmp_path / "new").exists()  # and the probe leaves nothing behind
    with pytest.raises(ValueError, match="is not a folder"):
        (tmp_path / "file").touch()
        check_writable_folder("out", tmp_path / "file" / "x")


def test_train__failure_before_training_starts_removes_the_run_folder(tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    def broken_bound(env_cfg):
        raise RuntimeError("bound exploded")

    monkeypatch.setattr(train, "episode_bound", broken_bound)
    overrides = ["env=uec-v0", "algo=dqn", "steps=200", f"out={tmp_path}", *SMALL, "eval.bound=true"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    with pytest.raises(RuntimeError, match="bound exploded"):
        train.run(cfg, overrides=overrides)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo=dqn", "algo.buffer_size=0"], "algo.buffer_size=0 is invalid: expected an integer in \\[1, "),
        (["algo=dqn", "algo.tau=2.0"], r"algo.tau=2.0 is invalid: expected a number in \(0, 1\]"),
        (["algo=dqn", "algo.exploration_initial_eps=0.2", "algo.exploration_final_eps=0.5"],
         r"algo.exploration_final_eps=0.5 is invalid: expected a number in \[0, algo.exploration_initial_eps=0.2\]"),
        (["algo=corais_uec", "algo.eval_seed=-1"], r"algo.eval_seed=-1 is invalid: expected an integer in \[0, 2\*\*32 - 1\]"),
    ],
)
def test_train__algo_ranges_missing_before_are_checked(overrides: list[str], message: str):
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["env=uec-v0", *overrides])
    with pytest.raises(ValueError, match=message):
        train.prepare(cfg, overrides=overrides)


def test_train__native_vector_env_trains_sb3_and_counts_every_sub_env_step(tmp_path):
    """vec_env=native: UEC-v0's batched VectorEnv through the SB3 adapter; steps are summed over sub-envs."""
    proc = train_cli(["env=uec-v0", "algo=dqn", "steps=400", "n_envs=4", "vec_env=native", f"out={tmp_path}",
                      *SMALL, *NO_REFERENCE])
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout
    run_dir = Path(stdout.strip().splitlines()[-2].removeprefix("run folder: "))
    model = load_run_model(run_dir / "model.zip")
    assert model.num_timesteps == 400 and model.n_envs == 4
    import pandas as pd

    progress = pd.read_csv(run_dir / "progress.csv")
    assert progress["rollout/ep_rew_mean"].notna().any()  # VecMonitor saw whole episodes
