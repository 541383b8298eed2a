"""The reference ladder's machinery (offline.ladder, offline.tuning, offline.partition) on a toy problem whose
numbers are known, and the checked-in Leaderboard page against the checked-in ladder CSVs.

The toy: ``rounds`` decisions among three arms; arm a pays ``MEANS[a]`` plus noise drawn at reset (so the
episode's randomness is fixed by the reset seed and a clairvoyant bound, the sum of each round's best realised
payoff, is exact).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.envs.registration import registry as gym_registry

from envs.problems import PROBLEMS, Problem, register_problem
from offline import ladder, partition
from offline.ladder_spec import LadderSpec, TuningSpec, tuned_params
from offline.protocol import MaskedRandomPolicy
from offline.registry import _REGISTRY, register_policy
from offline.runner import read_csv

TOY_ID = "LadderToy-v0"
MEANS = np.array([1.0, 2.0, 3.0])


class BanditEnv(gym.Env[np.ndarray, np.int64]):
    """Three arms, ``rounds`` decisions; the noise of every (round, arm) is drawn at reset."""

    metadata = {"render_modes": []}

    def __init__(self, rounds: int = 5) -> None:
        self.rounds = rounds
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.noise = np.zeros((rounds, 3))
        self._round: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.noise = self.np_random.normal(0.0, 1.0, size=(self.rounds, 3))
        self._round = 0
        return np.zeros(1, dtype=np.float32), {"action_mask": np.ones(3, dtype=np.int8)}

    def step(self, action: Any):
        if self._round is None or self._round >= self.rounds:
            raise RuntimeError("call reset() before step()")
        reward = float(MEANS[int(action)] + self.noise[self._round, int(action)])
        self._round += 1
        done = self._round >= self.rounds
        return np.zeros(1, dtype=np.float32), reward, done, False, {"action_mask": np.ones(3, dtype=np.int8)}


class FixedArm:
    """Always the same arm (the toy's tunable 'heuristic')."""

    def __init__(self, arm: int) -> None:
        self.arm, self.name = arm, f"arm{arm}"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return self.arm


def clairvoyant_bound(env_kwargs: dict[str, Any], instance_seed: int, reset_seed: int) -> dict[str, float]:
    """Each round's best realised payoff: no policy earns more on the episode."""
    env = BanditEnv(**env_kwargs)
    env.reset(seed=reset_seed)
    return {"clairvoyant_bound": float((MEANS + env.noise).max(axis=1).sum())}


register_policy(TOY_ID, "uniform")(lambda env, **kw: MaskedRandomPolicy())
register_policy(TOY_ID, "first_arm")(lambda env, **kw: FixedArm(0))
register_policy(TOY_ID, "tuned_arm")(lambda env, arm=2, **kw: FixedArm(int(arm)))

SPEC = LadderSpec(
    env_id=TOY_ID,
    metric="return",
    higher_is_better=True,
    random="uniform",
    papers=("first_arm",),
    ours=("tuned_arm",),
    bounds=clairvoyant_bound,
    bound_names=("clairvoyant_bound",),
    proven_bounds=("clairvoyant_bound",),
    descriptions={"tuned_arm": "ours: a fixed arm, tuned", "clairvoyant_bound": "bound: each round's best"},
    env_kwargs={"rounds": 5},
    training_episodes=6,
    held_out_instances=3,
    held_out_episodes=2,
    quick_training_episodes=2,
    quick_held_out_instances=2,
    variants={"long": {"rounds": 8}},
    tuning=(TuningSpec("tuned_arm", lambda trial: {"arm": trial.suggest_int("arm", 0, 2)}, trials=6,
                       instances=2, episodes=2, quick_trials=5),),
)


@pytest.fixture
def toy() -> Iterator[Problem]:
    problem = register_problem(Problem(env_id=TOY_ID, entry_point=f"{__name__}:BanditEnv", config="ladder-toy-v0",
                                       policies=__name__, ladder=f"{__name__}:SPEC"))
    try:
        yield problem
    finally:
        PROBLEMS.pop(TOY_ID, None)
        gym_registry.pop(TOY_ID, None)


def test_partition__purposes_never_share_instances_or_episode_seeds():
    partition.check_disjoint()
    tuning = set(partition.tuning_set(10, 1).instance_seeds())
    held_out = set(partition.held_out_instances(100, 1).instance_seeds())
    assert not tuning & held_out and partition.TRAINING_INSTANCE not in tuning | held_out
    with pytest.raises(ValueError, match="instances=11"):
        partition.tuning_set(11, 1)


def test_ladder__rungs_are_normalised_and_the_bound_is_never_beaten(toy, tmp_path):
    rows = ladder.run_env(TOY_ID, tmp_path, log=lambda _: None)
    sets = {r["set"] for r in rows}
    assert sets == {"training_instance", "held_out_instances", "held_out_instances@long"}
    for set_label in sets:
        by = {r["policy"]: r for r in rows if r["set"] == set_label}
        assert by["uniform"]["normalised"] == pytest.approx(0.0)
        strongest = by["uniform"]["strongest"]
        assert strongest == "tuned_arm"
        assert by[strongest]["normalised"] == pytest.approx(1.0)
        assert by["clairvoyant_bound"]["rung"] == "bound"
        assert by["clairvoyant_bound"]["normalised"] > 1.0
        # per episode, the bound is at least every policy: its paired difference is >= 0 on every episode
        assert by["clairvoyant_bound"]["at_least_as_good"] == 1.0
        assert by["tuned_arm"]["rung"] == "ours" and by["first_arm"]["rung"] == "paper"
    training = [r for r in rows if r["set"] == "training_instance"]
    assert {r["n"] for r in training} == {6}
    assert (tmp_path / f"{TOY_ID}.csv").is_file() and (tmp_path / f"{TOY_ID}.png").stat().st_size > 5_000


def test_ladder__the_same_command_gives_the_same_rows(toy, tmp_path):
    a = ladder.run_env(TOY_ID, tmp_path / "a", quick=True, log=lambda _: None)
    b = ladder.run_env(TOY_ID, tmp_path / "b", quick=True, log=lambda _: None)
    timing = ("decision_ms", "decision_ms_p99")  # wall clock: the only columns a second run may change
    assert [{k: v for k, v in r.items() if k not in timing} for r in a] == \
        [{k: v for k, v in r.items() if k not in timing} for r in b]


def test_ladder__every_policy_row_has_its_decision_time_and_the_frontier_is_drawn(toy, tmp_path):
    rows = ladder.run_env(TOY_ID, tmp_path, quick=True, log=lambda _: None)
    assert {r["policy"] for r in rows} == {"uniform", "first_arm", "tuned_arm", "clairvoyant_bound"}
    for row in rows:
        played = row["rung"] != "bound"  # a bound is a number per episode, not a policy: no decisions
        assert np.isfinite(row["decision_ms"]) == played and np.isfinite(row["decision_ms_p99"]) == played, row
        if played:
            assert 0 < row["decision_ms"] <= row["decision_ms_p99"] * 5, row
    assert (tmp_path / f"{TOY_ID}.frontier.png").stat().st_size > 5_000


def test_ladder__page_and_readme_are_generated_from_the_csvs(toy, tmp_path):
    out = tmp_path / "out"
    ladder.run_env(TOY_ID, out, log=lambda _: None)
    ladder.write_command(out, "python evaluate.py experiment=ladder", False, 1.0, [TOY_ID])
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{ladder.README_BEGIN}\nold\n{ladder.README_END}\ntail\n")
    (out / "Stale-v0.csv").write_text("an older run's file in the same out folder\n")
    changed = ladder.publish(out, [TOY_ID], results=tmp_path / "results", page=tmp_path / "docs" / "leaderboard.md",
                             readme=readme, log=lambda _: None)
    assert not (tmp_path / "results" / "Stale-v0.csv").exists(), "only this run's envs are published"
    assert readme in changed and (tmp_path / "docs" / "assets" / "ladder" / f"{TOY_ID}.png").is_file()
    page = (tmp_path / "docs" / "leaderboard.md").read_text()
    csv_rows = read_csv(tmp_path / "results" / f"{TOY_ID}.csv")
    for row in csv_rows:  # every row's mean is on the page, as the page formats it
        assert f"`{row['policy']}` | {ladder._fmt(row['mean'])} ± {ladder._fmt(row['ci95'], 2)}" in page
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("tail\n") and "old" not in text
    assert f"| {TOY_ID} | training instance |" in text


def test_tuning__the_command_is_deterministic_and_finds_the_best_arm(toy, tmp_path):
    from offline import tuning

    spec = SPEC.tuning[0]
    first = tuning.tune(TOY_ID, spec, trials=6, seed=0)
    second = tuning.tune(TOY_ID, spec, trials=6, seed=0)
    assert first == second
    assert first[0] == {"arm": 2}
    for folder in ("a", "b"):  # the command line: the same values, in the file the policy reads
        assert tuning.main([f"env={TOY_ID}", "quick=true", f"out={tmp_path / folder}"]) == 0
    assert tuned_params(tmp_path / "a", "tuned_arm", {"arm": -1}) == tuned_params(tmp_path / "b", "tuned_arm", {"arm": -2})
    assert tuned_params(tmp_path / "a", "tuned_arm", {"arm": -1})["arm"] in (0, 1, 2)


def test_tuning__bad_input_is_refused_before_anything_runs(toy, tmp_path, capsys):
    from offline import tuning

    assert tuning.main([f"env={TOY_ID}", "trails=3", f"out={tmp_path / 'x'}"]) == 2
    assert "trails" in capsys.readouterr().err and not (tmp_path / "x").exists()
    assert tuning.main(["env=Nope-v0"]) == 2
    assert tuning.main([f"env={TOY_ID}", "policy=other"]) == 2
    assert "valid policies" in capsys.readouterr().err
    assert tuning.main([f"env={TOY_ID}", "quick=true", "publish=true"]) == 2
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert tuning.main([f"env={TOY_ID}", f"out={a_file}"]) == 2 and a_file.read_text() == "x"
    assert "not a folder" in capsys.readouterr().err


def test_tuned_params__reads_the_file_and_refuses_unknown_keys(tmp_path):
    assert tuned_params(tmp_path, "p", {"a": 1}) == {"a": 1}
    (tmp_path / "tuned.yaml").write_text("p:\n  params: {a: 3}\n")
    assert tuned_params(tmp_path, "p", {"a": 1}) == {"a": 3}
    (tmp_path / "tuned.yaml").write_text("p:\n  params: {b: 3}\n")
    with pytest.raises(ValueError, match="unknown parameters"):
        tuned_params(tmp_path, "p", {"a": 1})


def test_leaderboard_page__agrees_with_the_checked_in_ladder_csvs():
    results = Path(ladder.RESULTS)
    if not list(results.glob("*.csv")):
        pytest.fail("results/ladder/ has no CSV: run `python evaluate.py experiment=ladder publish=true`")
    assert ladder.PAGE.read_text() == ladder.render_page(results), (
        "docs/leaderboard.md differs from results/ladder/*.csv: run `python -m offline.ladder page`")
    readme = ladder.README.read_text()
    assert ladder.readme_table(results) in readme



def test_ladder__quick_plays_only_the_quick_variants_and_skips_per_variant():
    from dataclasses import replace

    labels = [label for _, label, _ in ladder.evaluation_sets(replace(SPEC, quick_variants=()), quick=True)]
    assert labels == ["training_instance", "held_out_instances"]
    assert len(ladder.evaluation_sets(replace(SPEC, quick_variants=()), quick=False)) == 3
    spec = replace(SPEC, variant_skip={"long": ("first_arm",)})
    assert spec.skipped("long") == ("first_arm",) and spec.skipped("other") == () and spec.skipped(None) == ()
    assert replace(SPEC, variant_skip=("first_arm",)).skipped("long") == ("first_arm",)


def teardown_module() -> None:
    _REGISTRY.pop(TOY_ID, None)


def test_ladder__publishing_some_envs_keeps_the_other_envs_provenance(tmp_path):
    """A ladder run of one env (ladder_envs=[UEC-v0] publish=true) used to replace command.txt, so the other
    envs' published rows lost the command and commit that made them."""
    from offline.ladder import merge_commands

    published, run = tmp_path / "published.txt", tmp_path / "run.txt"
    published.write_text("python evaluate.py experiment=ladder\n# size: full; envs: UEC-v0, OINC-v0; 570 s wall\n"
                         "# commit aaa; x86_64, 2 cores; 2026-11-25 16:00 UTC\n")
    run.write_text("python evaluate.py experiment=ladder ladder_envs=[UEC-v0] publish=true\n"
                   "# size: full; envs: UEC-v0; 250 s wall\n# commit bbb; x86_64, 2 cores; 2026-11-25 18:50 UTC\n")
    merged = merge_commands(published, run)
    lines = dict(line.split(": ", 1) for line in merged.splitlines())
    assert set(lines) == {"UEC-v0", "OINC-v0"}
    assert "commit aaa" in lines["OINC-v0"] and "for UEC-v0, OINC-v0" in lines["OINC-v0"]
    assert lines["UEC-v0"].startswith("python evaluate.py experiment=ladder ladder_envs=[UEC-v0]") and "bbb" in lines["UEC-v0"]
    published.write_text(merged)
    assert merge_commands(published, run) == merged  # the per-env form reads back unchanged


def test_ladder__your_learners_go_on_their_env_s_ladder_and_only_there(tmp_path):
    from agents.ladder import run_learners
    from agents.loading import PRETRAINED_DIR

    run = str(PRETRAINED_DIR / "uec-v0-sac")  # a run folder (config.yaml names its env)
    assert run_learners([run], ["UEC-v0", "OINC-v0"]) == {"UEC-v0": {run: run}, "OINC-v0": {}}
    with pytest.raises(ValueError, match=r"trained on UEC-v0, which is not in ladder_envs"):
        run_learners([run], ["OINC-v0"])
    with pytest.raises(ValueError, match="expected a training run folder"):
        run_learners([str(tmp_path)], ["UEC-v0"])


def test_ladder__learners_are_refused_with_publish():
    from omegaconf import OmegaConf

    from agents.ladder import run_from_config

    with pytest.raises(ValueError, match=r"learners=\.\.\. with publish=true is refused"):
        run_from_config(OmegaConf.create({"ladder_envs": ["UEC-v0"], "publish": True, "learners": ["runs/x"]}))


def test_ladder__rows_carry_the_split_version_and_score_replays_without_published_rows(toy, tmp_path):
    """Every ladder row says which version of its set it was played on; score() on an env without published rows
    replays random and every rung-2/3 policy on the same episodes (the ladder's rule picks the strongest) and
    ranks nothing."""
    import edge_sched_gym

    rows = ladder.run_env(TOY_ID, tmp_path, quick=True, log=lambda _: None)
    assert {r["split_version"] for r in rows} == {partition.split_version(TOY_ID, "held_out_instances")} == {1}
    assert {r["split_version"] for r in read_csv(tmp_path / f"{TOY_ID}.csv")} == {1}
    by = {r["policy"]: r for r in rows if r["set"] == "held_out_instances"}
    result = edge_sched_gym.score(TOY_ID, FixedArm(2), quick=True)  # the same arm as tuned_arm's default
    assert (result.normalised_against, result.rank, result.strongest) == ("replayed", None, "tuned_arm")
    assert result.mean == pytest.approx(by["tuned_arm"]["mean"]) and result.normalised == pytest.approx(1.0)
    assert result.n == by["tuned_arm"]["n"] and result.diff_vs_strongest == pytest.approx(0.0)
    worse = edge_sched_gym.score(TOY_ID, "first_arm", quick=True)
    assert worse.normalised == pytest.approx(by["first_arm"]["normalised"]) and worse.diff_vs_strongest < 0
