"""ASET's DQN study (agents.aset.study) and the observation ablations it evaluates (agents.loading)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from agents.aset.study import StudyConfig, learned_rows, study
from agents.compare import learner_table
from agents.loading import AblatedObservation, resolve_policy, split_ablation
from edge_sched_gym import evaluate
from envs.aset.env import ASETEnv
from offline.aset import evaluate_policies
from offline.protocol import run_episode

PRETRAINED = Path(__file__).resolve().parents[2] / "agents" / "pretrained" / "aset-v0-dqn"


class _Recorder:
    """A policy that records the observations it is given and always plays action 6."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []

    def reset(self, env, seed=None) -> None:
        self.seen = []

    def act(self, obs, info) -> int:
        self.seen.append(np.array(obs, copy=True))
        return 6


def _observations(env: ASETEnv, steps: int) -> list[np.ndarray]:
    obs, _ = env.reset(seed=3)
    out = [obs]
    for _ in range(steps - 1):
        obs, *_ = env.step(6)
        out.append(obs)
    return out


def test_ablation__names_split_only_for_known_modes():
    assert split_ablation("zeroed-obs:runs/x") == ("zeroed-obs", "runs/x")
    assert split_ablation("shuffled-obs:pretrained:aset-v0-dqn") == ("shuffled-obs", "pretrained:aset-v0-dqn")
    assert split_ablation("pretrained:aset-v0-dqn") == (None, "pretrained:aset-v0-dqn")
    assert split_ablation("closest") == (None, "closest")
    with pytest.raises(ValueError, match="mode"):
        AblatedObservation(_Recorder(), "blurred-obs", "x")


def test_ablation__zeroed_gives_zeros_and_shuffled_gives_earlier_observations_of_the_episode():
    env = ASETEnv(topology="dc-cloud", horizon=12, theta=0.0)
    real = _observations(env, 12)
    zeroed = AblatedObservation(_Recorder(), "zeroed-obs", "z")
    run_episode(env, zeroed, seed=3)
    assert len(zeroed.policy.seen) == 12 and all(not o.any() for o in zeroed.policy.seen)
    shuffled = AblatedObservation(_Recorder(), "shuffled-obs", "s")
    run_episode(env, shuffled, seed=3)
    given = shuffled.policy.seen
    for t, obs in enumerate(given):  # always a real observation of this episode, never a later one
        assert any(np.array_equal(obs, real[u]) for u in range(t + 1))
    assert sum(not np.array_equal(obs, real[t]) for t, obs in enumerate(given)) >= 6  # the link is mostly cut
    again = AblatedObservation(_Recorder(), "shuffled-obs", "s")
    run_episode(env, again, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(given, again.policy.seen))  # determinism under the seed


def test_ablation__resolved_for_runs_and_kept_out_of_the_baselines(tmp_path):
    env = ASETEnv(topology="full-edge", horizon=3, theta=0.0)
    policy = resolve_policy("ASET-v0", f"zeroed-obs:{PRETRAINED}", env)
    assert isinstance(policy, AblatedObservation) and policy.mode == "zeroed-obs"
    rows = [{"policy": "closest", "success_rate": 0.5}, {"policy": str(PRETRAINED), "success_rate": 0.6},
            {"policy": f"zeroed-obs:{PRETRAINED}", "success_rate": 0.9}]
    (table,) = learner_table(rows, [r["policy"] for r in rows], "success_rate", True, reps=100)
    assert table["best_baseline"] == "closest" and table["mean"] == pytest.approx(0.6 / 0.5)
    with initialize_config_dir(config_dir=str(Path(evaluate.__file__).parent / "conf"), version_base="1.3"):
        cfg = compose("evaluate", overrides=["env=aset-v0", f"policies=[closest,'zeroed-obs:{PRETRAINED}']"])
    assert evaluate.resolve_settings(cfg)["policies"][1] == f"zeroed-obs:{PRETRAINED}"
    with initialize_config_dir(config_dir=str(Path(evaluate.__file__).parent / "conf"), version_base="1.3"):
        cfg = compose("evaluate", overrides=["env=oinc-v0", f"policies=['zeroed-obs:{PRETRAINED}']"])
    with pytest.raises(ValueError, match="trained on ASET-v0"):
        evaluate.resolve_settings(cfg)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> list[Path]:
    """Two copies of the shipped ASET-v0 DQN posing as two training seeds (the study reads each run's config)."""
    out = tmp_path_factory.mktemp("runs")
    runs = []
    for seed in (0, 1):
        run = out / f"aset-v0__dqn__{seed}"
        shutil.copytree(PRETRAINED, run)
        runs.append(run)
    return runs


