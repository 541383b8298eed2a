"""Stop signals and resume: SB3 runs (train.py resume=<run>) and the CoRaiS / corais_uec trainers."""

from __future__ import annotations

import csv
import os
import signal
import time
from pathlib import Path

import pytest
import torch
from conftest import interrupt_training
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from agents.callbacks import GracefulInterrupt, TrainingInterrupted
from agents.loading import latest_checkpoint, load_run_model, replay_buffer_file
from agents.sac import DiscreteSAC
from edge_sched_gym import train

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["algo.learning_starts=100", "algo.batch_size=32", "algo.policy_kwargs.net_arch=[32,32]",
         "eval.episodes=1", "eval.freq=150", "checkpoint_freq=200", "progress=false",
         "eval.reference=false", "eval.bound=false"]


def compose_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


def eval_steps(run_dir: Path) -> list[int]:
    with (run_dir / "eval.csv").open() as handle:
        return [int(float(row["step"])) for row in csv.DictReader(handle)]


def test_resume__sigterm_saves_model_checkpoint_and_buffer_then_resume_continues_the_same_logs(tmp_path):
    # wait for the evaluation after learning started (step 151), then stop it as a scheduler would
    code, output = interrupt_training(["env=uec-v0", "algo=sac", "steps=100000", f"out={tmp_path}", *SMALL],
                                      marker="step 151:", signum=signal.SIGTERM)
    assert code == 143, output
    run_dir = next(tmp_path.glob("uec-v0__sac__0__*"))
    assert "interrupted by SIGTERM" in output and f"resume={run_dir}" in output
    checkpoint, stopped_at = latest_checkpoint(run_dir)
    assert checkpoint.name == f"model_interrupted_{stopped_at}_steps.zip" and stopped_at >= 151
    assert replay_buffer_file(checkpoint).is_file() and (run_dir / "model.zip").is_file()
    assert load_run_model(run_dir / "model.zip").num_timesteps == stopped_at
    assert max(eval_steps(run_dir)) == stopped_at  # evaluated and flushed on the way out
    events_before = sorted(run_dir.glob("events.out.tfevents.*"))
    csv_rows_before = len((run_dir / "progress.csv").read_text().splitlines())

    total = stopped_at + 150
    overrides = [f"resume={run_dir}", f"steps={total}"]
    assert train.run(compose_cfg(overrides), overrides=overrides) == run_dir  # the same folder
    model = load_run_model(run_dir / "model.zip")
    assert model.num_timesteps == total
    assert f"replay buffer of {stopped_at - 1} transitions loaded" in (run_dir / "train.log").read_text()
    steps = eval_steps(run_dir)
    assert steps[-1] == total and min(s for s in steps if s > stopped_at) <= stopped_at + 1
    assert len(sorted(run_dir.glob("events.out.tfevents.*"))) == len(events_before) + 1
    assert len((run_dir / "progress.csv").read_text().splitlines()) > csv_rows_before  # appended, not rewritten
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb_steps = [e.step for e in EventAccumulator(str(run_dir)).Reload().Scalars("eval/mean_reward")]
    assert min(tb_steps) == 1 and max(tb_steps) == total  # one curve across the interruption


def _tiny_model_bytes() -> bytes:
    """A small SAC model of UEC-v0 saved in the safe format (what checkpoints hold)."""
    import io

    import gymnasium as gym

    from agents.loading import strip_pickles
    from agents.masking import infer_mask_dim

    env = gym.make("UEC-v0")
    model = DiscreteSAC("MlpPolicy", env, mask_dim=infer_mask_dim(env), seed=0, device="cpu", buffer_size=100,
                        policy_kwargs={"net_arch": [8]})
    buffer = io.BytesIO()
    model.save(buffer)
    return strip_pickles(buffer.getvalue())


def _fake_run(tmp_path: Path, algo: str = "sac", env: str = "uec-v0", checkpoint_steps: int = 200) -> Path:
    """A run folder with the config.yaml train.py saves and two checkpoint files (real models for SB3 algos)."""
    run_dir = tmp_path / f"{env}__{algo}__0__x"
    (run_dir / "checkpoints").mkdir(parents=True)
    OmegaConf.save(train.prepare(compose_cfg([f"env={env}", f"algo={algo}", "steps=1000"])).cfg,
                   run_dir / "config.yaml")
    payload = _tiny_model_bytes() if algo == "sac" else b""
    (run_dir / "checkpoints" / f"model_{checkpoint_steps}_steps.zip").write_bytes(payload)
    (run_dir / "checkpoints" / f"model_interrupted_{checkpoint_steps - 50}_steps.zip").write_bytes(payload)
    return run_dir


