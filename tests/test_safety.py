"""Safe to run (issue 26): loading never runs code from a file, generated files go where the user says, resume is
exact about what exists, and bad input never gives a raw traceback. A friend of tests/test_bad_input.py.

Every crafted payload below would create a marker file when unpickled (``_Payload``); each loader must refuse it
with the project's own error (:class:`agents.loading.UnsafeFileError`, a ValueError, so the command lines print
one ``error:`` line and exit 2) and the marker must not exist afterwards.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import logging
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import envs  # noqa: F401  (registers the ids)
from agents.loading import (
    PRETRAINED_DIR,
    ModelFileError,
    UnsafeFileError,
    load_replay_buffer,
    load_run_policy,
    load_sb3_model,
    replay_buffer_file,
    save_replay_buffer,
    strip_pickles,
)
from agents.masking import infer_mask_dim
from agents.sac import DiscreteSAC

ROOT = Path(__file__).resolve().parents[1]
CONF = str(ROOT / "edge_sched_gym" / "conf")


class _Payload:
    """Unpickling this runs ``exec`` of code that writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def _pickled(marker: Path) -> dict[str, str]:
    """An SB3 ``data`` entry holding the payload, as SB3 writes pickled entries."""
    return {":type:": "<class 'object'>", ":serialized:": base64.b64encode(pickle.dumps(_Payload(marker))).decode()}


def _train_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=overrides)


def _evaluate_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("evaluate", overrides=["progress=false", *overrides])


TINY = ["env=uec-v0", "algo=sac", "env.kwargs.scenario=tiny", "steps=1000", "env.algo_wrappers.sac=[]"]  # a bare-env model


def _tiny_model() -> tuple[DiscreteSAC, gym.Env]:
    env = gym.make("UEC-v0", scenario="tiny")
    model = DiscreteSAC("MlpPolicy", env, mask_dim=infer_mask_dim(env), seed=0, device="cpu", buffer_size=64,
                        learning_starts=10, batch_size=8, policy_kwargs={"net_arch": [8]})
    return model, env


def _zip_bytes(model: Any) -> bytes:
    buffer = io.BytesIO()
    model.save(buffer)
    return buffer.getvalue()


