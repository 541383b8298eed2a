"""The CoRaiS dispatcher: shapes, permutation equivariance, a tiny training run, loading and decoding."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401
from agents.corais.model import CoRaiSNet, ModelConfig, derived_edge_inputs
from agents.corais.policy import PRETRAINED_DIR, CoRaiSPolicy, load_corais_policy
from agents.corais.trainer import (
    CLIConfig,
    TrainConfig,
    batch_scorer,
    load_policy,
    make_batch,
    reinforce_step,
    train,
)
from agents.loading import resolve_policy as make_policy  # learned (corais_*) and offline names
from envs.corais.dynamics import dispatch_cost
from envs.corais.generator import edge_features, generate, make_scenario, request_features
from offline.protocol import run_episode

TINY_MODEL = {"embed_dim": 16, "edge_layers": 1, "request_layers": 1, "heads": 2, "ff_hidden": 32}


def test_corais_agent__log_probs_are_normalised_per_request() -> None:
    torch.manual_seed(0)
    model = CoRaiSNet(ModelConfig(**TINY_MODEL)).eval()
    logp = model(torch.rand(3, 5, 10), torch.rand(3, 40, 6))
    assert logp.shape == (3, 40, 5)
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(3, 40))
    assert float(logp.detach().exp().max()) <= 1.0


def test_corais_agent__one_shot_policy_is_permutation_equivariant() -> None:
    torch.manual_seed(1)
    model = CoRaiSNet(ModelConfig(**TINY_MODEL)).eval()
    edges, reqs = torch.rand(1, 4, 10), torch.rand(1, 12, 6)
    perm_r, perm_e = torch.randperm(12), torch.randperm(4)
    base = model(edges, reqs)
    permuted = model(edges[:, perm_e], reqs[:, perm_r])
    torch.testing.assert_close(permuted, base[:, perm_r][:, :, perm_e], atol=1e-5, rtol=1e-5)


def test_corais_agent__ablation_config_validation() -> None:
    CoRaiSNet(ModelConfig(**{**TINY_MODEL, "edge_mixing": "mlp", "request_mixing": "mlp"}))
    with pytest.raises(ValueError, match="edge_mixing"):
        ModelConfig(edge_mixing="conv")
    with pytest.raises(ValueError, match="embed_dim"):
        ModelConfig(embed_dim=30, heads=8)


def test_corais_agent__tiny_training_run_saves_logs_and_loads(tmp_path) -> None:
    algo = {"batch_size": 4, "samples": 4, "lr": 1e-3, "eval_every": 2, "eval_instances": 2,
            "checkpoint_every": 2, "eval_time_limit": 2.0, "threads": 1, "model": TINY_MODEL}
    path = train({"kwargs": {"scale": "tiny"}}, algo, run_dir=tmp_path, seed=0, steps=16, device="cpu")
    assert path == tmp_path / "model.pt" and path.is_file()
    assert (tmp_path / "model_best.pt").is_file() and any((tmp_path / "checkpoints").iterdir())
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())
    env = gym.make("CoRaiS-v0", scale="tiny")
    for samples in (None, 8):
        policy = load_policy(tmp_path, env, samples=samples)
        result = run_episode(env, policy, seed=3)
        assert result.decisions == 1 and np.isfinite(result.final_info["cost"])
    resumed = train({"kwargs": {"scale": "tiny"}}, {**algo, "init_from": str(path)}, run_dir=tmp_path / "resumed",
                    seed=1, steps=4)
    assert resumed.is_file()
    with pytest.raises(ValueError, match="unknown keys"):
        train({"kwargs": {"scale": "tiny"}}, {"bogus": 1}, run_dir=tmp_path, seed=0, steps=4)


def test_corais_agent__derived_edge_inputs_are_the_per_replica_speeds_and_backlog_time() -> None:
    inst = generate(make_scenario((10, 5, 20)), np.random.default_rng(3))
    edges = torch.as_tensor(edge_features(inst))
    derived = derived_edge_inputs(edges[None])[0].double().numpy()
    m, a, b = inst.replicas, inst.coef_a, inst.coef_b
    np.testing.assert_allclose(derived[:, 0], 1 / m, rtol=1e-6)
    np.testing.assert_allclose(derived[:, 1], a / m, rtol=1e-6)
    np.testing.assert_allclose(derived[:, 2], b / m, rtol=1e-6)
    np.testing.assert_allclose(derived[:, 3], (a * 0.5 + b) / m, rtol=1e-6)
    np.testing.assert_allclose(derived[:, 4], inst.workload[:, 0] + inst.workload[:, 2], rtol=1e-5)
    model = CoRaiSNet(ModelConfig(**TINY_MODEL, derived_edge_inputs=True)).eval()
    logp = model(edges[None], torch.rand(1, 20, 6))
    assert logp.shape == (1, 20, 5)


def test_corais_agent__trainer_scores_decisions_alike_on_numpy_and_torch_paths() -> None:
    rng = np.random.default_rng(4)
    instances = [generate(make_scenario((10, 5, 30)), rng) for _ in range(3)]
    acts = torch.as_tensor(rng.integers(0, 5, size=(3, 7, 30)))
    numpy_cost = batch_scorer(instances, "cpu")(acts)  # the numpy evaluator
    torch_cost = batch_scorer(instances, "cpu:0")(acts)  # any other device string takes the torch evaluator
    assert numpy_cost.shape == (3, 7)
    torch.testing.assert_close(torch_cost, numpy_cost, rtol=1e-5, atol=1e-5)
    expected = [[float(dispatch_cost(inst, a[None])[0]) for a in acts[k].numpy()] for k, inst in enumerate(instances)]
    np.testing.assert_allclose(numpy_cost.numpy(), expected, rtol=1e-5)


def test_corais_agent__training_batch_is_the_envs_instances_of_seeds_drawn_from_the_trainer_rng() -> None:
    scenario = make_scenario((10, 5, 30))
    rng, copy = np.random.default_rng(3), np.random.default_rng(3)
    batch = make_batch(scenario, rng, 4)
    seeds = copy.integers(0, 2**63 - 1, size=4)
    assert rng.bit_generator.state == copy.bit_generator.state  # the seeds are all the batch takes from rng
    for instance, seed in zip(batch, seeds, strict=True):
        expected = generate(scenario, np.random.default_rng(int(seed)))
        np.testing.assert_array_equal(edge_features(instance), edge_features(expected))
        np.testing.assert_array_equal(request_features(instance), request_features(expected))
        for name in ("cmp", "trn", "res", "src", "workload"):
            np.testing.assert_array_equal(getattr(instance.tables, name), getattr(expected.tables, name))


@pytest.mark.parametrize("relative", [True, False])
def test_corais_agent__reinforce_loss_by_hand(relative: bool) -> None:
    """loss = mean_{b,s} A_bs * sum_z log p(a_bsz), A = R - mean_S R (divided by mean_S R when relative), from the
    pre-update network; the sampled costs are the cost model's."""
    scenario = make_scenario((10, 5, 30))
    instances = make_batch(scenario, np.random.default_rng(0), 2)
    torch.manual_seed(0)
    model = CoRaiSNet(ModelConfig(**TINY_MODEL))
    before = CoRaiSNet(ModelConfig(**TINY_MODEL))
    before.load_state_dict(model.state_dict())
    cfg = TrainConfig(samples=3, relative_advantage=relative)
    step = reinforce_step(model, torch.optim.SGD(model.parameters(), lr=0.1), instances, cfg, "cpu", False)
    edges = torch.as_tensor(np.stack([edge_features(i) for i in instances]))
    reqs = torch.as_tensor(np.stack([request_features(i) for i in instances]))
    with torch.no_grad():
        logp = before(edges, reqs)  # (B, Z, Q)
    acts = step.actions.numpy()  # (B, S, Z)
    cost = np.array([[float(dispatch_cost(inst, acts[b, s][None])[0]) for s in range(3)]
                     for b, inst in enumerate(instances)])
    np.testing.assert_allclose(step.cost.numpy(), cost, rtol=1e-5)
    base = cost.mean(axis=1, keepdims=True)
    advantage = (cost - base) / base if relative else cost - base
    logp_pi = np.array([[sum(float(logp[b, z, acts[b, s, z]]) for z in range(acts.shape[2])) for s in range(3)]
                        for b in range(2)])
    assert float(step.loss) == pytest.approx(float((advantage * logp_pi).mean()), rel=1e-4, abs=1e-6)
    assert any(not torch.equal(p, q) for p, q in zip(model.parameters(), before.parameters(), strict=True))


