"""OINC-v0's ladder: the SLO-aware metric, the per-pair controller kwargs, the tuned pair and the LP bounds.

The bounds are checked where they must hold: no registered inference policy paired with any controller (at
default and at swept shares) beats them on fuzzed small instances, and on a one-device one-edge instance they
stay below a brute force over every controller and share the suite offers.
"""

from __future__ import annotations

import csv
import itertools
import pathlib

import numpy as np
import pytest
import yaml

from envs.common.clairvoyance import episode_draws
from envs.oinc.env import OINCEnv
from envs.oinc.retraining import CONTROLLERS
from offline.ladder_spec import tuned_params
from offline.oinc import heuristics
from offline.oinc.bounds import BOUND_NAMES, episode_bounds, episode_data, weighted_sum_lower_bound
from offline.oinc.evaluation import SLO_HIT_THRESHOLD, SLO_PENALTY_S, resolve_pair, slo_weighted_sum
from offline.oinc.ladder import SPEC
from offline.oinc.policies import ENV_ID, INFERENCE_POLICIES
from offline.protocol import run_episode
from offline.registry import make_policy
from offline.runner import evaluate

PACKAGE = pathlib.Path(heuristics.__file__).parent


def episodes_csv(path: pathlib.Path) -> list[dict[str, str]]:
    with (path / "oinc_episodes.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_oinc_ladder__rung_names_are_pairs_evaluate_accepts() -> None:
    for name in SPEC.policies():
        label, controller, inference, _ = resolve_pair(name, None)
        assert label == name and controller in CONTROLLERS and inference is not None
    assert SPEC.metric == "slo_weighted_sum" and not SPEC.higher_is_better
    assert set(SPEC.proven_bounds) == set(SPEC.bound_names) == set(BOUND_NAMES)
    assert "slo_liu" in INFERENCE_POLICIES and heuristics.PAIR in SPEC.ours
    assert all(SPEC.descriptions[name].startswith(("ours:", "proven")) for name in (*SPEC.ours, *BOUND_NAMES))


def test_oinc_ladder__a_bare_trained_run_is_paired_with_the_controller_and_share_it_was_trained_beside(tmp_path) -> None:
    """algo=oinc_prior trains slo_liu's correction beside Ekya at the pair's share: evaluate.py and the ladder play a
    bare run folder (or its model file) with that controller and share; a run that names none gets the env's
    default controller, and '<run>+<controller>' still picks the controller explicitly."""
    from offline.oinc.evaluation import OINCHook, trained_env_kwargs
    from offline.runner import Run

    ekya_run, plain_run = tmp_path / "ekya", tmp_path / "plain"
    for folder, kwargs in ((ekya_run, {"retraining": "ekya", "retraining_share": 0.5}), (plain_run, {})):
        (folder / "checkpoints").mkdir(parents=True)
        (folder / "config.yaml").write_text(yaml.safe_dump({"env": {"id": ENV_ID, "kwargs": kwargs}}))
    assert trained_env_kwargs(str(ekya_run / "checkpoints" / "m.pt"))["retraining"] == "ekya"
    assert resolve_pair(str(ekya_run), None)[1] == "ekya"
    assert resolve_pair(str(plain_run), None, "kalmia")[1] == "kalmia"
    assert resolve_pair(f"{ekya_run}+aret", None)[1] == "aret"
    run = Run(ENV_ID, {}, [str(ekya_run), f"{ekya_run}+aret"], instances=1, episodes=1, seed=0, out_dir=tmp_path,
              options={"model": None}, policy_kwargs={}, resolve=None)
    evaluation = OINCHook()
    evaluation.prepare(run)
    entries = {e.name: e for e in evaluation.entries(run)}
    assert entries[str(ekya_run)].extra["controller_kwargs"] == {"retraining_share": 0.5}
    assert entries[f"{ekya_run}+aret"].extra["controller_kwargs"] == {}


def test_oinc_ladder__slo_weighted_sum_penalises_only_below_the_threshold() -> None:
    assert slo_weighted_sum(50.0, SLO_HIT_THRESHOLD) == 50.0
    assert slo_weighted_sum(50.0, 1.0) == 50.0
    assert slo_weighted_sum(50.0, SLO_HIT_THRESHOLD - 0.01) == pytest.approx(50.0 + 0.01 * SLO_PENALTY_S)
    # starving inference (the 0.95 split: 41.7 s at a 0.51 hit rate) loses to the A_ret pairs (~60 s)
    assert slo_weighted_sum(41.7, 0.51) > slo_weighted_sum(61.0, 0.91)


def test_oinc_ladder__tuned_pair_reads_tuned_yaml() -> None:
    data = yaml.safe_load((PACKAGE / "tuned.yaml").read_text())
    tuned = data[heuristics.PAIR]["params"]
    assert tuned_params(PACKAGE, heuristics.PAIR, heuristics.DEFAULTS) == {**heuristics.DEFAULTS, **tuned}
    # one path: the pair's name carries its tuned values wherever it is played, not the ladder spec's kwargs
    assert heuristics.pair_defaults(heuristics.PAIR) == {**heuristics.DEFAULTS, **tuned}
    assert heuristics.PAIR not in SPEC.policy_kwargs
    env = OINCEnv(scenario="tiny")
    assert make_policy(ENV_ID, "slo_liu", env).slo_margin == pytest.approx(tuned["slo_margin"])
    assert make_policy(ENV_ID, "slo_liu", env, slo_margin=0.5).slo_margin == 0.5
    assert {t.policy for t in SPEC.tuning} == {heuristics.PAIR, heuristics.LS_PAIR}


def test_oinc_ladder__retraining_share_kwarg_configures_only_its_pair(tmp_path: pathlib.Path) -> None:
    """A pair's ``retraining_share`` reaches that pair's controller (Ekya's fixed share is then exactly it);
    another pair of the same run keeps its default; evaluation is deterministic under its seeds."""
    kwargs = {"liu+ekya": {"retraining_share": 0.6}, "slo_liu+zhang": {"retraining_share": 0.7, "slo_margin": 0.1}}
    pairs = ["liu+ekya", "liu+zhang", "slo_liu+zhang"]
    for out in ("a", "b"):
        evaluate(ENV_ID, {"scenario": "tiny"}, pairs, instances=2, episodes=2, seed=3, out_dir=tmp_path / out,
                 progress=False, policy_kwargs=kwargs)
    rows = episodes_csv(tmp_path / "a")
    share = {p: {round(float(r["retraining_share"]), 6) for r in rows
                 if r["policy"] == p and r["retraining_share"] != "nan"} for p in pairs}
    assert share == {"liu+ekya": {0.6}, "liu+zhang": {0.5}, "slo_liu+zhang": {0.7}}
    for row in rows:
        assert float(row["slo_weighted_sum"]) == pytest.approx(
            slo_weighted_sum(float(row["weighted_sum"]), float(row["slo_hit_rate"])))
    strip = [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    assert strip == [{k: v for k, v in r.items() if k != "wall_s"} for r in episodes_csv(tmp_path / "b")]


def fuzzed_kwargs(rng: np.random.Generator) -> dict:
    overrides = {
        "num_devices": int(rng.integers(2, 6)),
        "num_edges": int(rng.integers(1, 4)),
        "horizon": int(rng.integers(8, 25)),
        "drift_prob": float(rng.uniform(0.05, 0.3)),
        "retrain_set_size": int(rng.integers(16, 96)),
        "slo_s": (0.05, float(rng.uniform(0.1, 1.0))),
    }
    return {"scenario": "tiny", "scenario_overrides": overrides}


def test_oinc_ladder__no_pair_beats_the_bounds_on_fuzzed_small_instances() -> None:
    rng = np.random.default_rng(2024)
    checked = 0
    for case in range(12):
        env_kwargs = fuzzed_kwargs(rng)
        instance_seed, reset_seed = int(rng.integers(1000)), int(rng.integers(1000))
        bound = episode_bounds(env_kwargs, instance_seed, reset_seed)
        assert bound["slo_weighted_sum_bound"] >= bound["weighted_sum_bound"] - 1e-6
        for inference, controller, share in itertools.product(
            INFERENCE_POLICIES, CONTROLLERS, (None, 0.5, 0.95) if case < 2 else (None,)
        ):
            env = OINCEnv(**env_kwargs, retraining=controller, retraining_share=share, instance_seed=instance_seed)
            info = run_episode(env, make_policy(ENV_ID, inference, env), seed=reset_seed).final_info
            assert info["weighted_sum"] >= bound["weighted_sum_bound"] - 1e-6, (case, inference, controller, share)
            metric = slo_weighted_sum(info["weighted_sum"], info["slo_hit_rate"])
            assert metric >= bound["slo_weighted_sum_bound"] - 1e-6, (case, inference, controller, share)
            checked += 1
    n = len(INFERENCE_POLICIES)
    assert checked == 2 * n * 5 * 3 + 10 * n * 5


def test_oinc_ladder__bound_below_brute_force_on_one_device_one_edge() -> None:
    """I = J = 1: every action gives the task the whole edge's inference share, so the controllers and their
    shares (a grid) are everything the suite can choose; the LP bound stays below the best of them and, with
    nothing to pool here, within 30 % of it (measured 76-77 % with jobs, exact without)."""
    env_kwargs = {"scenario": "tiny", "scenario_overrides": {"num_devices": 1, "num_edges": 1, "horizon": 30,
                                                               "drift_prob": 0.15, "retrain_set_size": 32}}
    for instance_seed, reset_seed in ((1, 11), (2, 12), (3, 13)):
        best_ws = best_slo = np.inf
        for controller, share in itertools.product(CONTROLLERS, np.linspace(0.05, 0.95, 10)):
            env = OINCEnv(**env_kwargs, retraining=controller, retraining_share=float(share),
                          instance_seed=instance_seed)
            info = run_episode(env, make_policy(ENV_ID, "liu", env), seed=reset_seed).final_info
            best_ws = min(best_ws, info["weighted_sum"])
            best_slo = min(best_slo, slo_weighted_sum(info["weighted_sum"], info["slo_hit_rate"]))
        bound = episode_bounds(env_kwargs, instance_seed, reset_seed)
        assert bound["weighted_sum_bound"] <= best_ws + 1e-6
        assert bound["slo_weighted_sum_bound"] <= best_slo + 1e-6
        assert bound["weighted_sum_bound"] >= 0.7 * best_ws


def test_oinc_ladder__bounds_are_deterministic_and_tighten_with_the_slo() -> None:
    env_kwargs = {"scenario": "tiny", "scenario_overrides": {"num_devices": 4, "num_edges": 2, "horizon": 20}}
    first = episode_bounds(env_kwargs, 5, 7)
    assert first == episode_bounds({**env_kwargs, "retraining": "zhang", "retraining_share": 0.3}, 5, 7)
    data = episode_data(env_kwargs, 5, 7)
    strict = weighted_sum_lower_bound(data, slo=True, threshold=1.0)
    assert strict >= first["slo_weighted_sum_bound"] - 1e-6 >= first["weighted_sum_bound"] - 2e-6


def test_oinc_episode_draws__are_the_episode_s_tasks_and_a_copy():
    import gymnasium as gym
    import numpy as np

    env = gym.make("OINC-v0").unwrapped
    env.reset(seed=3)
    draws = episode_draws(env)
    data_bits, cycles = env.current_tasks
    assert np.array_equal(draws.data_bits[0], data_bits) and np.array_equal(draws.cycles[0], cycles)
    draws.cycles[:] = -1.0  # a copy: the env's own draws are untouched
    assert np.array_equal(env.current_tasks[1], cycles)


def test_oinc_ladder__slo_liu_ls_ends_at_a_local_optimum_of_the_exact_slot_reward() -> None:
    """Under Ekya the local search scores candidates by the slot reward env.step returns; each decision is at
    least slo_liu's on it and no single-head change improves it; max_moves=0 is slo_liu itself."""
    from offline.oinc.slot import current_slot, slot_rewards

    env = OINCEnv(retraining="ekya", retraining_share=0.8, instance_seed=3)
    search = make_policy(ENV_ID, "slo_liu_ls", env, slo_margin=0.1)
    plain = make_policy(ENV_ID, "slo_liu", env, slo_margin=0.1)
    same = make_policy(ENV_ID, "slo_liu_ls", env, slo_margin=0.1, max_moves=0)
    obs, info = env.reset(seed=4)
    for policy in (search, plain, same):
        policy.reset(env, seed=0)
    moved = 0
    for _ in range(30):
        base = plain.act(obs, info)
        np.testing.assert_array_equal(same.act(obs, info), base)
        action = search.act(obs, info)
        slot = current_slot(env, action)
        reward = float(slot_rewards(slot, action[None])[0])
        assert reward >= float(slot_rewards(slot, base[None])[0]) - 1e-12
        heads, choices = heuristics.single_head_changes(action.size, env.unwrapped.instance.num_edges)
        neighbours = np.repeat(action[None], heads.size, axis=0)
        neighbours[np.arange(heads.size), heads] = choices
        assert slot_rewards(slot, neighbours).max() <= reward + 1e-12 * max(abs(reward), 1.0)
        moved += search.last_moves
        obs, step_reward, terminated, truncated, info = env.step(action)
        assert step_reward == pytest.approx(reward, rel=1e-12, abs=1e-12)
        if terminated or truncated:
            break
    assert moved > 0
    with pytest.raises(ValueError, match="max_moves"):
        make_policy(ENV_ID, "slo_liu_ls", env, max_moves=-1)
