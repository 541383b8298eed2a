"""The constructive CoRaiS dispatcher (agents/corais/pomo.py) and its trainer (agents/corais/pomo_train.py).

The rollout machinery against list_greedy and the one cost model, the water level against bisection, POMO's forced
starts, teacher forcing's cross-entropy by hand, the network's symmetry, the labels' round trip without pickle, config
errors, and tiny train.py runs: a loadable policy, a SIGTERM then a resume.
"""

from __future__ import annotations

import signal
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.corais.pomo import (
    STEP_FEATURES,
    Batch,
    ListSchedulerNet,
    PomoDispatcher,
    PomoNetConfig,
    Rollouts,
    costs,
    dispatch,
    rollout,
    scenario_instances,
    starts_for,
)
from agents.corais.pomo_train import (
    LABELS_FILE,
    ScaleLabels,
    TrainConfig,
    load_labels,
    load_policy,
    save_labels,
)
from envs.corais.dynamics import dispatch_cost
from offline.corais.greedy import list_greedy
from offline.protocol import run_episode


class EarliestCompletion(torch.nn.Module):
    """list_greedy's rule as logits: the smallest completion time, ties to the smallest growth (features 0 and 2)."""

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return -1e4 * features[..., 0].double() - features[..., 2].double()


def _instances(scale=(10, 5, 30), n=4, base=0):
    return scenario_instances("CoRaiS-v1", scale, np.arange(base, base + n))


@settings(max_examples=12, deadline=None)
@given(q=st.integers(2, 6), z=st.integers(1, 25), seed=st.integers(0, 10_000))
def test_the_rollout_with_list_greedys_rule_is_list_greedy(q, z, seed):
    instances = _instances((2 * q, q, z), n=2, base=seed)
    actions, _, _ = rollout(EarliestCompletion(), Batch(instances), 1, sample=False, forced_first=False)
    for k, inst in enumerate(instances):
        assert np.array_equal(actions[k, 0].numpy(), list_greedy(inst))


def test_rollout_costs_are_the_cost_models_and_the_aggregates_match_the_edge_times():
    instances = _instances()
    batch = Batch(instances)
    net = ListSchedulerNet(PomoNetConfig(hidden=8))
    actions, logp, _ = rollout(net, batch, 7, sample=True, generator=torch.Generator().manual_seed(0))
    cost = costs(batch, actions).numpy()
    for k, inst in enumerate(instances):
        np.testing.assert_allclose(cost[k], dispatch_cost(inst, actions[k].numpy()), rtol=1e-12)
    assert torch.all(logp <= 0) and torch.all(torch.isfinite(logp))
    # the rollout's running edge times equal the cost model's T_j of the finished dispatch
    roll = Rollouts(batch, 1)
    for t in range(batch.shape[1]):
        cand, c, tr, rs, loc = roll.candidates(t)
        i = batch.order[:, t]
        roll.place(t, actions[torch.arange(len(instances)), 0, i].unsqueeze(1), cand, c, tr, rs, loc)
    np.testing.assert_allclose(roll.times.amax(dim=-1)[:, 0].numpy(), cost[:, 0], rtol=1e-12)


def test_the_water_level_fills_the_remaining_work_exactly():
    batch = Batch(_instances((20, 10, 40), n=3))
    roll = Rollouts(batch, 2)
    roll.times = roll.times + torch.rand(roll.times.shape, generator=torch.Generator().manual_seed(1))
    for t in (0, 17, 39):
        level = roll.water_level(t)[..., 0]
        work = batch.work[:, t].unsqueeze(1)
        filled = ((level.unsqueeze(-1) - roll.times).clamp_min(0.0) / work).sum(dim=-1)
        np.testing.assert_allclose(filled.numpy(), 1.0, rtol=1e-9)
        assert torch.all(level >= roll.times.amin(dim=-1))