@pytest.mark.parametrize(
    ("key", "value"), [("baseline", "rollout"), ("greedy_phase", 1.5), ("lr_final", 0.0), ("lr_final", -1e-4)]
)
def test_corais_agent__bad_training_options_name_the_parameter(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=key):
        TrainConfig.from_dict({key: value})


def test_corais_agent__cli_values_parse_as_numbers_then_yaml() -> None:
    from agents.cli import parse_cli

    cfg = parse_cli(CLIConfig, ["run_dir=x", "algo.lr=2e-4", "algo.samples=16", "algo.relative_advantage=true",
                                "scale=[5,5,20]", "algo.model.heads=4"])
    assert cfg.algo.lr == pytest.approx(2e-4) and cfg.algo.samples == 16 and cfg.algo.relative_advantage is True
    assert cfg.scale == [5, 5, 20] and cfg.algo.model.heads == 4
    with pytest.raises(ValueError, match="smaples"):
        parse_cli(CLIConfig, ["run_dir=x", "algo.smaples=4"])


def test_corais_agent__greedy_baseline_and_annealed_lr_training_runs(tmp_path) -> None:
    """The self-critical phase and the lr schedule run end to end; the lr ends at lr_final."""
    algo = {"batch_size": 4, "samples": 4, "lr": 1e-3, "lr_final": 1e-4, "eval_every": 2, "eval_instances": 2,
            "checkpoint_every": 100, "eval_time_limit": 2.0, "threads": 1, "greedy_phase": 1.0,
            "relative_advantage": True, "max_minutes": 1e-9,
            "model": {**TINY_MODEL, "derived_edge_inputs": True}}
    path = train({"kwargs": {"scale": "tiny"}}, algo, run_dir=tmp_path, seed=0, steps=8, device="cpu")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert events.Scalars("train/greedy_baseline")[-1].value == 1.0
    assert events.Scalars("train/lr")[-1].value == pytest.approx(1e-4)
    assert load_policy(tmp_path, gym.make("CoRaiS-v0", scale="tiny")).model.cfg.derived_edge_inputs
    assert path.is_file()