def _rewrite(raw: bytes, data: dict | None = None, members: dict[str, bytes] | None = None) -> bytes:
    """``raw`` (a model.zip) with its ``data`` JSON and/or other members replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as archive, zipfile.ZipFile(out, "w") as target:
        for item in archive.infolist():
            payload = archive.read(item.filename)
            if item.filename == "data" and data is not None:
                payload = json.dumps(data).encode()
            if members and item.filename in members:
                payload = members[item.filename]
            target.writestr(item.filename, payload)
    return out.getvalue()


def _data(raw: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return json.loads(archive.read("data"))


def _run_folder(tmp_path: Path, raw: bytes, name: str = "run", overrides: list[str] = TINY) -> Path:
    """A training run folder (config.yaml as train.py saves it) with ``raw`` as its model.zip."""
    from edge_sched_gym import train

    run_dir = tmp_path / name
    run_dir.mkdir(parents=True)
    OmegaConf.save(train.prepare(_train_cfg(overrides)).cfg, run_dir / "config.yaml")
    (run_dir / "model.zip").write_bytes(raw)
    return run_dir


# ------------------------------------------------------------------------------------------- model.zip

def test_safety__a_pickled_entry_outside_the_allow_list_is_refused_naming_file_and_key(tmp_path):
    marker = tmp_path / "marker.txt"
    model, env = _tiny_model()
    raw = _zip_bytes(model)
    crafted = _rewrite(raw, data={**_data(raw), "evil": _pickled(marker)})
    run_dir = _run_folder(tmp_path, crafted)
    with pytest.raises(UnsafeFileError, match=r"model.zip.*'evil' is a pickled object"):
        load_run_policy(run_dir, env)
    assert not marker.exists()
    # the payload is real: SB3's own loader runs it
    DiscreteSAC.load(io.BytesIO(crafted))
    assert marker.read_text() == "pwned"


def test_safety__payloads_in_entries_the_loader_rebuilds_are_never_decoded(tmp_path):
    marker = tmp_path / "marker.txt"
    model, env = _tiny_model()
    raw = _zip_bytes(model)
    data = _data(raw)
    for key in ("policy_class", "observation_space", "action_space", "lr_schedule", "_last_obs", "ep_info_buffer"):
        data[key] = {**(data[key] or {":type:": "<class 'object'>"}), ":serialized:": _pickled(marker)[":serialized:"]}
    run_dir = _run_folder(tmp_path, _rewrite(raw, data=data))
    policy = load_run_policy(run_dir, env)
    obs, info = env.reset(seed=3)
    reference = DiscreteSAC.load(io.BytesIO(raw))
    assert policy.act(obs, info) == int(reference.predict(obs, deterministic=True)[0])
    assert not marker.exists()


def test_safety__a_tensor_file_that_needs_unpickling_and_a_foreign_class_are_refused(tmp_path):
    marker = tmp_path / "marker.txt"
    model, env = _tiny_model()
    raw = _zip_bytes(model)
    evil = io.BytesIO()
    torch.save(_Payload(marker), evil)
    with pytest.raises(UnsafeFileError, match="not weights-only"):
        load_run_policy(_run_folder(tmp_path, _rewrite(raw, members={"policy.pth": evil.getvalue()}), "a"), env)
    data = _data(raw)
    data["policy_kwargs"] = {**data["policy_kwargs"], "head": "os:system"}
    with pytest.raises(UnsafeFileError, match=r"policy_kwargs.head='os:system' is not on the allow-list"):
        load_run_policy(_run_folder(tmp_path, _rewrite(raw, data=data), "b"), env)
    data = _data(raw)
    data["env"] = "antigravity:Nope-v0"
    with pytest.raises(UnsafeFileError, match="'env' entry"):
        load_run_policy(_run_folder(tmp_path, _rewrite(raw, data=data), "c"), env)
    assert not marker.exists()


def test_safety__truncated_or_foreign_model_files_give_the_projects_error(tmp_path):
    model, env = _tiny_model()
    raw = _zip_bytes(model)
    with pytest.raises(ModelFileError, match="truncated"):
        load_run_policy(_run_folder(tmp_path, raw[: len(raw) // 2], "a"), env)
    with pytest.raises(ModelFileError, match="shape"):
        load_sb3_model(_run_folder(tmp_path, raw, "b") / "model.zip", DiscreteSAC,
                       observation_space=gym.spaces.Box(0, 1, (3,)), action_space=env.action_space)


def test_safety__evaluate_py_refuses_a_crafted_run_with_one_error_line(tmp_path):
    marker = tmp_path / "marker.txt"
    model, _ = _tiny_model()
    raw = _zip_bytes(model)
    run_dir = _run_folder(tmp_path, _rewrite(raw, data={**_data(raw), "evil": _pickled(marker)}))
    result = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "env=uec-v0", "env.kwargs.scenario=tiny",
                             f"policies=[{run_dir}]", "instances=1", "episodes=1", "progress=false",
                             f"out={tmp_path / 'out'}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "error: refusing to load" in result.stderr and "'evil'" in result.stderr
    assert "Traceback" not in result.stderr and not marker.exists() and not (tmp_path / "out").exists()


def test_safety__evaluate_py_leaves_no_folder_when_a_tensor_file_is_refused_at_load(tmp_path):
    from edge_sched_gym import evaluate

    marker = tmp_path / "marker.txt"
    model, _ = _tiny_model()
    raw = _zip_bytes(model)
    run_dir = _run_folder(tmp_path, _rewrite(raw, members={"policy.pth": pickle.dumps(_Payload(marker))}))
    cfg = _evaluate_cfg(["env=uec-v0", "env.kwargs.scenario=tiny", f"policies=[{run_dir}]", "instances=1", "episodes=1",
                         f"out={tmp_path / 'out'}"])
    with pytest.raises(ValueError, match="not weights-only"):
        evaluate.run(cfg)
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_safety__a_run_config_naming_a_wrapper_module_beside_it_is_refused_before_import(tmp_path, monkeypatch):
    from agents.loading import UnsafeFileError, load_run_config

    model, _ = _tiny_model()
    run_dir = _run_folder(tmp_path / "runs", _zip_bytes(model), name="x")
    marker = tmp_path / "marker.txt"
    (run_dir / "payload.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")
    saved = OmegaConf.load(run_dir / "config.yaml")
    saved.env.wrappers = ["runs.x.payload:W"]
    OmegaConf.save(saved, run_dir / "config.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnsafeFileError, match=r"env\.wrappers entry='runs\.x\.payload:W' is not on the allow-list"):
        load_run_config(run_dir)
    from edge_sched_gym import train

    overrides = [f"resume={run_dir}", "steps=2000", "progress=false"]
    with pytest.raises(ValueError, match=r"runs\.x\.payload"):
        train.run(_train_cfg(overrides), overrides=overrides)
    assert not marker.exists()


def test_safety__a_tampered_provenance_yaml_and_a_ladder_out_file_give_the_projects_error(tmp_path, monkeypatch):
    from agents import loading

    shipped = tmp_path / "pretrained" / "x"
    shipped.mkdir(parents=True)
    marker = tmp_path / "marker.txt"
    (shipped / "provenance.yaml").write_text(f"!!python/object/apply:os.system ['touch {marker}']\n")
    (shipped / "config.yaml").write_text("{}\n")
    (shipped / "model.zip").write_bytes(b"")
    monkeypatch.setattr(loading, "PRETRAINED_DIR", tmp_path / "pretrained")
    with pytest.raises(loading.ModelFileError, match=r"provenance\.yaml does not parse"):
        loading.pretrained_agents()
    assert not marker.exists()
    from edge_sched_gym import evaluate

    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match=r"out=.*a_file"):
        evaluate.run(_evaluate_cfg(["experiment=ladder", f"out={tmp_path / 'a_file'}"]))


# ------------------------------------------------------------------------------------------ shipped agents

@pytest.mark.parametrize("name", sorted(p.name for p in PRETRAINED_DIR.iterdir() if (p / "model.zip").is_file()))
def test_safety__shipped_agents_hold_no_pickles_and_a_tampered_copy_is_refused(name, tmp_path):
    raw = (PRETRAINED_DIR / name / "model.zip").read_bytes()
    data = _data(raw)
    assert not [k for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v], "not in the safe format"
    assert strip_pickles(raw) == strip_pickles(strip_pickles(raw))
    marker = tmp_path / "marker.txt"
    copy = tmp_path / name
    shutil.copytree(PRETRAINED_DIR / name, copy)
    (copy / "model.zip").write_bytes(_rewrite(raw, data={**data, "extra": _pickled(marker)}))
    cfg = OmegaConf.load(copy / "config.yaml")
    env = gym.make(str(cfg.env.id), **OmegaConf.to_container(cfg.env.kwargs, resolve=True))
    with pytest.raises(UnsafeFileError, match="'extra'"):
        load_run_policy(copy, env)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------- .pt files

def test_safety__crafted_uec_and_corais_model_files_are_refused_with_the_projects_error(tmp_path):
    from agents.corais.policy import load_model as load_corais
    from agents.uec.trainer import load_model as load_uec

    marker = tmp_path / "marker.txt"
    path = tmp_path / "model.pt"
    torch.save(_Payload(marker), path)
    for load in (load_uec, load_corais):
        with pytest.raises(UnsafeFileError, match="refusing to load"):
            load(path)
    path.write_bytes(pickle.dumps(_Payload(marker), protocol=2))  # the legacy (non-zip) format
    for load in (load_uec, load_corais):
        with pytest.raises(UnsafeFileError, match="refusing to load"):
            load(path)
    (tmp_path / "half.pt").write_bytes((PRETRAINED_DIR.parent / "corais" / "pretrained" / "model.pt").read_bytes()[:999])
    for load in (load_uec, load_corais):
        with pytest.raises(ModelFileError, match="truncated or damaged"):
            load(tmp_path / "half.pt")
    assert not marker.exists()


# ------------------------------------------------------------------------------------------ replay buffers

def test_safety__replay_buffers_round_trip_as_arrays_and_pickles_are_refused(tmp_path):
    model, env = _tiny_model()
    model.learn(40)
    path = save_replay_buffer(model.replay_buffer, tmp_path / "model_replay_buffer_40_steps.npz")
    with np.load(path, allow_pickle=False) as archive:  # plain arrays only
        assert {"observations", "actions", "rewards", "dones", "pos", "full"} <= set(archive.files)
    twin, _ = _tiny_model()
    load_replay_buffer(twin.replay_buffer, path)
    assert twin.replay_buffer.size() == model.replay_buffer.size() == 40
    np.testing.assert_array_equal(twin.replay_buffer.observations, model.replay_buffer.observations)

    marker = tmp_path / "marker.txt"
    crafted = tmp_path / "crafted.npz"
    np.savez(crafted, observations=np.array([_Payload(marker)], dtype=object), pos=0, full=False)
    with pytest.raises(UnsafeFileError, match="pickled objects"):
        load_replay_buffer(twin.replay_buffer, crafted)
    old = tmp_path / "model_replay_buffer_40_steps.pkl"
    old.write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(UnsafeFileError, match="never loaded"):
        load_replay_buffer(twin.replay_buffer, old)
    (tmp_path / "half.npz").write_bytes(path.read_bytes()[:200])
    with pytest.raises(ModelFileError, match="truncated or damaged"):
        load_replay_buffer(twin.replay_buffer, tmp_path / "half.npz")
    assert not marker.exists()


# ------------------------------------------------------------------------------------------------ resume

def _resumable(tmp_path: Path, steps: tuple[int, ...] = (150, 200), final: int | None = None) -> Path:
    """A run folder (tiny UEC SAC) with real checkpoints (and buffers) at ``steps`` and optionally a model.zip."""
    from edge_sched_gym import train

    run_dir = tmp_path / "uec-v0__sac__0__x"
    (run_dir / "checkpoints").mkdir(parents=True)
    OmegaConf.save(train.prepare(_train_cfg(TINY)).cfg, run_dir / "config.yaml")
    model, _ = _tiny_model()
    raw = strip_pickles(_zip_bytes(model))
    for step in steps:
        checkpoint = run_dir / "checkpoints" / f"model_{step}_steps.zip"
        checkpoint.write_bytes(_rewrite(raw, data={**_data(raw), "num_timesteps": step}))
        save_replay_buffer(model.replay_buffer, replay_buffer_file(checkpoint))
    if final is not None:
        (run_dir / "model.zip").write_bytes(_rewrite(raw, data={**_data(raw), "num_timesteps": final}))
    return run_dir


def _prepare_resume(run_dir: Path, *extra: str):
    from edge_sched_gym import train

    overrides = [f"resume={run_dir}", *extra]
    return train.prepare_resume(_train_cfg(overrides), overrides=overrides)


def test_safety__an_empty_resume_is_an_error_not_a_fresh_run(tmp_path):
    from edge_sched_gym import train

    overrides = ["resume=", f"out={tmp_path / 'runs'}"]
    with pytest.raises(ValueError, match="resume= is empty"):
        train.run(_train_cfg(overrides), overrides=overrides)
    assert not (tmp_path / "runs").exists()


def test_safety__a_finished_run_refuses_a_budget_it_reached(tmp_path):
    run_dir = _resumable(tmp_path, final=300)
    for steps in (200, 250, 300):
        with pytest.raises(ValueError, match=r"already reached step 300 \(model.zip\); expected steps > 300"):
            _prepare_resume(run_dir, f"steps={steps}")
    _, resume = _prepare_resume(run_dir, "steps=301")  # model.zip is newer than every checkpoint: it continues
    assert resume.checkpoint == run_dir / "model.zip" and resume.start_step == 300 and resume.reached == 300
    assert resume.buffer == replay_buffer_file(run_dir / "checkpoints" / "model_200_steps.zip")


def test_safety__a_damaged_newest_checkpoint_or_buffer_falls_back_saying_so(tmp_path, caplog):
    run_dir = _resumable(tmp_path)
    newest = run_dir / "checkpoints" / "model_200_steps.zip"
    intact = newest.read_bytes()
    newest.write_bytes(intact[: len(intact) // 3])
    with caplog.at_level(logging.WARNING, logger="train"):
        _, resume = _prepare_resume(run_dir, "steps=400")
    assert resume.start_step == 150 and "model_200_steps.zip" in caplog.text and "previous intact" in caplog.text
    newest.write_bytes(intact)
    buffer = replay_buffer_file(newest)
    buffer.write_bytes(buffer.read_bytes()[:100])
    _, resume = _prepare_resume(run_dir, "steps=400")
    assert resume.start_step == 150 and resume.buffer == replay_buffer_file(run_dir / "checkpoints" / "model_150_steps.zip")
    for checkpoint in (run_dir / "checkpoints").glob("model_*_steps.zip"):
        checkpoint.write_bytes(b"not a zip")
    with pytest.raises(ModelFileError, match="no intact checkpoint"):
        _prepare_resume(run_dir, "steps=400")


def test_safety__an_old_pickled_buffer_stops_the_resume_without_running_it(tmp_path):
    run_dir = _resumable(tmp_path, steps=(200,))
    checkpoint = run_dir / "checkpoints" / "model_200_steps.zip"
    replay_buffer_file(checkpoint).unlink()
    marker = tmp_path / "marker.txt"
    replay_buffer_file(checkpoint, ".pkl").write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(UnsafeFileError, match=r"is a pickle .* delete it to resume with an empty replay buffer"):
        _prepare_resume(run_dir, "steps=400")
    assert not marker.exists()


@pytest.mark.parametrize(("content", "message"), [
    (None, "no config.yaml"),
    ("{{{: not yaml", r"config.yaml does not parse"),
    ("- just\n- a list\n", r"config.yaml is not a run configuration"),
    ("env: {name: x}\nalgo: {}\n", r"config.yaml is not a run configuration"),
])
def test_safety__a_missing_or_garbage_config_yaml_is_named(tmp_path, content, message):
    run_dir = _resumable(tmp_path, steps=(200,))
    if content is None:
        (run_dir / "config.yaml").unlink()
    else:
        (run_dir / "config.yaml").write_text(content)
    with pytest.raises(ValueError, match=message):
        _prepare_resume(run_dir, "steps=400")


def test_safety__a_config_yaml_naming_another_env_is_named_before_training(tmp_path):
    from edge_sched_gym import train

    run_dir = _resumable(tmp_path, steps=(200,))
    saved = OmegaConf.load(run_dir / "config.yaml")
    other = train.prepare(_train_cfg(["env=oinc-v0", "algo=sac", "env.kwargs.scenario=tiny", "steps=1000"])).cfg
    saved.env = other.env
    OmegaConf.save(saved, run_dir / "config.yaml")
    overrides = [f"resume={run_dir}", "steps=400", "progress=false"]
    with pytest.raises(ValueError, match=r"config.yaml names env OINC-v0 .* does not fit its checkpoint"):
        train.run(_train_cfg(overrides), overrides=overrides)
    assert sorted(p.name for p in run_dir.iterdir()) == ["checkpoints", "config.yaml"]


def test_safety__rows_past_the_resumed_checkpoint_move_aside(tmp_path):
    from agents.callbacks import drop_rows_after

    path = tmp_path / "eval.csv"
    path.write_text("step,mean_reward\n0,1\n100,2\n200,3\n250,4\n300,5\n")
    assert drop_rows_after(path, 200) == 2
    assert path.read_text().splitlines() == ["step,mean_reward", "0,1", "100,2", "200,3"]
    with (tmp_path / "eval.superseded.csv").open() as handle:
        assert [r["step"] for r in csv.DictReader(handle)] == ["250", "300"]
    progress = tmp_path / "progress.csv"
    progress.write_text("time/total_timesteps,rollout/ep_rew_mean\n150,1\n250,2\n")
    assert drop_rows_after(progress, 200) == 1 and progress.read_text().count("\n") == 2
    assert drop_rows_after(tmp_path / "missing.csv", 0) == 0


# ---------------------------------------------------------------------------------------- seeds and kwargs

SEED_CASES = [("seed=4294967296", "seed"), ("seed=9223372036854775808", "seed"), ("eval.seed=4294967296", "eval.seed")]


@pytest.mark.parametrize(("override", "key"), SEED_CASES)
def test_safety__train_seeds_share_one_range_checked_before_any_folder(override, key, tmp_path):
    from edge_sched_gym import train

    with pytest.raises(ValueError, match=rf"^{key}=\d+ is invalid: expected an integer in \[0, 2\*\*32 - 1\]"):
        train.run(_train_cfg([*TINY, f"out={tmp_path / 'runs'}", override]), overrides=[override])
    assert not (tmp_path / "runs").exists()
    train.prepare(_train_cfg([*TINY, override.split("=")[0] + "=4294967295"]))  # the top of the range is fine


def test_safety__evaluate_seed_has_the_same_range(tmp_path):
    from edge_sched_gym import evaluate

    with pytest.raises(ValueError, match=r"seed=4294967296 is invalid: expected an integer in \[0, 2\*\*32 - 1\]"):
        evaluate.run(_evaluate_cfg(["seed=4294967296", f"out={tmp_path / 'out'}"]))
    assert not (tmp_path / "out").exists()


ENV_KWARG_CASES = [
    (["env=uec-v0", "algo=sac", "+env.kwargs.foo=1"], "env.kwargs.foo is not an argument of UEC-v0"),
    (["env=oinc-v0", "algo=sac", "+env.kwargs.reserved_priority=preempt"],
     "env.kwargs.reserved_priority is not an argument of OINC-v0"),
    (["env=corais-v0", "algo=corais", "+env.kwargs.foo=1"], "env.kwargs.foo is not an argument of CoRaiS-v0"),
]


@pytest.mark.parametrize(("overrides", "message"), ENV_KWARG_CASES)
def test_safety__unknown_env_kwargs_list_the_accepted_ones(overrides, message, tmp_path):
    from edge_sched_gym import evaluate, train

    with pytest.raises(ValueError, match=rf"{message}.*accepted env.kwargs: \["):
        train.run(_train_cfg([*overrides, f"out={tmp_path / 'runs'}"]), overrides=overrides)
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match=rf"{message}.*accepted env.kwargs: \["):
        evaluate.run(_evaluate_cfg([o for o in overrides if not o.startswith("algo")] + [f"out={tmp_path / 'o'}"]))
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------------- unknown keys, outputs

EVALUATE_KEY_CASES = [
    (["+quickk=1"], "quickk is not a key of evaluate.py"),
    (["experiment=papers", "quick=true", "+quickk=1"], "quickk is not a key of evaluate.py"),
    (["experiment=papers", "policies=[rescue]"], "policies is not used by the experiment runner"),
    (["experiment=ladder", "+ladder_env=[UEC-v0]"], "ladder_env is not a key of evaluate.py"),
    (["publish=maybe"], "publish=.* is invalid"),
    (["+env.foo=1"], "env.foo is not a key of the env config"),
]


@pytest.mark.parametrize(("overrides", "message"), EVALUATE_KEY_CASES)
def test_safety__evaluate_rejects_unknown_keys_before_anything_runs(overrides, message, tmp_path):
    from edge_sched_gym import evaluate

    with pytest.raises(ValueError, match=message):
        evaluate.run(_evaluate_cfg([*overrides, f"out={tmp_path / 'out'}"]))
    assert not (tmp_path / "out").exists()


def test_safety__evaluate_writes_a_checked_in_folder_only_with_publish(tmp_path):
    from edge_sched_gym import evaluate

    target = ROOT / "results" / "uec" / "default"
    before = sorted((p.name, p.stat().st_mtime_ns) for p in target.iterdir())
    with pytest.raises(ValueError, match=r"out=.*results/uec/default is invalid without publish=true"):
        evaluate.run(_evaluate_cfg(["env.kwargs.scenario=tiny", "policies=[rescue]", "instances=1", "episodes=1",
                                    f"out={target}"]))
    assert sorted((p.name, p.stat().st_mtime_ns) for p in target.iterdir()) == before


def test_safety__the_ladder_and_papers_keys_stay_accepted():
    from edge_sched_gym import evaluate

    evaluate.check_keys(_evaluate_cfg(["experiment=ladder", "ladder_envs=[UEC-v0]", "quick=true", "publish=false",
                                       "out=x"]))
    evaluate.check_keys(_evaluate_cfg(["experiment=papers", "papers=[aset]", "quick=true", "publish=false", "out=x"]))


def test_safety__train_rejects_added_unknown_keys_before_any_folder(tmp_path):
    from edge_sched_gym import train

    for override in ("+quickk=1", "+eval.foo=1"):
        with pytest.raises(ValueError, match=override.lstrip("+").split("=")[0].split(".")[-1]):
            train.run(_train_cfg([*TINY, f"out={tmp_path / 'runs'}", override]), overrides=[override])
    assert not (tmp_path / "runs").exists()


def _checked_in(paths: list[Path]) -> dict[Path, bytes]:
    found = {}
    for path in paths:
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        found.update({f: f.read_bytes() for f in files if f.is_file()})
    return found


def test_safety__a_papers_run_without_publish_writes_only_under_out(tmp_path):
    from edge_sched_gym import evaluate_papers as ep

    watched = [ROOT / "results" / "aset", ROOT / "results" / "papers", ROOT / "docs" / "papers" / "aset.md",
               ROOT / "README.md"]
    before = _checked_in(watched)
    out = tmp_path / "papers"
    summary = ep.run_papers("aset", True, out=out, experiments=["aset_fig4"], extra={"set": {"env.kwargs.horizon": 8}})
    assert summary == out / "papers" / "summary.csv"
    assert (out / "aset" / "aset_fig4.csv").is_file() and (out / "docs" / "papers" / "aset.md").is_file()
    assert "| aset |" in (out / "results-at-a-glance.md").read_text()
    assert _checked_in(watched) == before


def test_safety__benchmarks_write_the_checked_in_results_only_with_publish(tmp_path, monkeypatch, capsys):
    from benchmarks import results

    monkeypatch.setattr(results, "OUT_FILE", tmp_path / "perf.csv")
    before = results.RESULTS_FILE.read_bytes(), results.PAGE.read_bytes()
    path = results.write_rows("x", [{"quantity": "q", "value": 1.0, "unit": "s"}], command="python -m benchmarks.x")
    assert path == tmp_path / "perf.csv" and results.read_rows(path)[0]["quantity"] == "q"
    assert "publish=true" in capsys.readouterr().out
    assert (results.RESULTS_FILE.read_bytes(), results.PAGE.read_bytes()) == before
    result = subprocess.run([sys.executable, "-m", "benchmarks.results"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "publish=true writes" in result.stdout
    assert (results.RESULTS_FILE.read_bytes(), results.PAGE.read_bytes()) == before


# ------------------------------------------------------------------------------------- command lines

# train.py's and evaluate.py's bad command lines (exit 2, one error line, no folder): tests/test_bad_input.py


@pytest.mark.parametrize(("argv", "message"), [(["--foo"], "expected key=value"), (["publish=maybe"], "publish")])
def test_safety__corais_calibration_refuses_a_flag_or_an_odd_publish_before_running(argv, message):
    from benchmarks import corais_calibration

    with pytest.raises(SystemExit, match=message):
        corais_calibration.main(argv)


# ------------------------------------------------------------------- round two (issue 37): the one allow-list

def _planted(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A run folder ``runs/x`` under ``tmp_path`` with a module ``runs.x.payload`` beside its config.yaml that
    writes a marker when imported (importable: ``tmp_path`` is on sys.path and the working directory)."""
    model, _ = _tiny_model()
    run_dir = _run_folder(tmp_path / "runs", _zip_bytes(model), name="x")
    marker = tmp_path / "marker.txt"
    (run_dir / "payload.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\nW = F = object\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("runs", "runs.x", "runs.x.payload"):  # whatever an earlier test imported is forgotten afterwards
        monkeypatch.delitem(sys.modules, name, raising=False)
    return run_dir, marker


def test_safety__the_allow_list_checks_a_name_before_importing_and_allow_extends_it(tmp_path, monkeypatch, request):
    from envs import allowlist

    saved = set(allowlist.ALLOWED)
    request.addfinalizer(lambda: (allowlist.ALLOWED.clear(), allowlist.ALLOWED.update(saved)))
    _, marker = _planted(tmp_path, monkeypatch)
    for name in ("os:system", "os.system", "runs.x.payload:W", "<class 'runs.x.payload.W'>", "gymnasium.wrappers:_x",
                 "offline.uec.features"):
        with pytest.raises(allowlist.NotAllowedError, match="is not on the allow-list"):
            allowlist.import_allowed(name, "env.wrappers entry")
    assert not marker.exists() and "runs.x.payload" not in sys.modules
    from offline.uec.features import NetScoreFeatures

    assert allowlist.import_allowed("offline.uec.features:NetScoreFeatures", "x") is NetScoreFeatures
    assert allowlist.import_allowed("torch.nn.modules.activation.ReLU", "x") is torch.nn.ReLU
    import agents.loading as loading

    assert loading.ALLOWED_CLASSES is allowlist.ALLOWED  # one list, re-exported
    allowlist.allow("runs.x.payload:W")
    assert allowlist.import_allowed("runs.x.payload.W", "x") is object and marker.exists()
    for name in ("runs", "runs.x", "runs.x.payload"):
        sys.modules.pop(name, None)
    with pytest.raises(ValueError, match="allow"):
        allowlist.allow("not a name")


@pytest.mark.parametrize("where", ["algo_wrappers", "activation_fn", "features_extractor_class", "head", "env_id"])
def test_safety__a_resume_imports_nothing_its_config_names_even_when_refused(where, tmp_path, monkeypatch):
    from edge_sched_gym import train

    run_dir, marker = _planted(tmp_path, monkeypatch)
    saved = OmegaConf.load(run_dir / "config.yaml")
    if where == "algo_wrappers":
        saved.env.algo_wrappers = {"sac": ["runs.x.payload:W"]}
    elif where == "env_id":
        saved.env.id = "runs.x.payload:UEC-v0"
    else:
        saved.algo.policy_kwargs[where] = "runs.x.payload:F"
    OmegaConf.save(saved, run_dir / "config.yaml")
    overrides = [f"resume={run_dir}", "steps=10", "progress=false"]  # a refused budget, too
    with pytest.raises(ValueError, match=r"runs\.x\.payload"):
        train.run(_train_cfg(overrides), overrides=overrides)
    assert not marker.exists() and "runs.x.payload" not in sys.modules


def test_safety__compare_and_ship_refuse_a_planted_wrapper_or_env_id_before_making_an_env(tmp_path, monkeypatch):
    from agents import pretrained
    from agents.compare import CompareConfig, compare

    run_dir, marker = _planted(tmp_path, monkeypatch)
    saved = OmegaConf.load(run_dir / "config.yaml")
    saved.env.wrappers = ["runs.x.payload:W"]
    OmegaConf.save(saved, run_dir / "config.yaml")
    with pytest.raises(ValueError, match=r"env\.wrappers entry='runs\.x\.payload:W'"):
        compare(CompareConfig(runs=[str(run_dir)], env_id="UEC-v0", out=str(tmp_path / "out")))
    saved.env.wrappers = []
    saved.env.id = "runs.x.payload:UEC-v0"
    OmegaConf.save(saved, run_dir / "config.yaml")
    monkeypatch.setattr("agents.loading.PRETRAINED_DIR", tmp_path / "pretrained")
    (tmp_path / "pretrained").mkdir()
    with pytest.raises(ValueError, match=r"env\.id='runs\.x\.payload:UEC-v0' is not an env id of the problem"):
        pretrained.ship(pretrained.ShipConfig(name="x", run=str(run_dir)))
    assert not marker.exists() and "runs.x.payload" not in sys.modules
    assert not (tmp_path / "out").exists() and list((tmp_path / "pretrained").iterdir()) == []


# ------------------------------------------------------------------------------- ship names, export out

@pytest.mark.parametrize("name", [".", "..", "", "a/b", "../agents", "a..b", "Upper", "-x", "/tmp/x"])
def test_safety__ship_names_are_plain_identifiers_and_nothing_is_deleted(name, tmp_path, monkeypatch):
    from agents import pretrained

    root = tmp_path / "agents" / "pretrained"
    (root / "keep").mkdir(parents=True)
    (root / "keep" / "model.zip").write_bytes(b"x")
    monkeypatch.setattr("agents.loading.PRETRAINED_DIR", root)
    run_dir = _run_folder(tmp_path, _zip_bytes(_tiny_model()[0]))
    with pytest.raises(ValueError, match=r"name=.* is invalid: expected a plain identifier"):
        pretrained.ship(pretrained.ShipConfig(name=name, run=str(run_dir)))
    assert (root / "keep" / "model.zip").read_bytes() == b"x" and run_dir.is_dir()


def test_safety__ship_never_deletes_through_a_link_and_the_cli_says_one_line(tmp_path, monkeypatch):
    from agents import pretrained

    root = tmp_path / "pretrained"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("precious")
    (root / "evil").symlink_to(outside)
    monkeypatch.setattr("agents.loading.PRETRAINED_DIR", root)
    with pytest.raises(ValueError, match="does not resolve to a folder directly inside"):
        pretrained.shipped_folder("evil")
    assert (outside / "data.txt").read_text() == "precious"
    before = sorted(p.name for p in PRETRAINED_DIR.iterdir())
    result = subprocess.run([sys.executable, "-m", "agents.pretrained", "name=..", f"run={tmp_path}"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "error: name='..' is invalid" in result.stderr
    assert "Traceback" not in result.stderr and sorted(p.name for p in PRETRAINED_DIR.iterdir()) == before


def test_safety__export_to_a_file_or_a_checked_in_folder_is_a_clear_error(tmp_path):
    from agents.zoo.export import export_pretrained

    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match=r"out=.*a_file is not writable"):
        export_pretrained("uec-v0-sac", tmp_path / "a_file")
    with pytest.raises(ValueError, match=r"out=.* is invalid without publish=true"):
        export_pretrained("uec-v0-sac", ROOT / "results" / "zoo")
    assert not (ROOT / "results" / "zoo").exists()


# ------------------------------------------------------------------------------ tracked paths need publish

def test_safety__check_output_path_refuses_tracked_files_and_their_folders_without_publish(tmp_path):
    from offline.provenance import check_output_path

    if not (ROOT / ".git").exists():
        pytest.skip("not a git clone")
    for path in (ROOT / "results" / "corais" / "calibration.csv", ROOT / "results" / "corais" / "new.csv",
                 ROOT / "README.md", ROOT / "docs" / "x", ROOT / "results"):
        with pytest.raises(ValueError, match=r"^out=.* is invalid without publish=true"):
            check_output_path(path, publish=False)
        assert check_output_path(path, publish=True) == path
    with pytest.raises(ValueError, match=r"^dest="):
        check_output_path(ROOT / "README.md", publish=False, key="dest")
    link = tmp_path / "link"
    link.symlink_to(ROOT / "results")
    with pytest.raises(ValueError, match="publish=true"):
        check_output_path(link / "corais" / "x.csv", publish=False)  # a link into the clone counts as the clone
    for path in (ROOT / "outputs" / "x.csv", ROOT / "runs" / "x", tmp_path / "x.csv"):
        assert check_output_path(path, publish=False) == path


def test_safety__queues_refuses_a_checked_in_out_before_computing_and_makes_a_missing_folder(tmp_path, monkeypatch,
                                                                                          capsys):
    from offline.corais import queues

    calls = []
    monkeypatch.setattr(queues, "queue_rows", lambda: calls.append(1) or [{"scale": "1-1-1", "env_id": "CoRaiS-v0",
                                                                            "seeds": 1, "backlog_per_edge": 0.5,
                                                                            "edges_without_backlog": 0.5}])
    table = ROOT / "results" / "corais" / "calibration.csv"
    before = table.read_bytes()
    assert queues.main([f"out={table}"]) == 2
    assert "publish=true" in capsys.readouterr().err and table.read_bytes() == before and not calls
    (tmp_path / "a_file").write_text("")
    assert queues.main([f"out={tmp_path / 'a_file' / 'q.csv'}"]) == 2 and not calls
    assert queues.main([f"out={tmp_path / 'new' / 'deeper' / 'q.csv'}"]) == 0
    assert (tmp_path / "new" / "deeper" / "q.csv").read_text().startswith("scale,")
    import re

    suggested = re.findall(r"(\S+=\S+ )?out=results/", queues.__doc__)  # a checked-in path only with publish=true
    assert suggested and all(s.endswith("publish=true ") for s in suggested)


# ------------------------------------------------------------------------------- resume and symbolic links

@pytest.mark.parametrize("link", ["eval.csv", "checkpoints"])
def test_safety__a_resume_never_writes_through_a_link_out_of_the_run_folder(link, tmp_path):
    run_dir = _resumable(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = run_dir / link
    if link == "checkpoints":
        shutil.move(str(target), outside / "checkpoints")
        target.symlink_to(outside / "checkpoints")
    else:
        (outside / "eval.csv").write_text("step,mean_reward\n0,1\n500,2\n")
        target.symlink_to(outside / "eval.csv")
    before = _checked_in([outside])
    with pytest.raises(ValueError, match=r"holds a symbolic link .* a resume writes only inside the run folder"):
        _prepare_resume(run_dir, "steps=400")
    assert _checked_in([outside]) == before


def test_safety__a_checkpoint_target_outside_the_run_folder_is_refused(tmp_path):
    from agents.callbacks import save_checkpoint

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (run_dir / "checkpoints").symlink_to(tmp_path / "elsewhere")
    model, _ = _tiny_model()
    with pytest.raises(ValueError, match="outside the run folder"):
        save_checkpoint(model, run_dir / "checkpoints" / "model_1_steps.zip", True, root=run_dir)
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert save_checkpoint(model, tmp_path / "ok" / "model_1_steps.zip", True, root=tmp_path / "ok")


def test_safety__a_resume_continues_from_a_model_zip_newer_than_every_checkpoint_even_without_a_buffer(tmp_path,
                                                                                                       caplog):
    from agents.loading import model_steps
    from edge_sched_gym import train

    run_dir = _resumable(tmp_path, steps=(200,), final=300)
    replay_buffer_file(run_dir / "checkpoints" / "model_200_steps.zip").unlink()
    overrides = [f"resume={run_dir}", "steps=310", "progress=false"]
    with caplog.at_level(logging.WARNING, logger="train"):
        train.run(_train_cfg(overrides), overrides=overrides)
    assert "resuming from model.zip" in caplog.text and "empty one" in caplog.text
    assert model_steps(run_dir / "model.zip") == 310 and (run_dir / "checkpoints" / "model_310_steps.zip").is_file()


@pytest.mark.parametrize("overrides", [
    ["experiment=ladder", "ladder_envs=[UEC-v0]", "quick=true"],
    ["experiment=ladder", "ladder_envs=[UEC-v0]", "quick=true", "policies=[lp_bid_price]"],
    ["experiment=papers", "papers=[aset]", "quick=true"],
])
def test_safety__runner_experiments_refuse_a_checked_in_out_without_publish(overrides):
    from edge_sched_gym import evaluate

    with pytest.raises(ValueError, match=r"out=.* is invalid without publish=true"):
        evaluate.run(_evaluate_cfg([*overrides, f"out={ROOT / 'results' / 'ladder'}"]))


def test_safety__train_refuses_a_checked_in_out():
    from edge_sched_gym import train

    overrides = ["env=uec-v0", "algo=sac", "steps=100", f"out={ROOT / 'results'}"]
    before = sorted(p.name for p in (ROOT / "results").iterdir())
    with pytest.raises(ValueError, match=r"out=.* is invalid without publish=true"):
        train.run(_train_cfg(overrides), overrides=overrides)
    assert sorted(p.name for p in (ROOT / "results").iterdir()) == before
