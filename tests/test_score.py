"""edge_sched_gym.score (one-call scoring on the ladder's episodes), the submission path and the versioned splits."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

import edge_sched_gym
from offline import ladder, partition
from offline.protocol import MaskedRandomPolicy
from offline.runner import read_csv, write_csv
from offline.tuning import get_spec, ladder_env_ids

ENV = "UEC-v0"


def _check_place(result) -> None:
    """The neighbours bracket the score, and the rank counts the published rows above it."""
    assert result.rank is not None
    if result.above:
        assert result.above["normalised"] > result.normalised
    if result.below:
        assert result.below["normalised"] <= result.normalised
    published = [r for r in ladder.published_rows(ENV, result.split) if r["policy"] != result.policy]
    assert result.ranked_rows == len(published)
    assert result.rank == 1 + sum(float(r["normalised"]) > result.normalised for r in published)


def test_score_a_registered_name_on_the_quick_set() -> None:
    result = edge_sched_gym.score(ENV, "lp_bid_price", split="training_instance", quick=True)
    spec = get_spec(ENV)
    assert result.n == spec.quick_training_episodes
    assert set(result.episode_values) == {(0, e) for e in range(spec.quick_training_episodes)}
    # quick: normalised against random and the published strongest (lp_bid_price) replayed on the same episodes
    assert result.strongest == ladder.published_rows(ENV, "training_instance")[0]["strongest"] == "lp_bid_price"
    assert result.normalised_against == "replayed"
    assert result.normalised == pytest.approx(1.0, abs=1e-9)
    assert result.diff_vs_strongest == pytest.approx(0.0, abs=1e-9) and result.at_least_as_good == 1.0
    assert result.random_mean < result.mean
    assert result.decisions > 0 and np.isfinite(result.decision_ms_mean) and result.decision_ms_p99 > 0
    _check_place(result)
    row = result.to_row()
    assert (row["env_id"], row["set"], row["rung"], row["split_version"], row["quick"]) == (
        ENV, "training_instance", "submitted", 1, True)
    assert "lp_bid_price" in repr(result) and "normalised 1.000" in repr(result)


def test_score_a_users_random_object_is_near_zero() -> None:
    """The default split (held-out instances), quick size: a uniform masked random policy lands near random's 0
    (0.014 measured; 0.125 [0.005, 0.245] at the published size, see the slow test)."""
    result = edge_sched_gym.score(ENV, MaskedRandomPolicy(), quick=True)
    spec = get_spec(ENV)
    assert result.split == "held_out_instances" and result.policy == "random_feasible"
    assert set(result.episode_values) == {(i, 0) for i in range(spec.quick_held_out_instances)}
    assert abs(result.normalised) < 0.2
    assert result.diff_vs_strongest < 0 and result.at_least_as_good == 0.0
    assert result.decisions > 0
    _check_place(result)


def test_score_a_module_class_string(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_scored_policies.py").write_text(textwrap.dedent("""
        from offline.protocol import MaskedRandomPolicy

        class NoArgs(MaskedRandomPolicy):
            pass

        class WithEnv(MaskedRandomPolicy):
            envs = []

            def __init__(self, env):
                super().__init__()
                WithEnv.envs.append(env)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    plain = edge_sched_gym.score(ENV, "my_scored_policies:NoArgs", split="training_instance", quick=True)
    with_env = edge_sched_gym.score(ENV, "my_scored_policies:WithEnv", split="training_instance", quick=True)
    direct = edge_sched_gym.score(ENV, MaskedRandomPolicy(), split="training_instance", quick=True, label="mine")
    assert plain.policy == "my_scored_policies:NoArgs" and direct.policy == "mine"
    assert sys.modules["my_scored_policies"].WithEnv.envs, "the class taking an env was built with it"
    # the same behaviour on the same episodes and seeds, however it is passed
    assert plain.episode_values == with_env.episode_values == direct.episode_values


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    (("Nope-v0", "random"), {}, "valid env ids"),
    ((ENV, "random"), {"split": "test"}, "valid splits"),
    ((ENV, "random"), {"split": "held_out_instances@p=0.5"}, "valid splits"),
    ((ENV, "random"), {"quick": "yes"}, "quick"),
    ((ENV, "no_such_policy"), {}, "valid policies"),
    ((ENV, 42), {}, r"reset\(env, seed\)"),
    ((ENV, MaskedRandomPolicy), {}, "pass an instance"),
    ((ENV, "no_such_module_xyz:Policy"), {}, "cannot be imported"),
    ((ENV, "offline.protocol:NoSuchClass"), {}, "has no class"),
    ((ENV, MaskedRandomPolicy()), {"label": ""}, "label"),
])
def test_bad_inputs_are_refused_before_playing(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        edge_sched_gym.score(*args, **kwargs)


def test_import_stays_light_and_score_is_callable() -> None:
    import subprocess

    code = ("import sys, edge_sched_gym; assert 'offline.ladder' not in sys.modules and 'agents' not in sys.modules; "
            "import edge_sched_gym.score; assert callable(edge_sched_gym.score); "
            "from edge_sched_gym import score; assert callable(score)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


# ------------------------------------------------------------------------------------------------ submissions


def _submitted_row(policy: str = "my_policy", **changes) -> dict:
    """A full-size row as python evaluate.py experiment=ladder policies=[...] writes it (numbers of a published row)."""
    source = next(r for r in ladder.published_rows(ENV, "held_out_instances") if r["policy"] == "opportunity_greedy")
    row = {**source, "policy": policy, "rung": "submitted", "split_version": 1, "quick": False,
           "decision_ms_mean": 0.01, "decision_ms_p99": 0.02, "commit": "abc1234", "machine": "test", "date": "today",
           "command": "python evaluate.py experiment=ladder policies=[x]"}
    row.update(changes)
    return row


def test_submission_merges_into_a_local_leaderboard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a row naming a module that would leave a mark if imported: merging must never import it
    marker = tmp_path / "imported.txt"
    (tmp_path / "evil_scored_mod.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rows_csv = tmp_path / "rows.csv"
    write_csv(rows_csv, [_submitted_row(), _submitted_row("evil_scored_mod:Evil")])
    board = tmp_path / "board"
    assert ladder.main(["submit", str(rows_csv), f"out={board}"]) == 0
    assert not marker.exists() and "evil_scored_mod" not in sys.modules
    assert ladder.main(["submit"]) == 2 and ladder.main(["bogus"]) == 2
    assert ladder.main(["submit", str(rows_csv), "publsh=true"]) == 2
    merged = read_csv(board / "submissions" / f"{ENV}.csv")
    assert [r["policy"] for r in merged] == ["my_policy", "evil_scored_mod:Evil"]
    page = (board / "leaderboard.md").read_text()
    held_out = page.split(f"### {ENV}: held out instances")[1].split("###")[0]
    line = next(x for x in held_out.splitlines() if "`my_policy`" in x)
    published = next(r for r in ladder.published_rows(ENV, "held_out_instances") if r["policy"] == "opportunity_greedy")
    assert line.startswith("| submitted |") and f"{float(published['normalised']):.3g}" in line  # re-normalised alike
    assert "commit abc1234" in held_out and (board / "assets" / "ladder" / f"{ENV}.png").is_file()
    # a second submission of the same policy replaces the first
    write_csv(rows_csv, [_submitted_row(mean=float(published["mean"]) + 1.0)])
    ladder.submit([rows_csv], out=board, log=lambda _: None)
    merged = read_csv(board / "submissions" / f"{ENV}.csv")
    assert sorted(r["policy"] for r in merged) == ["evil_scored_mod:Evil", "my_policy"]
    assert next(float(r["mean"]) for r in merged if r["policy"] == "my_policy") == float(published["mean"]) + 1.0


@pytest.mark.parametrize(("changes", "match"), [
    ({"quick": True}, "quick=true"),
    ({"split_version": 2}, "split_version=2"),
    ({"policy": "a | b"}, "policy="),
    ({"policy": "lp_bid_price"}, "already a published row"),
    ({"n": 3}, "n=3"),
    ({"set": "test"}, "valid sets"),
    ({"env_id": "Nope-v0"}, "valid env ids"),
    ({"metric": "return"}, "metric="),
    ({"commit": ""}, "missing"),
    ({"n": "many"}, "n='many'"),
    ({"mean": "nan"}, "mean="),
    ({"quick": "maybe"}, "quick="),
])
def test_bad_submissions_are_refused_before_writing(tmp_path: Path, changes: dict, match: str) -> None:
    rows_csv = tmp_path / "rows.csv"
    write_csv(rows_csv, [_submitted_row(), _submitted_row(**{"policy": "other", **changes})])
    board = tmp_path / "board"
    with pytest.raises(ValueError, match=match):
        ladder.submit([rows_csv], out=board, log=lambda _: None)
    assert not board.exists()


def test_ladder_experiment_takes_policies(tmp_path: Path) -> None:
    from edge_sched_gym.evaluate import check_keys
    from edge_sched_gym.score import run_ladder as run_from_config

    base = {"runner": "edge_sched_gym.score:run_ladder", "ladder_envs": [ENV], "quick": True, "publish": False,
            "out": str(tmp_path / "out"), "learners": []}
    check_keys(OmegaConf.create({**base, "policies": ["lp_bid_price"]}))  # a key of experiment=ladder
    with pytest.raises(ValueError, match="publish=true"):
        run_from_config(OmegaConf.create({**base, "publish": True, "quick": False, "policies": ["lp_bid_price"]}))
    with pytest.raises(ValueError, match="valid"):
        run_from_config(OmegaConf.create({**base, "policies": ["no_such_policy"]}))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_ladder_experiment_writes_scored_rows(tmp_path: Path) -> None:
    from edge_sched_gym.score import run_ladder as run_from_config

    out = tmp_path / "out"
    run_from_config(OmegaConf.create({"ladder_envs": [ENV], "quick": True, "publish": False, "out": str(out),
                                      "learners": [], "policies": ["lp_bid_price"]}))
    rows = read_csv(out / f"{ENV}.scores.csv")
    assert [r["set"] for r in rows] == ["training_instance", "held_out_instances"]
    assert all(r["quick"] is True and r["split_version"] == 1 and r["commit"] and r["command"] for r in rows)
    assert all(abs(float(r["normalised"]) - 1.0) < 1e-9 for r in rows)


@pytest.mark.slow
def test_full_size_score_reads_against_the_published_rows() -> None:
    """At the published size lp_bid_price replays its published mean (normalised 1.0 against the published rows)
    and a masked random policy lands near 0 (0.125 [0.005, 0.245] measured)."""
    best = edge_sched_gym.score(ENV, "lp_bid_price")
    published = {r["policy"]: r for r in ladder.published_rows(ENV, "held_out_instances")}
    assert best.normalised_against == "published" and best.n == published["lp_bid_price"]["n"]
    assert best.mean == pytest.approx(float(published["lp_bid_price"]["mean"]), rel=1e-9)
    assert best.normalised == pytest.approx(1.0, abs=1e-6)
    rand = edge_sched_gym.score(ENV, MaskedRandomPolicy())
    assert -0.1 < rand.normalised < 0.3


# ------------------------------------------------------------------------------------------------ split versions


def test_split_fingerprints_match_their_versions() -> None:
    """Fails when a split's content changes without a new version: bump offline.partition.SPLIT_VERSIONS and run
    python -m offline.ladder fingerprints publish=true (then the ladder is republished on the new version)."""
    table = ladder.read_fingerprints()
    for env_id in ladder_env_ids():
        for split in ladder.split_names(get_spec(env_id)):
            version = partition.split_version(env_id, split)
            stored = table.get(env_id, {}).get(split, {}).get(str(version))
            assert stored is not None, f"{env_id} {split} v{version} has no checked-in fingerprint"
            assert ladder.split_fingerprint(env_id, split) == stored, (
                f"{env_id} {split} changed but is still version {version}: bump its version in "
                "offline.partition.SPLIT_VERSIONS and run python -m offline.ladder fingerprints publish=true")


def test_fingerprint_sees_a_changed_split(monkeypatch: pytest.MonkeyPatch) -> None:
    before = ladder.split_fingerprint(ENV, "held_out_instances")
    assert ladder.split_fingerprint(ENV, "held_out_instances@p=0.2") != before  # other env kwargs, same seeds
    monkeypatch.setattr(partition, "HELD_OUT_INSTANCE_BASE", partition.HELD_OUT_INSTANCE_BASE + 1)
    assert ladder.split_fingerprint(ENV, "held_out_instances") != before


def test_split_versions_of_rows() -> None:
    assert ladder.row_split_version({}) == ladder.row_split_version({"split_version": ""}) == 1
    assert ladder.row_split_version({"split_version": 3}) == 3
    monkeypatch_free = dict(partition.SPLIT_VERSIONS)
    try:
        partition.SPLIT_VERSIONS[ENV] = {"held_out_instances": 2}
        assert partition.split_version(ENV, "held_out_instances") == 2
        assert partition.split_version(ENV, "training_instance") == 1
    finally:
        partition.SPLIT_VERSIONS.clear()
        partition.SPLIT_VERSIONS.update(monkeypatch_free)
    # the published CSVs predate the column: read as version 1, which is what score() compares against
    assert all(ladder.row_split_version(r) == 1 for r in ladder.published_rows(ENV, "held_out_instances"))


def test_submission_with_publish_writes_the_results_submissions_and_the_page(tmp_path: Path) -> None:
    import shutil

    results = tmp_path / "results"
    shutil.copytree(ladder.RESULTS, results)
    rows_csv = tmp_path / "rows.csv"
    write_csv(rows_csv, [_submitted_row()])
    page = tmp_path / "docs" / "leaderboard.md"
    page.parent.mkdir()
    changed = ladder.submit([rows_csv], publish=True, results=results, page=page, log=lambda _: None)
    assert changed == [results / "submissions" / f"{ENV}.csv", page]
    assert "| submitted | `my_policy` |" in page.read_text()
    assert page.read_text() == ladder.render_page(results)  # what python -m offline.ladder page regenerates


def test_score__own_instance_file_plays_that_instance_and_ranks_nothing(tmp_path) -> None:
    """A user's instance (exported, then edited) is played on the training split's seeds: doubling every device's
    weight doubles lp_bid_price's profit (its prices scale with the weights, so its decisions do not change)."""
    import gymnasium as gym
    import yaml

    env = gym.make("UEC-v0")
    env.reset(seed=0)
    path = tmp_path / "mine.yaml"
    env.unwrapped.export_instance(path)
    base = edge_sched_gym.score("UEC-v0", "lp_bid_price", split="training_instance", quick=True, instance_file=path)
    data = yaml.safe_load(path.read_text())
    data["instance"]["weight"]["data"] = [2 * w for w in data["instance"]["weight"]["data"]]
    path.write_text(yaml.safe_dump(data))
    doubled = edge_sched_gym.score("UEC-v0", "lp_bid_price", split="training_instance", quick=True,
                                   instance_file=path)
    assert doubled.mean == pytest.approx(2 * base.mean, rel=1e-9)
    assert base.rank is None and any("instance" in note for note in base.notes)
    with pytest.raises(ValueError, match=r"instance_file=.*split='training_instance'"):
        edge_sched_gym.score("UEC-v0", "lp_bid_price", instance_file=path)
    data["instance"]["weight"]["data"] = data["instance"]["weight"]["data"][:1]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="weight"):
        edge_sched_gym.score("UEC-v0", "lp_bid_price", split="training_instance", quick=True, instance_file=path)
