"""agents.compare: rliable's IQM and probability of improvement against the best baseline, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from agents.compare import CompareConfig, compare, expand_runs, improvement_over, interval_estimates


def test_compare__iqm_is_the_mean_of_the_middle_runs_with_a_ci_around_it():
    scores = {"a": np.array([[1.10], [1.30], [1.15], [1.25], [1.20]]), "b": np.array([[0.9], [1.0], [1.1], [0.5], [2.0]])}
    out = interval_estimates(scores, reps=500)
    assert out["a"]["iqm"] == pytest.approx(1.20)  # 5 runs: the lowest and highest are trimmed
    assert out["b"]["iqm"] == pytest.approx(1.0)
    for name in scores:
        assert out[name]["iqm_lo"] <= out[name]["iqm"] <= out[name]["iqm_hi"]


def test_compare__probability_of_improvement_counts_runs_above_the_reference_ties_half():
    scores = {"all": np.full((4, 1), 1.2), "none": np.full((4, 1), 0.8), "half": np.array([[1.2], [1.2], [0.8], [0.8]]),
              "ties": np.ones((4, 1))}
    out = improvement_over(scores, 1.0, reps=300)
    assert out["all"]["p_improvement"] == pytest.approx(1.0)
    assert out["none"]["p_improvement"] == pytest.approx(0.0)
    assert out["half"]["p_improvement"] == pytest.approx(0.5)
    assert out["ties"]["p_improvement"] == pytest.approx(0.5)


def test_compare__patterns_that_match_no_run_folder_are_refused(tmp_path):
    with pytest.raises(ValueError, match="matches no training run folder"):
        expand_runs([str(tmp_path / "nothing*")])
    with pytest.raises(ValueError, match="runs is empty"):
        expand_runs([])
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("env: {id: OINC-v0, kwargs: {}}\nalgo: {name: sac}\nseed: 0\n")
    with pytest.raises(ValueError, match="trained on"):
        compare(CompareConfig(runs=[str(tmp_path / "run")], env_id="UEC-v0", out=str(tmp_path / "out")))
    assert not (tmp_path / "out").exists()
