"""agents.curves: a custom trainer's curve.csv and TensorBoard scalars, and a resume that never repeats a point."""

from __future__ import annotations

import math

import pytest

from agents.curves import Column, CurveLog
from benchmarks.plot_curves import load_scalars

COLUMNS = (Column("batch", "d"), Column("steps", "d"), Column("gain", ".3f", "eval/gain"), Column("note", ".1f"))


def test_curves__rows_and_tagged_scalars_share_the_step_axis(tmp_path) -> None:
    curve = CurveLog(tmp_path, COLUMNS, "steps")
    curve.add(batch=1, steps=10, gain=0.5, note=1.25)
    curve.add(batch=2, steps=20, gain=math.nan)  # a missing or non-finite value: an empty cell, no scalar
    curve.close()
    assert (tmp_path / "curve.csv").read_text().splitlines() == ["batch,steps,gain,note", "1,10,0.500,1.2", "2,20,,"]
    assert load_scalars(tmp_path)["eval/gain"] == ([10], [0.5])


def test_curves__resume_keeps_the_rows_up_to_the_checkpoint_and_appends(tmp_path) -> None:
    first = CurveLog(tmp_path, COLUMNS, "steps")
    for batch in (1, 2, 3):  # the run saved a checkpoint at step 20, logged step 30, then died
        first.add(batch=batch, steps=10 * batch, gain=float(batch))
    first.close()
    resumed = CurveLog(tmp_path, COLUMNS, "steps", resume_step=20)
    resumed.add(batch=3, steps=30, gain=33.0)
    resumed.close()
    rows = (tmp_path / "curve.csv").read_text().splitlines()
    assert [r.split(",")[1] for r in rows[1:]] == ["10", "20", "30"] and rows[-1].startswith("3,30,33.000")


def test_curves__the_step_column_must_be_a_column(tmp_path) -> None:
    with pytest.raises(ValueError, match="step_column"):
        CurveLog(tmp_path, COLUMNS, "decisions")


def test_curves__plot_curves_reads_an_older_runs_curve_csv_and_names_its_command_in_the_png(tmp_path) -> None:
    from PIL import Image

    from benchmarks.plot_curves import plot

    run = tmp_path / "uec-v0__uec_prior__3__20260101-000000"
    run.mkdir()
    (run / "curve.csv").write_text("batch,decisions,eval_mean,heuristic_mean\n0,0,99.5,99.5\n25,1000,100.25,99.5\n"
                                   "50,2000,,99.5\n")
    scalars = load_scalars(run)
    assert scalars["curve/eval_mean"] == ([0, 1000], [99.5, 100.25]) and "curve/batch" in scalars
    out = plot([run], ["curve/eval_mean"], tmp_path / "curves.png")
    assert Image.open(out).text["Description"].startswith("python -m benchmarks.plot_curves")
