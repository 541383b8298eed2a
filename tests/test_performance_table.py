"""The Performance table of docs/performance.md is generated from results/benchmarks/performance.csv and must match it."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.results import (
    COLUMNS,
    PAGE,
    TABLE_BEGIN,
    TABLE_END,
    markdown_table,
    page_with_table,
    read_rows,
    write_rows,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "benchmarks" / "performance.csv"


def test_docs_performance_table_equals_the_results_file():
    rows = read_rows(RESULTS)
    assert rows, "results/benchmarks/performance.csv is missing: run the benchmarks (docs/performance.md)"
    assert PAGE == ROOT / "docs" / "performance.md"
    page = PAGE.read_text(encoding="utf-8")
    assert page == page_with_table(page, rows), "docs/performance.md's table is stale: run `python -m benchmarks.results publish=true`"
    for row in rows:  # every row says where it comes from
        assert row["command"].startswith("python -m benchmarks.") and row["commit"] and row["machine"], row


def test_write_rows_replaces_one_benchmarks_rows_and_keeps_the_others(tmp_path):
    path = tmp_path / "perf.csv"
    write_rows("a", [{"quantity": "x", "value": 1.5, "unit": "s"}], path=path, command="python -m benchmarks.a")
    write_rows("b", [{"quantity": "y", "value": 2, "unit": "s", "ratio_to": "x", "ratio": 0.25}], path=path,
               command="python -m benchmarks.b")
    write_rows("a", [{"quantity": "z", "value": 3.0, "unit": "s"}], path=path, command="python -m benchmarks.a")
    rows = read_rows(path)
    assert [(r["benchmark"], r["quantity"], r["value"]) for r in rows] == [("b", "y", "2"), ("a", "z", "3")]
    assert set(rows[0]) == set(COLUMNS)
    table = markdown_table(rows)
    assert "| b | y | 2 s | 0.25 vs x |" in table and table.count("\n") == 3
    with pytest.raises(ValueError, match="quantity"):
        write_rows("a", [{"value": 1}], path=path)
    with pytest.raises(ValueError, match="markers"):
        page_with_table("no markers here", rows)
    assert page_with_table(f"a\n{TABLE_BEGIN}\nold\n{TABLE_END}\nb", rows).endswith(f"{TABLE_END}\nb")


@pytest.mark.slow  # 12 s: a benchmark's smoke run, kept out of the default suite's 8 minutes
def test_training_speed_benchmark_runs_its_worker_and_reports_learner_and_random_rates():
    """The worker snippet builds the learner as train.py does (a smoke run; no timing is asserted)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "benchmarks.training_speed", "cases=[uec-v0:dqn,corais-v1:corais]",
                           "warmup=60", "measure=60", "rounds=1", "random_seconds=0.2", "write=false"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "uec-v0:dqn" in proc.stdout and "learner/random" in proc.stdout
    assert "REINFORCE, 16 scored samples per instance" in proc.stdout  # the CoRaiS trainer's own update step
    bad = subprocess.run([sys.executable, "-m", "benchmarks.training_speed", "cases=[uec-v0]"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cases" in bad.stderr


@pytest.mark.parametrize(("options", "named"), [
    ({"cases": ["oinc-v0:oinc_prior"]}, "oinc_prior_speed"),
    ({"cases": ["corais-v1:corais@64"]}, "without @N"),
    ({"cases": ["corais-v1:corais"], "baseline": "HEAD"}, "baseline="),
])
def test_training_speed_custom_trainer_cases_are_checked_before_measuring(options, named):
    from benchmarks.training_speed import Options

    with pytest.raises(ValueError, match=named):
        Options(**options)
