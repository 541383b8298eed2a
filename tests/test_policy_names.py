"""One meaning per policy name (issue 37): tuned values by default, strict tuned.yaml, shipped agents on default envs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the env ids)
from offline.ladder_spec import tuned_params
from offline.registry import available_policies, make_policy
from offline.tuning import get_spec, ladder_env_ids, package_dir

ALL_TUNED = [(env_id, t.policy) for env_id in ladder_env_ids() for t in get_spec(env_id).tuning]
#: tuned policies that make_policy builds by name; the others are OINC's pairs (an env setting + a policy)
TUNED = [(env_id, name) for env_id, name in ALL_TUNED if name in available_policies(env_id)]


def test_every_tuned_policy_is_covered_and_no_ladder_passes_tuned_kwargs() -> None:
    from offline.oinc.heuristics import TUNED_PAIRS

    assert {(e, n) for e, n in ALL_TUNED if (e, n) not in TUNED} == {("OINC-v0", p) for p in TUNED_PAIRS}
    assert {e for e, _ in TUNED} >= {"UEC-v0", "ASET-v1", "CoRaiS-v1"}
    for env_id, name in ALL_TUNED:
        assert name not in get_spec(env_id).policy_kwargs, f"{env_id}'s ladder passes kwargs for {name}"


def _plain(policy: object) -> dict:
    """A policy's plain attributes (its parameters), without generators or caches."""
    return {k: v for k, v in vars(policy).items() if isinstance(v, (int, float, str, bool, dict)) and k != "_rows"}


def _tuned_entry(env_id: str, policy: str) -> dict:
    import yaml

    data = yaml.safe_load((package_dir(env_id) / "tuned.yaml").read_text())
    return dict(data[policy]["params"])


@pytest.mark.parametrize(("env_id", "name"), TUNED)
def test_make_policy_defaults_to_the_tuned_values(env_id: str, name: str) -> None:
    tuned = _tuned_entry(env_id, name)
    env = gym.make(env_id)
    plain = make_policy(env_id, name, env)
    explicit = make_policy(env_id, name, env, **tuned)  # what a ladder spec's policy_kwargs used to pass
    assert _plain(plain) == _plain(explicit)
    # an explicit value still overrides the tuned one
    key, value = next((k, v) for k, v in tuned.items() if isinstance(v, float))
    other = make_policy(env_id, name, env, **{key: value * 0.5})
    assert _plain(other) != _plain(plain)


def test_oinc_pairs_play_their_tuned_share_without_kwargs() -> None:
    from offline.oinc.heuristics import LS_PAIR, PAIR, tuned_pair_kwargs
    from offline.runner import Run, get_hook

    hook = get_hook("OINC-v0")
    run = Run(env_id="OINC-v0", env_kwargs={}, policies=[PAIR, LS_PAIR, "ekya"], instances=1, episodes=1, seed=0,
              out_dir=Path("."), options=dict(hook.options), policy_kwargs={}, resolve=make_policy)
    hook.prepare(run)
    entries = {e.name: e for e in hook.entries(run)}
    for pair in (PAIR, LS_PAIR):
        tuned = tuned_pair_kwargs(pair)
        assert entries[pair].extra["controller_kwargs"] == {"retraining_share": tuned["retraining_share"]}
        assert entries[pair].kwargs == {"slo_margin": tuned["slo_margin"]}
        env = hook.make_env(run, 0, entries[pair])
        assert env.unwrapped.controller.retraining_share == pytest.approx(tuned["retraining_share"])
    assert entries["ekya"].extra["controller_kwargs"] == {}  # untuned pairs keep the controller's own default
    assert make_policy("OINC-v0", "slo_liu_ls", gym.make("OINC-v0")).slo_margin == tuned_pair_kwargs(LS_PAIR)[
        "slo_margin"]


def test_oinc_pair_episode_through_evaluate_equals_the_ladders_way() -> None:
    """The same episode with no kwargs (evaluate.py, score) and with the tuned kwargs spelled out (the ladder's
    old policy_kwargs), through the runner."""
    from offline.oinc.heuristics import PAIR, tuned_pair_kwargs
    from offline.runner import evaluate

    sums = []
    for kwargs in ({}, {PAIR: tuned_pair_kwargs()}):
        with tempfile.TemporaryDirectory() as tmp:
            rows = evaluate("OINC-v0", {}, [PAIR], instances=1, episodes=1, seed=5, out_dir=Path(tmp),
                            progress=False, policy_kwargs=kwargs)
        sums.append(rows[0]["weighted_sum"])
    assert sums[0] == sums[1]


@pytest.mark.parametrize(("text", "match"), [
    ("a: [1, 2\n", "not valid YAML"),
    ("p: !!python/object:os.system {}\n", "not valid YAML"),
    ("- 1\n- 2\n", "expected a mapping"),
    ("p: 3\n", "must be a mapping with a 'params'"),
    ("p: {params: [1]}\n", "params must be a mapping"),
    ("p: {params: {scale: 1.0, typo: 2}}\n", "unknown parameters \\['typo'\\]"),
    ("p: {params: {scale: fast}}\n", "wrong type"),
    ("p: {params: {steps: 2.5}}\n", "wrong type"),
])
def test_tuned_params_rejects_a_garbled_file(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "tuned.yaml").write_text(text)
    with pytest.raises(ValueError, match=match) as err:
        tuned_params(tmp_path, "p", {"scale": 0.5, "steps": 3})
    assert str(tmp_path / "tuned.yaml") in str(err.value)


