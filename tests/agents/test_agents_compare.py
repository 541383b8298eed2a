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


def _fake_run(folder, algo: str, steps: int):
    folder.mkdir()
    (folder / "config.yaml").write_text(f"env: {{id: UEC-v0, kwargs: {{}}}}\nalgo: {{name: {algo}}}\nseed: 0\nsteps: {steps}\n")
    return str(folder)


def test_compare__learner_table_scores_runs_against_the_best_baseline_in_either_direction(tmp_path):
    from agents.compare import learner_table

    a, b = _fake_run(tmp_path / "a", "sac", 100), _fake_run(tmp_path / "b", "sac", 100)
    c = _fake_run(tmp_path / "c", "dqn", 100)
    rows = [{"policy": "pickconfigs", "m": 80.0}, {"policy": "random", "m": 40.0}, {"policy": a, "m": 88.0},
            {"policy": b, "m": 72.0}, {"policy": c, "m": 60.0}]
    table = {r["algo"]: r for r in learner_table(rows, ["pickconfigs", "random", a, b, c], "m", True, reps=200)}
    assert table["sac"]["runs"] == 2 and table["sac"]["mean"] == pytest.approx(1.0)  # 88/80 and 72/80
    assert table["sac"]["min"] == pytest.approx(0.9) and table["sac"]["max"] == pytest.approx(1.1)
    assert table["sac"]["p_improvement"] == pytest.approx(0.5) and table["dqn"]["mean"] == pytest.approx(0.75)
    assert table["sac"]["best_baseline"] == "pickconfigs"
    lower = learner_table(rows, ["pickconfigs", "random", a], "m", False, reps=200)  # a cost: random is best
    assert lower[0]["best_baseline"] == "random" and lower[0]["mean"] == pytest.approx(40.0 / 88.0)
    assert learner_table(rows, ["pickconfigs", "random"], "m", True) == []  # no run: no table


# slow (12 s): trains runs end to end; the table's logic is tested above, agents.compare end to end by the DAgger studies
@pytest.mark.slow
def test_compare__evaluate_py_writes_the_learner_table_for_trained_runs(tmp_path):
    from hydra import compose, initialize_config_dir

    from agents import pretrained
    from edge_sched_gym import evaluate

    conf = str(pytest.importorskip("pathlib").Path(__file__).resolve().parents[2] / "edge_sched_gym" / "conf")
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        cfg = compose("evaluate", overrides=["env=uec-v0", "policies=[pretrained:uec-v0-sac,pickconfigs,random]",
                                             "episodes=2", "progress=false", f"out={tmp_path}"])
    evaluate.run(cfg)
    import csv

    with (tmp_path / "summary.csv").open() as handle:
        summary = {r["policy"]: float(r["profit_mean"]) for r in csv.DictReader(handle)}
    with (tmp_path / "learners.csv").open() as handle:
        learners = list(csv.DictReader(handle))
    assert (tmp_path / "learners.png").is_file() and [r["algo"] for r in learners] == ["sac"]
    run = next(p for p in summary if p.endswith("uec-v0-sac"))
    best = max(summary["pickconfigs"], summary["random"])
    assert float(learners[0]["mean"]) == pytest.approx(summary[run] / best)
    assert pretrained.path("uec-v0-sac").is_dir()


def test_compare__episode_metrics_and_paired_differences_follow_the_metric_direction(tmp_path):
    """A metric the summary lacks is read per episode (``profit_mean`` is ``profit`` there); paired differences are
    run − reference per (instance, episode), and 'better' means lower for a cost."""
    from agents.compare import episode_values, paired_difference

    (tmp_path / "oinc_episodes.csv").write_text(
        "policy,instance,episode,slo_weighted_sum,profit\n"
        "base,0,0,10,1\nbase,0,1,20,2\nbase,1,0,30,3\n"
        "run,0,0,9,1\nrun,0,1,21,2\nrun,1,0,27,3\n")
    values = episode_values(tmp_path, "slo_weighted_sum")
    assert values["run"] == {("0", "0"): 9.0, ("0", "1"): 21.0, ("1", "0"): 27.0}
    assert episode_values(tmp_path, "profit_mean")["base"][("1", "0")] == 3.0
    assert episode_values(tmp_path, "nonsense") == {}
    cost = paired_difference(values, "run", "base", higher_is_better=False)
    assert cost["paired_diff"] == pytest.approx(-1.0)  # (−1 + 1 − 3) / 3
    assert (cost["episodes_better"], cost["episodes_worse"]) == (2, 1)
    assert cost["paired_diff_ci95"] > 0
    gain = paired_difference(values, "run", "base", higher_is_better=True)
    assert (gain["episodes_better"], gain["episodes_worse"]) == (1, 2)
    assert paired_difference(values, "missing", "base") == {}


def test_compare__run_kwargs_reach_the_runs_policies_only_and_name_the_group(tmp_path, monkeypatch):
    """``run_kwargs`` (e.g. the CoRaiS network inside the 100 ms search) go to every run's policy, not to the
    baselines, and the learner table's label says how the runs were played; ``env_kwargs`` update the env's."""
    import agents.loading
    import offline.runner

    runs = [_fake_run(tmp_path / f"run{i}", "sac", 100) for i in range(2)]
    made: dict[str, dict] = {}

    def fake_resolve(env_id, name, env, **kwargs):
        made[str(name)] = kwargs
        return name

    def fake_evaluate(env_id, env_kwargs, names, *, resolve, **options):
        assert env_kwargs == {"scenario": "tiny"}  # the runs' (none) updated by env_kwargs
        assert options["reference"] == "pickconfigs"  # evaluation_kwargs reach the evaluation hook
        rows = []
        for k, name in enumerate(names):
            resolve(env_id, name, None)
            rows.append({"policy": name, "profit_mean": 10.0 + k})
        return rows

    monkeypatch.setattr(agents.loading, "resolve_policy", fake_resolve)
    monkeypatch.setattr(offline.runner, "evaluate", fake_evaluate)
    table = compare(CompareConfig(runs=runs, baselines=["pickconfigs"], others=[], run_kwargs={"search_time": 0.1},
                                  env_kwargs={"scenario": "tiny"}, evaluation_kwargs={"reference": "pickconfigs"},
                                  reps=50, out=str(tmp_path / "out")))
    assert made["pickconfigs"] == {} and all(made[r] == {"search_time": 0.1} for r in runs)
    assert [row["algo"] for row in table] == ["sac (search_time=0.1)"]
    assert table[0]["mean"] == pytest.approx((11.0 / 10.0 + 12.0 / 10.0) / 2)


@pytest.mark.parametrize(("options", "named"), [
    ({"env_kwargs": {"nonsense": 1}}, "env_kwargs.nonsense"),
    ({"run_kwargs": {"search_tme": 0.1}}, "search_tme"),  # an SB3 run's policy takes no options
    ({"evaluation_kwargs": {"bogus": 1}}, "bogus"),  # the evaluation hook's options are checked too
])
def test_compare__bad_env_or_run_kwargs_fail_naming_them_before_any_output(tmp_path, options, named):
    run = _fake_run(tmp_path / "run0", "sac", 100)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=named):
        compare(CompareConfig(runs=[run], baselines=["pickconfigs"], others=[], out=str(out), **options))
    assert not out.exists()