def test_corais_agent__sampling_policy_is_seeded_and_best_of_k() -> None:
    env = gym.make("CoRaiS-v0", scale=(10, 5, 30))
    torch.manual_seed(0)
    policy = CoRaiSPolicy(CoRaiSNet(ModelConfig(**TINY_MODEL)), samples=20)
    a = run_episode(env, policy, seed=1, policy_seed=5).final_info["cost"]
    b = run_episode(env, policy, seed=1, policy_seed=5).final_info["cost"]
    assert a == b
    with pytest.raises(ValueError, match="samples"):
        CoRaiSPolicy(CoRaiSNet(ModelConfig(**TINY_MODEL)), samples=0)
    with pytest.raises(ValueError, match="run_dir"):
        load_corais_policy(env=env, run_dir="/nonexistent/run")


@pytest.mark.skipif(not (PRETRAINED_DIR / "model.pt").is_file(), reason="no shipped CoRaiS checkpoint")
def test_corais_agent__shipped_model_beats_local_at_training_scale() -> None:
    env = gym.make("CoRaiS-v0", scale=(10, 5, 100))
    greedy = make_policy("CoRaiS-v0", "corais_greedy", env)
    local = make_policy("CoRaiS-v0", "local", env)
    wins = 0
    for seed in range(5):
        g = run_episode(env, greedy, seed=seed).final_info["cost"]
        loc = run_episode(env, local, seed=seed).final_info["cost"]
        wins += g < loc
    assert wins >= 4