def test_tuned_params_reads_values_and_defaults_where_missing(tmp_path: Path) -> None:
    defaults = {"scale": 0.5, "steps": 3}
    assert tuned_params(tmp_path, "p", defaults) == defaults  # no file: untuned
    (tmp_path / "tuned.yaml").write_text("q: {params: {scale: 2.0}}\np: {params: {scale: 2, steps: 4}}\n")
    assert tuned_params(tmp_path, "p", defaults) == {"scale": 2, "steps": 4}
    assert tuned_params(tmp_path, "other", defaults) == defaults  # no entry: untuned


def test_shipped_oinc_agent_plays_a_default_env() -> None:
    """pretrained:oinc-v0-sacd was trained on observation=extended; on gym.make("OINC-v0") it computes its own
    observation and plays exactly the episode it plays on an extended env."""
    pytest.importorskip("stable_baselines3")
    from offline.protocol import run_episode

    totals = []
    for kwargs in ({}, {"observation": "extended"}):
        env = gym.make("OINC-v0", **kwargs)
        totals.append(run_episode(env, make_policy("OINC-v0", "pretrained:oinc-v0-sacd", env), seed=3).total_reward)
    assert np.isfinite(totals[0]) and totals[0] == totals[1]


def test_oinc_env_shows_either_observation() -> None:
    env = gym.make("OINC-v0")
    ext = gym.make("OINC-v0", observation="extended")
    obs, _ = env.reset(seed=1)
    obs_ext, _ = ext.reset(seed=1)
    np.testing.assert_array_equal(env.unwrapped.observation_as("extended"), obs_ext)
    np.testing.assert_array_equal(ext.unwrapped.observation_as("paper"), obs)
    assert env.unwrapped.observation_space_as("extended") == ext.observation_space
    with pytest.raises(ValueError, match="observation"):
        env.unwrapped.observation_as("full")


def _fake_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shipped agent under a site-packages-like folder outside the working directory."""
    from agents import loading

    root = tmp_path / "venv" / "lib" / "site-packages" / "agents" / "pretrained"
    (root / "demo-v0-sac").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    monkeypatch.setattr(loading, "PRETRAINED_DIR", root)
    work = tmp_path / "work"
    (work / "runs" / "r1").mkdir(parents=True)
    monkeypatch.chdir(work)
    return root


def test_tables_name_shipped_agents_and_run_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.pretrained import label
    from offline.registry import policy_label

    root = _fake_install(tmp_path, monkeypatch)
    agent = str(root / "demo-v0-sac")
    assert policy_label(agent) == "pretrained:demo-v0-sac"
    assert policy_label(f"oinc={agent}") == "oinc=pretrained:demo-v0-sac"
    assert policy_label(f"{agent}+dedas") == "pretrained:demo-v0-sac+dedas"
    assert policy_label(f"zeroed-obs:{agent}") == "zeroed-obs:pretrained:demo-v0-sac"
    assert policy_label(f"{agent}/model.zip") == "pretrained:demo-v0-sac/model.zip"
    assert label(agent) == "pretrained:demo-v0-sac"
    assert policy_label(f"{agent}x") == f"{agent}x"  # another folder: unchanged
    assert policy_label(str(tmp_path / "work" / "runs" / "r1")) == "runs/r1"  # relative to the working directory
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert policy_label(str(outside)) == str(outside)
    assert policy_label("slo_liu+ekya") == "slo_liu+ekya"


def test_label_policies_rewrites_rows_and_the_episodes_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import csv

    from offline.runner import get_hook, label_policies, write_csv

    root = _fake_install(tmp_path, monkeypatch)
    agent = str(root / "demo-v0-sac")
    hook = get_hook("OINC-v0")
    out = tmp_path / "out"
    out.mkdir()
    write_csv(out / hook.episodes_csv, [{"policy": agent, "inference": agent, "weighted_sum": "1.5"},
                                         {"policy": "liu_aret", "inference": "liu", "weighted_sum": "2.0"}])
    rows = label_policies([{"policy": agent, "inference": agent, "weighted_sum": 1.5}], out, hook)
    assert rows == [{"policy": "pretrained:demo-v0-sac", "inference": "pretrained:demo-v0-sac", "weighted_sum": 1.5}]
    with open(out / hook.episodes_csv, newline="") as handle:
        written = list(csv.DictReader(handle))
    assert [r["policy"] for r in written] == ["pretrained:demo-v0-sac", "liu_aret"]
    assert written[0]["inference"] == "pretrained:demo-v0-sac" and written[1]["weighted_sum"] == "2.0"


@pytest.mark.slow
def test_evaluate_cli_plays_the_shipped_oinc_agent_on_the_default_env(tmp_path: Path) -> None:
    """``python evaluate.py env=oinc-v0 "policies=[pretrained:oinc-v0-sacd,slo_liu+ekya]"`` on the default env
    kwargs: the agent plays, its rows say pretrained:oinc-v0-sacd, the pair plays its tuned share (~7 s)."""
    import csv
    import subprocess
    import sys

    from offline.oinc.heuristics import tuned_pair_kwargs

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "ev"
    done = subprocess.run([sys.executable, str(root / "evaluate.py"), "env=oinc-v0",
                           "policies=[pretrained:oinc-v0-sacd,slo_liu+ekya]", "instances=1", "episodes=1",
                           "progress=false", f"out={out}"], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| pretrained:oinc-v0-sacd |" in done.stdout and "agents/pretrained" not in done.stdout
    with open(out / "oinc_episodes.csv", newline="") as handle:
        episodes = {r["policy"]: r for r in csv.DictReader(handle)}
    assert set(episodes) == {"pretrained:oinc-v0-sacd", "slo_liu+ekya"}
    assert float(episodes["slo_liu+ekya"]["retraining_share"]) == pytest.approx(
        tuned_pair_kwargs()["retraining_share"], rel=1e-6)  # Ekya's untuned share is 1 / (1 + I/J)
