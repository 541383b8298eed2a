"""ASET-v1's ladder: the SPEC, our tuned threshold rule and the clairvoyant beam (offline/aset/ladder.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml

from envs.aset.env import ASETEnvV1
from envs.aset.types import POLICY_NAMES
from offline.aset.heuristics import THRESHOLD_DEFAULTS, THRESHOLD_SWITCH, ThresholdSwitchPolicy
from offline.aset.ladder import SPEC
from offline.aset.policies import CLAIRVOYANT_BEAM, ClairvoyantBeamPolicy, EpisodeTally
from offline.ladder_spec import tuned_params
from offline.protocol import run_episode
from offline.registry import available_policies, make_policy

PACKAGE = Path(__file__).resolve().parents[2] / "offline" / "aset"
TINY = {"topology": "full-edge", "lam": 30.0, "theta": 0.0, "horizon": 3}


def success_of(env: ASETEnvV1, policy, seed: int) -> float:
    tally = EpisodeTally(env.instance.num_apps)
    run_episode(env, policy, seed=seed, on_step=tally)
    return tally.succeeded / tally.queries


def sequence_success(env: ASETEnvV1, actions: tuple[int, ...], seed: int) -> float:
    env.reset(seed=seed)
    succeeded = queries = 0.0
    for action in actions:
        _, _, _, _, info = env.step(action)
        succeeded += info["success"] * info["queries"]
        queries += info["queries"]
    return succeeded / queries


def test_aset_ladder__spec_names_registered_policies_and_rungs() -> None:
    names = set(available_policies("ASET-v1"))
    assert set(SPEC.policies()) <= names
    assert SPEC.metric == "success_rate" and SPEC.higher_is_better
    assert SPEC.random == "random_switch" and SPEC.papers == POLICY_NAMES
    assert SPEC.rung(THRESHOLD_SWITCH) == "ours" and SPEC.rung(CLAIRVOYANT_BEAM) == "reference"
    assert SPEC.rung("best_static_hindsight") == "reference" and SPEC.rung("lookahead_oracle") == "reference"
    assert SPEC.env_kwargs["lam"] == 60.0 and SPEC.variants["lam100"]["lam"] == 100.0
    for name in (*SPEC.ours, *SPEC.references):
        assert SPEC.descriptions[name].startswith(("ours:", "reference (clairvoyant)"))
    assert THRESHOLD_SWITCH in available_policies("ASET-v0")


def test_aset_ladder__threshold_switch_reads_tuned_yaml() -> None:
    data = yaml.safe_load((PACKAGE / "tuned.yaml").read_text())
    tuned = data[THRESHOLD_SWITCH]["params"]
    assert tuned_params(PACKAGE, THRESHOLD_SWITCH, THRESHOLD_DEFAULTS) == {**THRESHOLD_DEFAULTS, **tuned}
    policy = make_policy("ASET-v1", THRESHOLD_SWITCH, ASETEnvV1(**TINY))
    assert policy.co_threshold == pytest.approx(tuned["co_threshold"])
    assert policy.recent_subwindows == tuned["recent_subwindows"]
    assert POLICY_NAMES[policy.relief] == tuned["relief"]


@pytest.mark.parametrize("bad", [{"co_threshold": -0.1}, {"recent_subwindows": 0}, {"relief": "closest"},
                                 {"max_relief_run": 0}, {"hot_relief": 3}])
def test_aset_ladder__threshold_switch_rejects_bad_parameters(bad: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        ThresholdSwitchPolicy(**{**THRESHOLD_DEFAULTS, **bad})


def test_aset_ladder__threshold_switch_follows_its_rule() -> None:
    """Hot central offices -> relief (never more than max_relief_run in a row); cool -> least_impedance."""
    env = ASETEnvV1(**TINY)
    env.reset(seed=0)
    inst = env.instance
    policy = ThresholdSwitchPolicy(0.5, 0.5, 1, "farthest", "load_balancing", 2)
    policy.reset(env)
    n_w = inst.num_workers
    tiers = np.asarray(inst.cluster_tiers)[inst.worker_cluster]
    state = np.zeros(env.state_shape, dtype=np.float32)
    assert POLICY_NAMES[policy.act(state.reshape(-1), {})] == "least_impedance"
    state[2 * n_w + np.flatnonzero(tiers == "co"), -1] = 0.9
    acts = [POLICY_NAMES[policy.act(state.reshape(-1), {})] for _ in range(3)]
    assert acts == ["farthest", "farthest", "least_impedance"]
    state[2 * n_w + np.flatnonzero(tiers == "cloud"), -1] = 0.9
    assert POLICY_NAMES[policy.act(state.reshape(-1), {})] == "load_balancing"


def test_aset_ladder__beam_plays_its_plan_and_is_deterministic() -> None:
    env = ASETEnvV1(**{**TINY, "horizon": 6, "lam": 60.0})
    beam = ClairvoyantBeamPolicy(width=2)
    first = success_of(env, beam, seed=5)
    assert first == pytest.approx(beam.planned_success, abs=1e-12)  # the real episode reproduces the plan
    plan = list(beam.plan)
    assert success_of(env, ClairvoyantBeamPolicy(width=2), seed=5) == first
    assert len(plan) == 6 and all(0 <= a < 7 for a in plan)
    with pytest.raises(ValueError, match="width"):
        ClairvoyantBeamPolicy(width=0)


@pytest.mark.parametrize("instance_seed,seed", [(3, 11), (17, 4)])
def test_aset_ladder__wide_beam_is_brute_force_optimum_and_no_policy_beats_it(instance_seed: int, seed: int) -> None:
    """On 3-window episodes a beam of width 49 keeps every 2-window prefix, so it is exhaustive: it equals the
    best of all 343 action sequences, and every registered policy (each plays one of them) is at most that."""
    env = ASETEnvV1(**TINY, instance_seed=instance_seed)
    optimum = max(sequence_success(env, seq, seed) for seq in itertools.product(range(7), repeat=3))
    beam = success_of(env, ClairvoyantBeamPolicy(width=49), seed)
    assert beam == pytest.approx(optimum, abs=1e-12)
    assert success_of(env, ClairvoyantBeamPolicy(width=1), seed) <= optimum + 1e-12
    for name in SPEC.policies():
        if name in ("best_static_hindsight", "lookahead_oracle"):
            continue  # clairvoyant and slow; each still plays one of the sequences
        assert success_of(env, make_policy("ASET-v1", name, env), seed) <= optimum + 1e-12, name