def test_study__rows_claims_and_files_match_the_evaluation(two_runs, tmp_path):
    cfg = StudyConfig(runs=[str(r) for r in two_runs], lams=[60.0, 100.0], instances=1, episodes=2, horizon=6,
                      reps=200, cycle_length=2, tune_episodes=1, tune_horizon=4, out=str(tmp_path / "study"))
    rows, claims = study(cfg)
    assert {r["lam"] for r in rows} == {60.0, 100.0}
    learned = [r for r in rows if r["policy"] in learned_rows("dqn")]
    assert len(learned) == 2 * len(learned_rows("dqn")) and all(r["runs"] == 2 for r in learned)
    for row in rows:
        assert row["success_rate_lo"] - 1e-12 <= row["success_rate"] <= row["success_rate_hi"] + 1e-12
    # the DQN row at lambda = 100 is the model played on the same seeds (both runs are the same model)
    (direct,) = evaluate_policies({"topology": "full-edge", "lam": 100.0, "theta": 0.0, "horizon": 6,
                                   "scenario_overrides": {}}, [str(two_runs[0])], instances=1, episodes=2, seed=0,
                                  out_dir=tmp_path / "direct", progress=False, resolve=resolve_policy)
    agent = next(r for r in rows if r["lam"] == 100.0 and r["policy"] == "dqn")
    assert agent["success_rate"] == pytest.approx(direct["success_rate"])
    periodic = next(r for r in rows if r["lam"] == 100.0 and r["policy"] == "periodic_switch")
    assert agent["vs_periodic_switch"] == pytest.approx(agent["success_rate"] - periodic["success_rate"])
    # periodic_switch is the best of the 21 two-window cycles found on the tuning seeds, played on these seeds
    with (tmp_path / "study" / "cycles.csv").open() as handle:
        cycles = list(csv.DictReader(handle))
    assert len(cycles) == 21
    best = tuple(cycles[0]["sequence"].split(" > "))
    (cycle_row,) = evaluate_policies({"topology": "full-edge", "lam": 100.0, "theta": 0.0, "horizon": 6,
                                      "scenario_overrides": {}}, ["periodic_switch"], instances=1, episodes=2, seed=0,
                                     out_dir=tmp_path / "cycle", progress=False,
                                     policy_kwargs={"periodic_switch": {"sequence": best}})
    assert periodic["success_rate"] == pytest.approx(cycle_row["success_rate"])
    # identical runs: the bootstrap over runs has nothing to resample, so the CI collapses to the mean
    assert agent["success_rate_lo"] == pytest.approx(agent["success_rate_hi"])
    assert next(c["claim"][:2] for c in claims if c["lam"] == 60.0) == "b:"
    assert next(c["claim"][:2] for c in claims if c["lam"] == 100.0) == "d:"
    for claim in claims:
        assert claim["holds"] == (claim["lo"] > 0 and (not claim["claim"].startswith("target") or
                                                        claim["difference"] >= cfg.margin))
    for name in ("study.csv", "per_run.csv", "claims.csv", "study.md", "study.png", "command.txt"):
        assert (tmp_path / "study" / name).is_file(), name
    with (tmp_path / "study" / "per_run.csv").open() as handle:
        per_run = list(csv.DictReader(handle))
    assert len(per_run) == 2 * 2  # runs x loads
    for row in per_run:  # the shares of windows per policy the DQN played sum to 1
        shares = [float(part.rsplit(" ", 1)[1]) for part in row["dqn actions"].split(", ")]
        assert sum(shares) == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize(("field", "value"), [("lams", []), ("lams", [300.0]), ("episodes", 0), ("margin", 2.0),
                                              ("cycle_length", 1), ("tune_horizon", 0)])
def test_study__bad_input_raises_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        StudyConfig(**{field: value})


def test_study__bad_runs_raise_before_writing(tmp_path, two_runs):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="matches no training run"):
        study(StudyConfig(runs=[str(tmp_path / "nothing*")], out=str(out)))
    with pytest.raises(ValueError, match="reference"):
        study(StudyConfig(runs=[str(two_runs[0])], reference="oracle", out=str(out)))
    assert not out.exists()


def test_cycles__one_per_rotation_class_and_the_search_ranks_them_by_played_success():
    from offline.aset.policies import EpisodeTally, PeriodicSwitchPolicy, best_cycle, cycle_candidates

    two, three = cycle_candidates(2), cycle_candidates(3)
    assert len(two) == 21 and len(three) == 21 + (7**3 - 7) // 3  # pairs; triples up to rotation, non-constant
    assert (0, 6) in two and (6, 0) not in two and (6, 6, 2) not in three and (2, 6, 6) in three
    env = ASETEnv(topology="dc-cloud", horizon=5, theta=0.0)
    candidates = [(6, 2), (0, 1), (3, 5, 5)]
    table = best_cycle(env, candidates, seeds=[7, 8])
    assert [r["success_rate"] for r in table] == sorted((r["success_rate"] for r in table), reverse=True)
    for row in table:
        tally = EpisodeTally(env.instance.num_apps)
        for seed in (7, 8):
            run_episode(env, PeriodicSwitchPolicy(tuple(row["sequence"])), seed=seed, on_step=tally)
        assert row["success_rate"] == pytest.approx(tally.metrics(env.instance.app_names)["success_rate"])


def test_training_wall_s__first_line_past_the_steps_else_scaled_from_the_last(tmp_path):
    from agents.compare import training_wall_s

    (tmp_path / "progress.csv").write_text("time/total_timesteps,time/time_elapsed,eval/x\n,,1\n100,10,\n200,30,\n")
    assert training_wall_s(tmp_path, 150) == 30.0
    assert training_wall_s(tmp_path, 100) == 10.0
    assert training_wall_s(tmp_path, 400) == pytest.approx(60.0)  # the log stops at 200 steps: 30 s x 400 / 200
    assert np.isnan(training_wall_s(tmp_path / "missing", 100))


def test_tally__shares_of_windows_per_policy_played():
    from offline.aset.policies import EpisodeTally, PeriodicSwitchPolicy

    env = ASETEnv(topology="dc-cloud", horizon=6, theta=0.0)
    tally = EpisodeTally(env.instance.num_apps)
    run_episode(env, PeriodicSwitchPolicy(("closest", "farthest", "farthest")), seed=0, on_step=tally)
    metrics = tally.metrics(env.instance.app_names)
    assert metrics["share_closest"] == pytest.approx(2 / 6) and metrics["share_farthest"] == pytest.approx(4 / 6)
    assert sum(v for k, v in metrics.items() if k.startswith("share_")) == pytest.approx(1.0)