def test_resume__uses_the_saved_config_and_refuses_other_overrides_or_a_reached_budget(tmp_path):
    run_dir = _fake_run(tmp_path)
    prepared, resume = train.prepare_resume(compose_cfg([f"resume={run_dir}", "algo=dqn"]),
                                            overrides=[f"resume={run_dir}", "steps=5000"])
    assert prepared.spec.name == "sac" and prepared.steps == 5000  # the run's algo, not the composed dqn
    assert resume.checkpoint == run_dir / "checkpoints" / "model_200_steps.zip" and resume.start_step == 200
    with pytest.raises(ValueError, match=r"may only set \['resume', 'steps'.*not \['algo.gamma'\]"):
        train.prepare_resume(compose_cfg([f"resume={run_dir}"]), overrides=[f"resume={run_dir}", "algo.gamma=0.5"])
    with pytest.raises(ValueError, match=r"steps=200 is invalid .* reached step 200 .* expected steps > 200"):
        train.prepare_resume(compose_cfg([f"resume={run_dir}"]), overrides=[f"resume={run_dir}", "steps=200"])
    with pytest.raises(ValueError, match="is not a training run folder"):
        train.prepare_resume(compose_cfg([f"resume={tmp_path}"]), overrides=[])
    reference = _fake_run(tmp_path / "ref", algo="rescue")
    with pytest.raises(ValueError, match="nothing to resume"):
        train.prepare_resume(compose_cfg([f"resume={reference}"]), overrides=[])


def test_resume__graceful_interrupt_turns_sighup_and_sigterm_into_a_request_and_restores_handlers():
    before = signal.getsignal(signal.SIGTERM)
    for signum, code in ((signal.SIGHUP, 129), (signal.SIGTERM, 143), (signal.SIGINT, 130)):
        with GracefulInterrupt() as interrupt:
            assert not interrupt.requested and interrupt.exit_code == 0
            os.kill(os.getpid(), signum)
            time.sleep(0.05)
            assert interrupt.requested and interrupt.signum == signum and interrupt.exit_code == code
            with pytest.raises(KeyboardInterrupt):  # a second signal aborts
                os.kill(os.getpid(), signum)
                time.sleep(0.05)
    assert signal.getsignal(signal.SIGTERM) is before


def test_resume__a_signal_before_the_training_loop_polls_aborts_at_once():
    """While envs and model are still being built (nothing to save), SIGTERM must not wait for a first step."""
    with GracefulInterrupt() as interrupt, pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
    assert interrupt.signum is None


CORAIS_ALGO = {"batch_size": 4, "samples": 4, "lr_final": None, "eval_every": 100, "eval_instances": 2,
               "eval_time_limit": 0.5, "checkpoint_every": 100,
               "model": {"embed_dim": 16, "edge_layers": 1, "request_layers": 1, "heads": 2, "ff_hidden": 16}}


def test_resume__corais_trainer_stopped_by_sigterm_resumes_to_the_same_weights_as_a_straight_run(
        tmp_path, monkeypatch):
    from agents.corais import trainer
    from agents.corais.policy import load_model

    env_cfg = {"kwargs": {"scale": "tiny"}}
    straight = trainer.train(env_cfg, CORAIS_ALGO, run_dir=tmp_path / "straight", seed=0, steps=16)

    calls = {"n": 0}
    make_batch = trainer.make_batch

    def signalling_make_batch(*args, **kwargs):  # call 1: the validation set; call 3: the second batch
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return make_batch(*args, **kwargs)

    monkeypatch.setattr(trainer, "make_batch", signalling_make_batch)
    run_dir = tmp_path / "stopped"
    with pytest.raises(TrainingInterrupted) as stop:
        trainer.train(env_cfg, CORAIS_ALGO, run_dir=run_dir, seed=0, steps=16)
    assert stop.value.exit_code == 143 and stop.value.saved == run_dir / "checkpoints" / "model_interrupted_8.pt"
    assert (run_dir / "model.pt").is_file()
    monkeypatch.setattr(trainer, "make_batch", make_batch)
    with pytest.raises(ValueError, match="expected steps > 8"):
        trainer.train(env_cfg, CORAIS_ALGO, run_dir=run_dir, seed=0, steps=8, resume=True)
    resumed = trainer.train(env_cfg, CORAIS_ALGO, run_dir=run_dir, seed=0, steps=16, resume=True)
    a, b = load_model(straight)[0].state_dict(), load_model(resumed)[0].state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)  # optimiser, counters and random states were restored
    assert load_model(resumed)[1]["steps"] == 16
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 2


