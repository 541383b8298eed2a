"""Resumable experiments (edge_sched_gym.points): a sweep point finished by an earlier run into the same out= is
reused when its config and code match, so a killed run loses at most the point it was running."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from edge_sched_gym import CONF_DIR, points
from edge_sched_gym import evaluate as evaluate_cli

SWEEP = ("sweeps=[{name: load, parameter: env.kwargs.scenario_overrides.mean_arrival_prob, values: [0.2, 0.4, 0.6], "
         "metrics: [profit_mean]}]")
BASE = ["env=uec-v0", "env.kwargs.scenario=tiny", "policies=[pickconfigs,random]", "instances=1", "episodes=2",
        "seed=3", SWEEP]


def _cfg(out: Path, *extra: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose("evaluate", overrides=["progress=false", *BASE, f"out={out}", *extra])


#: wall-clock columns: the only ones two runs of the same point may differ in
TIMING = ("decision_us", "decisions_per_s")


def _rows(out: Path) -> list[dict]:
    with (out / "load.csv").open() as f:
        return [{k: v for k, v in row.items() if k not in TIMING} for row in csv.DictReader(f)]


@pytest.fixture
def counted(monkeypatch):
    """Counts the points evaluate.py actually evaluates (and can kill the run at the n-th)."""
    calls: list[str] = []
    real = evaluate_cli.evaluate_once
    state = {"kill_at": None}

    def once(cfg, out_dir):
        calls.append(out_dir.name)
        if state["kill_at"] == len(calls):
            raise KeyboardInterrupt
        return real(cfg, out_dir)

    monkeypatch.setattr(evaluate_cli, "evaluate_once", once)
    return calls, state


def test_a_killed_sweep_resumes_at_the_point_in_flight_and_gives_the_same_table(tmp_path, counted):
    calls, state = counted
    reference = tmp_path / "reference"
    evaluate_cli.run(_cfg(reference))
    assert calls == ["0.2", "0.4", "0.6"]
    calls.clear()
    out = tmp_path / "resumed"
    state["kill_at"] = 2  # killed while the second point runs
    with pytest.raises(evaluate_cli.EvaluationInterrupted):
        evaluate_cli.run(_cfg(out))
    assert (out / "load" / "0.2" / points.POINT_FILE).is_file()
    assert not (out / "load" / "0.4" / points.POINT_FILE).exists()  # the point in flight is not marked finished
    calls.clear()
    state["kill_at"] = None
    evaluate_cli.run(_cfg(out))
    assert calls == ["0.4", "0.6"]  # the finished point is reused, only the lost one and the rest run
    assert _rows(out) == _rows(reference)


def test_a_changed_config_or_reuse_false_runs_every_point_again(tmp_path, counted):
    calls, _ = counted
    out = tmp_path / "out"
    evaluate_cli.run(_cfg(out))
    calls.clear()
    evaluate_cli.run(_cfg(out, "episodes=3"))  # another config: nothing is reused
    assert calls == ["0.2", "0.4", "0.6"]
    calls.clear()
    evaluate_cli.run(_cfg(out, "episodes=3", "reuse=false"))
    assert calls == ["0.2", "0.4", "0.6"]
    calls.clear()
    evaluate_cli.run(_cfg(out, "episodes=3"))
    assert calls == []


def test_a_damaged_file_or_another_config_is_not_reused(tmp_path):
    cfg = _cfg(tmp_path)
    key = points.fingerprint(cfg)
    assert key == points.fingerprint(_cfg(tmp_path / "elsewhere", "progress=true"))  # out= is not part
    assert key != points.fingerprint(_cfg(tmp_path, "episodes=3"))
    points.save_point(tmp_path, key, [{"policy": "x", "profit_mean": float("nan")}], "commit-a")
    assert points.load_point(tmp_path, key)[0]["policy"] == "x"
    (tmp_path / points.POINT_FILE).write_text('{"fingerprint": ')  # a half-written file (never left by save_point)
    assert points.load_point(tmp_path, key) is None
    (tmp_path / points.POINT_FILE).write_text(json.dumps({"fingerprint": key, "rows": "not rows"}))
    assert points.load_point(tmp_path, key) is None


def test_a_point_is_reused_until_a_file_its_code_used_changes(tmp_path, monkeypatch):
    """The code is checked file by file: an edit of a module the point imported, of package data, or another library
    version invalidates it; a module it never imported (another problem's code, a test) or a new model does not."""
    root = tmp_path / "project"
    (root / "envs").mkdir(parents=True)
    (root / "agents").mkdir()
    used = root / "envs" / "used_by_point.py"
    used.write_text("VALUE = 1\n")
    (root / "agents" / "model.bin").write_bytes(b"weights")
    monkeypatch.syspath_prepend(str(root / "envs"))
    import importlib

    importlib.import_module("used_by_point")
    other = root / "envs" / "oinc"  # another problem's code, imported by the registry: not a UEC point's code
    other.mkdir()
    (other / "oinc_code_for_test.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(other))
    importlib.import_module("oinc_code_for_test")
    folder, key = tmp_path / "point", "k"
    points.save_point(folder, key, [{"policy": "x"}], "commit-a", root=root, env_id="UEC-v0")
    recorded = json.loads((folder / points.POINT_FILE).read_text())["code_state"]["files"]
    assert "envs/used_by_point.py" in recorded and "envs/oinc/oinc_code_for_test.py" not in recorded
    (other / "oinc_code_for_test.py").write_text("X = 2\n")
    assert points.load_point(folder, key, root=root) == [{"policy": "x"}]
    assert points.load_point(folder, key, root=root) == [{"policy": "x"}]
    (root / "envs" / "unrelated.py").write_text("OTHER = 2\n")  # code the point never imported
    assert points.load_point(folder, key, root=root) == [{"policy": "x"}]
    used.write_text("VALUE = 2\n")  # the point's own code changed
    assert points.load_point(folder, key, root=root) is None
    used.write_text("VALUE = 1\n")
    assert points.load_point(folder, key, root=root) is not None
    (root / "agents" / "model.bin").write_bytes(b"other weights")  # package data changed
    assert points.load_point(folder, key, root=root) is None
    (root / "agents" / "model.bin").write_bytes(b"weights")
    (root / "agents" / "new_model.bin").write_bytes(b"new")  # a newly shipped model: only a config naming it reads it
    assert points.load_point(folder, key, root=root) is not None
    real = points.code_state(root)
    monkeypatch.setattr(points, "library_versions", lambda: {**real["libraries"], "numpy": "0"})
    assert points.load_point(folder, key, root=root) is None  # another library version
    monkeypatch.undo()
    before = points.code_state(root)
    used.write_text("VALUE = 3\n")  # edited while a point runs: the process may have run either version
    points.save_point(folder, key, [{"policy": "x"}], "commit-a", root=root, before=before)
    assert points.load_point(folder, key, root=root) is None
    sys.modules.pop("used_by_point", None)
    sys.modules.pop("oinc_code_for_test", None)


def test_reuse_must_be_a_bool(tmp_path):
    with pytest.raises(ValueError, match="reuse"):
        evaluate_cli.run(_cfg(tmp_path, "reuse=maybe"))
    assert not tmp_path.joinpath("load").exists()