#: CoRaiS-v0 (10, 5, 100) test seeds (docs/envs/corais.md's 10,000...) whose instances are not trivial: list_greedy_ls stays
#: above the backlog-only bound (on the others any sensible dispatcher ties the optimum).
NONTRIVIAL_SEEDS = (10000, 10003, 10005, 10009, 10011, 10016, 10017, 10018, 10020, 10023, 10024, 10027)


@pytest.mark.skipif(not (PRETRAINED_DIR / "model.pt").is_file(), reason="no shipped CoRaiS checkpoint")
def test_corais_agent__shipped_model_on_non_trivial_instances_against_list_greedy_ls() -> None:
    """Regression thresholds near the measured values, on non-trivial instances only, against the strong
    simple baseline (deterministic, no solver time limit involved). Measured: greedy 1.134 x list_greedy_ls,
    CoRaiS(1k) 1.014 x (so the shipped model does not beat list_greedy_ls; vs HiGHS 2 s: greedy 1.176,
    CoRaiS(1k) 1.051, list_greedy_ls 1.037)."""
    from envs.corais.dynamics import backlog_bound

    env = gym.make("CoRaiS-v0", scale=(10, 5, 100))
    policies = {n: make_policy("CoRaiS-v0", n, env) for n in ("corais_greedy", "corais_1k", "list_greedy_ls")}
    ratios: dict[str, list[float]] = {"corais_greedy": [], "corais_1k": []}
    for seed in NONTRIVIAL_SEEDS:
        costs = {n: run_episode(env, p, seed=seed, policy_seed=seed).final_info["cost"] for n, p in policies.items()}
        assert costs["list_greedy_ls"] > backlog_bound(env.unwrapped.instance) * (1 + 1e-9)  # non-trivial
        for name in ratios:
            ratios[name].append(costs[name] / costs["list_greedy_ls"])
    assert np.mean(ratios["corais_greedy"]) <= 1.16
    assert np.mean(ratios["corais_1k"]) <= 1.03


@pytest.mark.skipif(not (PRETRAINED_DIR / "model.pt").is_file(), reason="no shipped CoRaiS checkpoint")
def heterogeneity_requests_per_edge(env_id: str) -> np.ndarray:
    """Table VI's heterogeneity setting: requests CoRaiS(1k) sends to edges A..E (slopes 1.0 ... 0.2), summed
    over 5 seeds."""
    env = gym.make(env_id, scale=(5, 5, 100), characteristic="heterogeneity")
    policy = make_policy(env_id, "corais_1k", env)
    counts = np.zeros(5)
    for seed in range(5):
        counts += run_episode(env, policy, seed=seed, policy_seed=seed).final_info["requests_per_edge"]
    return counts


@pytest.mark.xfail(strict=True, reason="Table VI heterogeneity with the shipped model fails: on batches of identical "
                   "requests CoRaiS(1k) sends 0/13/30/44/13 requests to edges of slope 1.0...0.2 (docs/envs/corais.md; the "
                   "one-shot policy splits batches by request size and identical requests give it nothing to split)")
def test_corais_agent__shipped_model_sends_more_requests_to_faster_edges() -> None:
    counts = heterogeneity_requests_per_edge("CoRaiS-v0")
    assert counts[4] > counts[0] and np.all(np.diff(counts / 5) >= -1)  # edges get faster from A to E


V1_MODEL = PRETRAINED_DIR / "model_v1.pt"