def test_multi_starts_force_the_first_two_requests():
    batch = Batch(_instances((10, 5, 30), n=2))
    net = ListSchedulerNet(PomoNetConfig(hidden=8))
    actions, _, _ = rollout(net, batch, 12, sample=False)
    first, second = batch.order[:, 0], batch.order[:, 1]
    for k in range(2):
        assert actions[k, :, first[k]].tolist() == [p % 5 for p in range(12)]
        assert actions[k, :, second[k]].tolist() == [(p // 5) % 5 for p in range(12)]
    # greedy rollouts are deterministic
    assert torch.equal(rollout(net, batch, 1, sample=False, forced_first=False)[0][:, 0],
                       rollout(net, batch, 1, sample=False, forced_first=False)[0][:, 0])


def test_teacher_forcing_replays_the_teacher_and_sums_its_cross_entropy():
    instances = _instances((6, 3, 5), n=2)
    batch = Batch(instances)
    net = ListSchedulerNet(PomoNetConfig(hidden=8))
    teacher = torch.as_tensor(np.stack([list_greedy(i) for i in instances]))
    _, _, ce = rollout(net, batch, 1, sample=False, teacher=teacher)
    # by hand: replay the teacher, summing -log softmax of the net's logits at the teacher's edge
    roll, expected = Rollouts(batch, 1), torch.zeros(2)
    for t in range(5):
        cand, c, tr, rs, loc = roll.candidates(t)
        logits = net(roll.features(t, cand, c, loc))[:, 0]
        i = batch.order[:, t]
        edge = teacher[torch.arange(2), i]
        expected -= torch.log_softmax(logits, dim=-1)[torch.arange(2), edge]
        roll.place(t, edge.unsqueeze(1), cand, c, tr, rs, loc)
    np.testing.assert_allclose(ce[:, 0].detach().numpy(), expected.detach().numpy(), rtol=1e-5)
    assert torch.equal(roll.actions[:, 0], teacher)


def test_the_pomo_loss_is_reinforce_with_the_rollouts_mean_as_baseline():
    from agents.corais.pomo_train import pomo_loss

    batch = Batch(_instances((10, 5, 12), n=3))
    net = ListSchedulerNet(PomoNetConfig(hidden=8))
    torch.manual_seed(0)
    loss, cost = pomo_loss(net, batch, 6)
    torch.manual_seed(0)  # the same samples, by hand
    actions, logp, _ = rollout(net, batch, 6, sample=True)
    c = costs(batch, actions).float()
    torch.testing.assert_close(cost, c)
    advantage = (c - c.mean(dim=1, keepdim=True)) / c.mean(dim=1, keepdim=True)
    torch.testing.assert_close(loss, (advantage * logp).mean())
    assert torch.allclose(advantage.sum(dim=1), torch.zeros(3), atol=1e-6)  # a shared baseline: zero-sum per instance
    loss.backward()  # the gradient reaches the network through the sampled rollouts' log-probabilities
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in net.parameters())


def test_the_network_is_equivariant_to_relabelling_the_edges():
    net = ListSchedulerNet(PomoNetConfig(hidden=16)).eval()
    features = torch.randn(3, 4, 7, STEP_FEATURES)
    perm = torch.randperm(7)
    torch.testing.assert_close(net(features[..., perm, :]), net(features)[..., perm])


def test_one_network_dispatches_at_every_scale():
    net = ListSchedulerNet(PomoNetConfig(hidden=8))
    for scale in ((4, 2, 10), (20, 10, 100), (30, 15, 40)):
        inst = _instances(scale, n=1)[0]
        action = dispatch(net, inst, scale[1] ** 2, budget=10**9)
        assert action.shape == (scale[2],) and action.min() >= 0 and action.max() < scale[1]
        # Q^2 starts force every pair of edges for the first two requests, the plain greedy rollout's pair among
        # them: the cheapest start is never worse than it
        one = dispatch(net, inst, 1)
        assert dispatch_cost(inst, action) <= dispatch_cost(inst, one) + 1e-12


def test_the_rollout_count_keeps_to_the_budget():
    assert starts_for(10, 100, 100, 100_000) == 100  # (20, 10, 100): every pair of first two edges
    assert starts_for(5, 100, 100, 100_000) == 25  # (10, 5, 100): Q^2 distinct starts
    assert starts_for(20, 400, 100, 100_000) == 12  # (50, 20, 400)
    assert starts_for(100, 2000, 100, 100_000) == 1  # (200, 100, 2000): one greedy rollout
    with pytest.raises(ValueError, match="budget"):
        PomoDispatcher(ListSchedulerNet(), budget=0)


def test_labels_round_trip_without_pickle(tmp_path: Path):
    labels = [ScaleLabels((4, 2, 10), np.arange(3), np.zeros((3, 10), np.int64), np.ones(3)),
              ScaleLabels((6, 3, 5), np.arange(2), np.ones((2, 5), np.int64), np.zeros(2))]
    path = save_labels(tmp_path / LABELS_FILE, labels, {"teacher": "ils"})
    loaded, meta = load_labels(path)
    assert meta == {"teacher": "ils"} and [lab.scale for lab in loaded] == [(4, 2, 10), (6, 3, 5)]
    assert np.array_equal(loaded[1].actions, labels[1].actions)
    np.savez(tmp_path / "bad.npz", x=np.zeros(2))
    with pytest.raises(ValueError, match="dataset="):
        load_labels(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="dataset="):
        load_labels(tmp_path / "missing.npz")


@pytest.mark.parametrize("key, value, match", [
    ("rollouts", 0, "rollouts"), ("teacher_kicks", [1], "teacher_kicks"), ("pomo_scales", [[1, 2]], "pomo_scales"),
    ("lr", 0.0, "lr"), ("bogus", 1, "bogus"), ("starts", 0, "starts"),
])
def test_config_errors_name_the_key(key, value, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig.from_dict({"name": "corais_pomo", "kind": "custom", key: value})


TINY = ["env=corais-v1", "algo=corais_pomo", "algo.teacher_scales=[[4,2,10],[6,3,8]]", "algo.teacher_instances=[8,4]",
        "algo.teacher_kicks=[2,2]", "algo.imitation_batch=4", "algo.pomo_scales=[[4,2,10]]", "algo.pomo_batch=4",
        "algo.rollouts=4", "algo.eval_instances=4", "algo.eval_scale=[4,2,10]", "algo.model.hidden=8",
        "progress=false"]


def _run(tmp_path: Path, *extra: str) -> Path:
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = [*TINY, f"out={tmp_path}", "algo.imitation_epochs=2", "algo.eval_every=2", "steps=16", *extra]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return train.run(cfg, overrides=overrides)


def test_train_py_tiny_run_gives_a_policy_and_reuses_its_labels(tmp_path: Path):
    run_dir = _run(tmp_path / "a")
    labels, meta = load_labels(run_dir / LABELS_FILE)
    assert [(lab.scale, len(lab)) for lab in labels] == [((4, 2, 10), 8), ((6, 3, 8), 4)]
    assert meta["teacher_kicks"] == {"4-2-10": 2, "6-3-8": 2}
    for lab in labels:  # the labels are the teacher's dispatches of the instances their seeds draw
        inst = scenario_instances("CoRaiS-v1", lab.scale, lab.seeds)
        np.testing.assert_allclose([dispatch_cost(i, a) for i, a in zip(inst, lab.actions)], lab.cost)
    env = gym.make("CoRaiS-v1", scale=[4, 2, 10])
    policy = load_policy(run_dir, env)
    assert isinstance(policy, PomoDispatcher) and (policy.starts, policy.budget) == (100, 100_000)
    twice = [run_episode(env, policy, seed=3).total_reward for _ in range(2)]
    assert twice[0] == twice[1]
    # the labels as a Minari dataset, one scale at a time
    from agents.datasets import export_minari, load_minari

    with pytest.raises(ValueError, match="scale="):
        export_minari(run_dir, "edge-sched/corais-test/ils-v0", data_path=tmp_path / "minari")
    export_minari(run_dir, "edge-sched/corais-test/ils-v0", data_path=tmp_path / "minari", scale="4-2-10")
    dataset = load_minari("edge-sched/corais-test/ils-v0", data_path=tmp_path / "minari")
    episodes = list(dataset.iterate_episodes())
    assert len(episodes) == 8 and all(len(ep.actions) == 1 for ep in episodes)
    np.testing.assert_allclose([-ep.rewards[0] for ep in episodes], labels[0].cost)
    assert np.array_equal(np.stack([ep.actions[0] for ep in episodes]), labels[0].actions)
    second = _run(tmp_path / "b", f"algo.dataset={run_dir / LABELS_FILE}", "seed=1")
    assert not (second / LABELS_FILE).exists()
    assert isinstance(load_policy(second, env, starts=2), PomoDispatcher)
    with pytest.raises(ValueError, match="run_dir="):
        load_policy(tmp_path, env)


def test_stopped_by_sigterm_keeps_a_model_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture):
    from conftest import interrupt_training

    args = [*TINY, f"out={tmp_path}", "algo.imitation_epochs=1", "algo.eval_every=2", "algo.max_minutes=0.05",
            "steps=1000000"]
    code, output = interrupt_training(args, marker="[corais_pomo] pomo step 8 ", signum=signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, output[-2000:]
    (run_dir,) = list(tmp_path.iterdir())
    assert "continue with: python train.py resume=" in output
    env = gym.make("CoRaiS-v1", scale=[4, 2, 10])
    assert isinstance(load_policy(run_dir, env), PomoDispatcher)
    from hydra import compose, initialize_config_dir

    from edge_sched_gym import train

    overrides = [f"resume={run_dir}", "progress=false"]
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    train.run(cfg, overrides=overrides)
    assert "[corais_pomo] resuming at stage pomo" in capsys.readouterr().out
    assert isinstance(load_policy(run_dir, env), PomoDispatcher)


def test_starts_benchmark_places_the_shipped_dispatcher_against_list_greedy(tmp_path: Path, monkeypatch):
    from benchmarks import corais_pomo_starts as bench

    monkeypatch.setattr(bench, "OUT", tmp_path / "starts.csv")
    rows = bench.main(["scale=[6,3,12]", "starts=[1,9]", "instances=3"])
    by_name = {r["policy"]: r["cost_vs_list_greedy_ls"] for r in rows}
    assert by_name["list_greedy_ls"] == 1.0 and by_name["list_greedy"] >= 1.0
    assert by_name["corais_pomo P=9"] <= by_name["corais_pomo P=1"]  # more starts, never worse (P=1 is among them)
    assert (tmp_path / "starts.csv").read_text().startswith("policy,cost_vs_list_greedy_ls")


@settings(max_examples=10, deadline=None)
@given(q=st.integers(2, 7), z=st.integers(2, 30), p=st.integers(1, 60), seed=st.integers(0, 10_000))
def test_the_decision_path_makes_the_rollouts_of_the_training_path(q, z, p, seed):
    """``dispatch`` runs the greedy rollouts in numpy (speed); they are the torch rollouts the trainer scores."""
    from agents.corais.pomo import greedy_rollouts

    torch.manual_seed(seed)
    net = ListSchedulerNet(PomoNetConfig(hidden=16)).eval()
    batch = Batch(_instances((2 * q, q, z), n=1, base=seed))
    p = min(p, q * q)
    with torch.inference_mode():
        expected = rollout(net, batch, p, sample=False, forced_first=p > 1)[0][0].numpy()
    assert np.array_equal(greedy_rollouts(net, batch, p), expected)