def test_resume__corais_uec_run_resumes_through_train_py_from_its_newest_checkpoint(tmp_path):
    from agents.uec.trainer import load_model

    overrides = ["env=uec-v0", "algo=corais_uec", "env.kwargs.scenario=tiny", "steps=60", f"out={tmp_path}",
                 "algo.seeds_per_batch=2", "algo.samples=2", "algo.eval_every=100", "algo.eval_episodes=1",
                 "algo.checkpoint_every=1", "algo.model.embed_dim=16", "algo.model.heads=2", "progress=false"]
    run_dir = train.run(compose_cfg(overrides), overrides=overrides)
    first = load_model(run_dir / "model.pt")[1]["steps"]
    resume = [f"resume={run_dir}", "steps=150"]
    assert train.run(compose_cfg(resume), overrides=resume) == run_dir
    assert first < load_model(run_dir / "model.pt")[1]["steps"] >= 150
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 2


def _eval_rows(path: Path) -> list[int]:
    with path.open() as handle:
        return [int(float(row["step"])) for row in csv.DictReader(handle)]


def test_resume__exact_about_what_exists_no_pickles_one_row_per_step_and_no_rollback(tmp_path):
    """Issue 26: the end is a checkpoint too; a reached budget is refused; rows past the resumed checkpoint move
    aside; an interrupted resume never replaces a newer model.zip; nothing saved is a pickle."""
    import json
    import zipfile

    from agents.loading import model_steps

    small = [s for s in SMALL if not s.startswith(("eval.freq", "checkpoint_freq"))]
    overrides = ["env=uec-v0", "algo=sac", "steps=300", f"out={tmp_path}", "eval.freq=100", "checkpoint_freq=200",
                 *small]
    run_dir = train.run(compose_cfg(overrides), overrides=overrides)
    checkpoints = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert checkpoints == ["model_200_steps.zip", "model_300_steps.zip", "model_replay_buffer_200_steps.npz",
                           "model_replay_buffer_300_steps.npz"]
    for model_file in [run_dir / "model.zip", *(run_dir / "checkpoints").glob("*.zip")]:
        data = json.loads(zipfile.ZipFile(model_file).read("data"))
        assert not [k for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v], model_file
    with pytest.raises(ValueError, match=r"already reached step 300"):
        train.prepare_resume(compose_cfg([f"resume={run_dir}"]), overrides=[f"resume={run_dir}", "steps=300"])

    # an older run's layout: the newest checkpoint (200) is behind model.zip (300) and eval.csv (300); the resume
    # continues from model.zip, the newest (issue 37: a newer model.zip is never discarded), rows up to 300 stay
    for name in ("model_300_steps.zip", "model_replay_buffer_300_steps.npz"):
        (run_dir / "checkpoints" / name).unlink()
    resume = [f"resume={run_dir}", "steps=400"]
    train.run(compose_cfg(resume), overrides=resume)
    steps = _eval_rows(run_dir / "eval.csv")
    assert len(steps) == len(set(steps)) and steps == sorted(steps) and steps[-1] == 400 and 300 in steps
    assert not (run_dir / "eval.superseded.csv").exists()
    assert model_steps(run_dir / "model.zip") == 400

    # only the checkpoint at 200 left, stopped early: it continues from model.zip (400) and saves a newer one
    for path in (run_dir / "checkpoints").iterdir():
        if not path.name.endswith(("_200_steps.zip", "_200_steps.npz")):
            path.unlink()
    # marker: the first evaluation after a step (the one at 401 is printed before the loop polls for signals)
    code, output = interrupt_training([f"resume={run_dir}", "steps=100000"], marker="step 501:", signum=signal.SIGTERM)
    assert code == 143, output
    assert "resuming from model.zip" in output and model_steps(run_dir / "model.zip") > 400
    steps = _eval_rows(run_dir / "eval.csv")
    assert len(steps) == len(set(steps))