@pytest.mark.skipif(not V1_MODEL.is_file(), reason="no shipped CoRaiS-v1 checkpoint")
def test_corais_agent__v1_model_against_list_greedy_ls() -> None:
    """CoRaiS-v1 (every instance non-trivial, proven by the fluid bound): the shipped v1 model (25 min of one
    core at (10, 5, 100)) on 12 test seeds. Measured: greedy 1.154 x list_greedy_ls, CoRaiS(1k) 1.018 x —
    close to, but not below, the strong simple baseline."""
    from envs.corais.dynamics import backlog_bound
    from offline.corais import fluid_bound

    env = gym.make("CoRaiS-v1", scale=(10, 5, 100))
    policies = {n: make_policy("CoRaiS-v1", n, env) for n in ("corais_greedy", "corais_1k", "list_greedy_ls")}
    ratios: dict[str, list[float]] = {"corais_greedy": [], "corais_1k": []}
    for seed in range(10_000, 10_012):
        costs = {n: run_episode(env, p, seed=seed, policy_seed=seed).final_info["cost"] for n, p in policies.items()}
        inst = env.unwrapped.instance
        assert fluid_bound(inst) > backlog_bound(inst)  # proven non-trivial
        for name in ratios:
            ratios[name].append(costs[name] / costs["list_greedy_ls"])
    assert np.mean(ratios["corais_greedy"]) <= 1.18
    assert np.mean(ratios["corais_1k"]) <= 1.04


@pytest.mark.skipif(not V1_MODEL.is_file(), reason="no shipped CoRaiS-v1 checkpoint")
def test_corais_agent__v1_model_sends_more_requests_to_faster_edges() -> None:
    """Table VI heterogeneity with the learned v1 model, CoRaiS(1k) as in the paper (measured 1.4 / 8.8 /
    22.6 / 31.6 / 35.6 requests to edges of slope 1.0 ... 0.2; the v0 model fails this test)."""
    counts = heterogeneity_requests_per_edge("CoRaiS-v1")
    assert counts[4] > counts[0] and np.all(np.diff(counts / 5) >= -1)  # edges get faster from A to E


def test_corais_agent__v1_uses_the_model_of_its_scale_when_one_is_shipped(tmp_path) -> None:
    from agents.corais import shipped_checkpoint

    assert shipped_checkpoint("CoRaiS-v0", (20, 10, 100), tmp_path) == "model.pt"
    assert shipped_checkpoint("CoRaiS-v1", (20, 10, 100), tmp_path) == "model_v1.pt"
    (tmp_path / "model_v1_20-10-100.pt").write_bytes(b"")
    assert shipped_checkpoint("CoRaiS-v1", (20, 10, 100), tmp_path) == "model_v1_20-10-100.pt"
    assert shipped_checkpoint("CoRaiS-v1", (10, 5, 100), tmp_path) == "model_v1.pt"


def test_corais_agent__searched_dispatch_starts_from_the_better_of_greedy_and_list_greedy() -> None:
    """``corais_ils_100ms``: never worse than list_greedy or the network's greedy dispatch; its kicks read the
    network's probabilities; a bad budget names the parameter."""
    from offline.corais.greedy import list_greedy

    env = gym.make("CoRaiS-v1", scale=(10, 5, 40))
    torch.manual_seed(0)
    model = CoRaiSNet(ModelConfig(embed_dim=16, edge_layers=1, request_layers=1, heads=2, ff_hidden=16))
    policy = CoRaiSPolicy(model, search_time=0.02)
    assert policy.name == "corais_ils_20ms"
    obs, info = env.reset(seed=4)
    policy.reset(env, seed=0)
    action = policy.act(obs, info)
    inst = env.unwrapped.instance
    greedy = policy.log_probs(obs).argmax(-1).numpy()
    cost = float(dispatch_cost(inst, action))
    assert cost <= min(float(dispatch_cost(inst, list_greedy(inst))), float(dispatch_cost(inst, greedy))) + 1e-12
    assert policy.last_result.cost == pytest.approx(cost, rel=1e-12)
    for bad in ({"search_time": 0.0}, {"search_time": 0.1, "samples": 10}):
        with pytest.raises(ValueError, match="search_time"):
            CoRaiSPolicy(model, **bad)
    shipped = make_policy("CoRaiS-v1", "corais_ils_100ms", env)
    assert shipped.search_time == pytest.approx(0.1)
