"""agents.oinc.table2: Table II's seven pairs with the SAC-D rows aggregated over training runs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from agents.oinc.table2 import LEARNED_ROWS, Table2Config, bootstrap_mean_ci, table2
from offline.oinc import TABLE2, evaluate_policies

TINY_TRAINING = ["env=oinc-v0", "algo=sac", "steps=150", "checkpoint_freq=100", "algo.learning_starts=100", "env.kwargs.scenario=tiny",
                 "env.kwargs.observation=extended", "env.kwargs.resample_instance=true", "progress=false",
                 "eval.freq=100000", "eval.episodes=1", "eval.reference=false", "eval.bound=false"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> list[Path]:
    """Two tiny SAC-D runs (seeds 0 and 1) trained across instances with the extended observation."""
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    out = tmp_path_factory.mktemp("runs")
    runs = []
    for seed in (0, 1):
        overrides = [*TINY_TRAINING, f"seed={seed}", f"out={out}"]
        with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=overrides)
        runs.append(train.run(cfg, overrides=overrides))
    return runs


def test_table2__bootstrap_ci_over_runs_brackets_the_mean_and_is_zero_when_runs_agree():
    rng = np.random.default_rng(0)
    matrix = rng.normal(1.0, 0.2, size=(5, 8))
    mean, lo, hi = bootstrap_mean_ci(matrix, reps=500)
    assert mean == pytest.approx(matrix.mean())
    assert lo < mean < hi
    same = np.tile(rng.normal(size=8), (3, 1))  # every run scores the same on each episode
    assert bootstrap_mean_ci(same, reps=200)[1:] == pytest.approx((same.mean(), same.mean()))


def test_table2__seven_pairs_learned_rows_over_runs_heuristics_as_evaluated(two_runs, tmp_path):
    rows = table2(Table2Config(runs=[str(r) for r in two_runs], instances=2, episodes=1, reps=200, out=str(tmp_path)))
    assert [r["policy"] for r in rows] == list(TABLE2)
    assert sum(r["lowest_latency"] for r in rows) == 1
    lowest = min(r["inference_latency_s"] for r in rows)
    assert next(r for r in rows if r["lowest_latency"])["inference_latency_s"] == lowest
    with (tmp_path / "per_run.csv").open() as handle:
        per_run = list(csv.DictReader(handle))
    assert len(per_run) == len(LEARNED_ROWS) * 2
    for row in rows:
        for m in ("inference_latency_s", "retraining_completion_s"):
            assert row[f"{m}_lo"] <= row[m] + 1e-12 and row[m] <= row[f"{m}_hi"] + 1e-12
        if row["policy"] in LEARNED_ROWS:
            assert row["runs"] == 2 and row["inference"] == "SAC-D"
            seeds = [float(r["inference_latency_s"]) for r in per_run if r["policy"] == row["policy"]]
            assert row["inference_latency_s"] == pytest.approx(np.mean(seeds))  # equal episodes per run
            assert row["inference_latency_s_seed_lo"] == pytest.approx(min(seeds))
    # the heuristic rows are exactly what evaluate_policies gives on the same fixed instances
    again = evaluate_policies({"scenario": "tiny", "observation": "extended"}, ["liu_aret", "kalmia"], instances=2,
                              episodes=1, seed=0, out_dir=tmp_path / "again", progress=False)
    by_name = {r["policy"]: r for r in rows}
    for r in again:
        assert by_name[r["policy"]]["inference_latency_s"] == pytest.approx(r["inference_latency_s"])
        assert by_name[r["policy"]]["retraining_completion_s"] == pytest.approx(r["retraining_completion_s"])
    for name in ("table2.csv", "table2.md", "table2.png", "command.txt", "evaluation/oinc_episodes.csv"):
        assert (tmp_path / name).is_file(), name


def test_table2__runs_of_another_env_or_setting_are_refused_before_writing(two_runs, tmp_path):
    other = tmp_path / "uec_run"
    other.mkdir()
    (other / "config.yaml").write_text("env: {id: UEC-v0, kwargs: {}}\nalgo: {name: sac}\nseed: 0\nsteps: 1\n")
    with pytest.raises(ValueError, match="OINC-v0"):
        table2(Table2Config(runs=[str(two_runs[0]), str(other)], out=str(tmp_path / "out")))
    assert not (tmp_path / "out").exists()


def test_table2__a_checkpoint_of_every_run_is_evaluated_and_its_steps_reported(two_runs, tmp_path):
    checkpoints = sorted((two_runs[0] / "checkpoints").glob("model_*_steps.zip"))
    assert checkpoints, "the tiny runs save a checkpoint"
    name = checkpoints[0].name
    table2(Table2Config(runs=[str(r) for r in two_runs], checkpoint=name, instances=1, episodes=1, reps=100,
                        out=str(tmp_path)))
    with (tmp_path / "per_run.csv").open() as handle:
        per_run = list(csv.DictReader(handle))
    steps = int(name.split("_")[-2])
    assert {int(r["steps"]) for r in per_run} == {steps}
    assert all(r["model"].endswith(name) for r in per_run)
    with pytest.raises(ValueError, match="checkpoint="):
        table2(Table2Config(runs=[str(r) for r in two_runs], checkpoint="model_9_steps.zip", out=str(tmp_path / "x")))
