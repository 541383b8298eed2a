"""REINFORCE trainer of the CoRaiS dispatcher (contract 5: ``train`` and ``load_policy``).

Per batch: draw ``batch_size`` fresh instances, sample ``samples`` (S) full decisions per instance from
the one-shot policy, score them with the batched torch cost (envs.corais.dynamics), and minimise
mean((R(pi) - mean_S R) * log p(pi)) - entropy_coef * H (mean per-request entropy, eq. 24) with Adam and
gradient-norm clipping. ``steps`` counts dispatched instances (env steps): batches = ceil(steps /
batch_size); ``max_minutes`` caps the wall time. Every ``eval_every`` batches the greedy and best-of-S
gaps against the exact MILP on a fixed validation set are logged to TensorBoard (``eval/``), the best
greedy model is kept as ``model_best.pt``, checkpoints go to ``checkpoints/``, the final model to
``model.pt``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agents.corais.model import CoRaiSNet, ModelConfig, count_parameters
from agents.corais.policy import CoRaiSPolicy, load_corais_policy, save_model
from envs.corais.dynamics import response_times, response_times_torch, stack_tables, tables_to_torch
from envs.corais.generator import Scenario, edge_features, generate, make_scenario, request_features
from envs.corais.types import Instance


@dataclass
class TrainConfig:
    """Hyper-parameters (conf/algo/corais.yaml). Paper-sized preset: see ``PAPER_PRESET``."""

    batch_size: int = 64
    samples: int = 16  # S decisions per instance (shared mean baseline)
    lr: float = 1e-4
    lr_final: float | None = None  # anneal lr geometrically to this over the wall-time budget (None: constant)
    entropy_coef: float = 0.1  # beta
    baseline: str = "mean"  # "mean" of the S samples (paper) or "greedy" (self-critical: the greedy decode's cost)
    greedy_phase: float = 0.0  # share of the wall-time budget, at its end, trained with the greedy baseline
    relative_advantage: bool = False  # divide each instance's advantage by its baseline cost (scale-free)
    grad_clip: float = 3.0
    max_minutes: float = 14.0
    eval_every: int = 50
    eval_instances: int = 32
    eval_time_limit: float = 2.0  # exact MILP for the validation reference
    checkpoint_every: int = 500
    threads: int = 2
    init_from: str | None = None  # a saved model file to start from (fine-tuning / continuing a run)
    model: dict[str, Any] = field(default_factory=dict)  # ModelConfig fields (ignored with init_from)

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> TrainConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(cfg) - names - {"name", "preset", "paper_preset", "default_steps"}
        if unknown:
            raise ValueError(f"algo config has unknown keys {sorted(unknown)}; allowed: {sorted(names)}")
        out = cls(**{k: v for k, v in cfg.items() if k in names})
        if out.baseline not in ("mean", "greedy"):
            raise ValueError(f"baseline={out.baseline!r} is invalid: expected 'mean' or 'greedy'")
        if out.lr_final is not None and not float(out.lr_final) > 0:
            raise ValueError(f"lr_final={out.lr_final!r} is invalid: expected None or a learning rate > 0")
        if not 0.0 <= float(out.greedy_phase) <= 1.0:
            raise ValueError(f"greedy_phase={out.greedy_phase!r} is invalid: expected a share in [0, 1]")
        return out


#: The paper's setting (40,000 batches of 128 on a GPU; ~3.6 M parameters, lr 1e-5 as in the author's code).
PAPER_PRESET: dict[str, Any] = {
    "batch_size": 128,
    "samples": 16,
    "lr": 1e-5,
    "lr_final": None,
    "relative_advantage": False,
    "entropy_coef": 0.1,
    "grad_clip": 3.0,
    "max_minutes": 1e9,
    "model": {"embed_dim": 256, "edge_layers": 3, "request_layers": 3, "derived_edge_inputs": False},
}  # with steps = 40_000 * 128


def make_batch(scenario: Scenario, rng: np.random.Generator, size: int) -> list[Instance]:
    """``size`` fresh instances from ``scenario``."""
    return [generate(scenario, rng) for _ in range(size)]


def observation_tensors(instances: list[Instance], device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(edges (B,Q,10), requests (B,Z,6)) float32 tensors, as the env observes them."""
    edges = torch.as_tensor(np.stack([edge_features(i) for i in instances]), device=device)
    reqs = torch.as_tensor(np.stack([request_features(i) for i in instances]), device=device)
    return edges, reqs


def batch_tensors(instances: list[Instance], device: str) -> tuple[torch.Tensor, ...]:
    """(edges (B,Q,10), requests (B,Z,6), cmp, trn, res, src, workload) as tensors."""
    edges, reqs = observation_tensors(instances, device)
    tabs = tables_to_torch(stack_tables([i.tables for i in instances]), device=device, dtype=torch.float32)
    return (edges, reqs, *tabs)


def batch_scorer(instances: list[Instance], device: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """R(pi) of (B, S, Z) decisions on ``instances`` as a float32 (B, S) tensor, tables stacked once.

    numpy path on CPU, torch path elsewhere (the same formula, tested equal).
    """
    tables = stack_tables([i.tables for i in instances])
    if device == "cpu":
        return lambda acts: torch.as_tensor(response_times(tables, acts.numpy())[0], dtype=torch.float32)
    tabs = tables_to_torch(tables, device=device, dtype=torch.float32)
    return lambda acts: response_times_torch(*tabs, acts)[0]


@torch.no_grad()
def evaluate_model(
    model: CoRaiSNet, instances: list[Instance], reference: np.ndarray, samples: int, device: str
) -> dict[str, float]:
    """Greedy and best-of-``samples`` mean gaps and costs of ``model`` on ``instances``."""
    model.eval()
    edges, reqs, cmp, trn, res, src, wl = batch_tensors(instances, device)
    logp = model(edges, reqs)
    greedy = logp.argmax(dim=-1).unsqueeze(1)
    r_greedy = response_times_torch(cmp, trn, res, src, wl, greedy)[0][:, 0].double().cpu().numpy()
    b, z, q = logp.shape
    acts = torch.multinomial(logp.exp().reshape(b * z, q), samples, replacement=True)
    acts = acts.reshape(b, z, samples).transpose(1, 2)
    r_sample = response_times_torch(cmp, trn, res, src, wl, acts)[0].min(dim=1).values.double().cpu().numpy()
    model.train()
    return {
        "greedy_gap": float(np.mean(r_greedy / reference)),
        "greedy_cost": float(np.mean(r_greedy)),
        f"sample{samples}_gap": float(np.mean(r_sample / reference)),
    }


def train(
    env_cfg: dict,
    algo_cfg: dict,
    *,
    run_dir: Path,
    seed: int,
    steps: int,
    device: str = "cpu",
) -> Path:
    """Train the dispatcher on CoRaiS-v0 instances of ``env_cfg["kwargs"]`` (scale, scenario_overrides).

    Returns the path of the final model (``run_dir/model.pt``).
    """
    from torch.utils.tensorboard import SummaryWriter

    from offline.corais import solve_exact

    cfg = TrainConfig.from_dict(dict(algo_cfg))
    kwargs = dict(env_cfg.get("kwargs", env_cfg) or {})
    scenario = make_scenario(kwargs.get("scale", (10, 5, 100)), **dict(kwargs.get("scenario_overrides") or {}))
    if steps < 1:
        raise ValueError(f"steps={steps} is invalid: expected >= 1 (instances to dispatch)")
    run_dir = Path(run_dir)
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    rng = np.random.default_rng(seed)
    if cfg.init_from:
        from agents.corais.policy import load_model

        model = load_model(Path(cfg.init_from), device=device)[0]
    else:
        model = CoRaiSNet(ModelConfig(**cfg.model)).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    writer = SummaryWriter(log_dir=str(run_dir))
    meta = {"env_cfg": env_cfg, "algo_cfg": asdict(cfg), "seed": seed, "steps": steps,
            "scale": scenario.scale, "parameters": count_parameters(model)}
    (run_dir / "corais_config.json").write_text(json.dumps(meta, indent=2, default=str))
    writer.add_text("hparams", json.dumps(meta, default=str))

    # fixed validation set with exact references (seeded apart from the training stream)
    val_rng = np.random.default_rng(seed + 1_000_003)
    val = make_batch(scenario, val_rng, cfg.eval_instances)
    reference = np.array([solve_exact(i, time_limit=cfg.eval_time_limit, require_incumbent=True).cost for i in val])

    batches = math.ceil(steps / cfg.batch_size)
    start = time.perf_counter()
    best_gap = math.inf
    model.train()
    batch = 0
    for batch in range(1, batches + 1):
        progress = min(1.0, (time.perf_counter() - start) / (cfg.max_minutes * 60))  # share of the budget
        if cfg.lr_final is not None:  # geometric annealing over the wall-time budget
            for group in optimiser.param_groups:
                group["lr"] = cfg.lr * (cfg.lr_final / cfg.lr) ** progress
        instances = make_batch(scenario, rng, cfg.batch_size)
        edges, reqs = observation_tensors(instances, device)
        logp = model(edges, reqs)  # (B, Z, Q)
        b, z, q = logp.shape
        acts = torch.multinomial(logp.detach().exp().reshape(b * z, q), cfg.samples, replacement=True)
        acts = acts.reshape(b, z, cfg.samples).transpose(1, 2)  # (B, S, Z)
        score = batch_scorer(instances, device)
        cost = score(acts)  # (B, S)
        greedy_now = cfg.baseline == "greedy" or (cfg.greedy_phase > 0 and progress >= 1.0 - cfg.greedy_phase)
        # baseline: the mean of the S samples (paper), or the cost of the current greedy decode (self-critical)
        greedy = logp.detach().argmax(dim=-1).unsqueeze(1)
        base = score(greedy) if greedy_now else cost.mean(dim=1, keepdim=True)  # (B, 1)
        advantage = cost - base
        if cfg.relative_advantage:
            advantage = advantage / base.clamp_min(1e-9)
        logp_pi = torch.gather(logp.unsqueeze(1).expand(b, cfg.samples, z, q), 3, acts.unsqueeze(-1))
        logp_pi = logp_pi.squeeze(-1).sum(dim=-1)  # (B, S)
        entropy = -(logp.exp() * logp).sum(dim=-1).mean()
        loss = (advantage.detach() * logp_pi).mean() - cfg.entropy_coef * entropy
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimiser.step()

        step = batch * cfg.batch_size
        elapsed = time.perf_counter() - start
        if batch % 10 == 0 or batch == 1:
            writer.add_scalar("train/cost_mean", float(cost.mean()), step)
            writer.add_scalar("train/cost_best_of_s", float(cost.min(dim=1).values.mean()), step)
            writer.add_scalar("train/loss", loss.item(), step)
            writer.add_scalar("train/greedy_baseline", float(greedy_now), step)
            writer.add_scalar("train/lr", optimiser.param_groups[0]["lr"], step)
            writer.add_scalar("train/entropy", entropy.item(), step)
            writer.add_scalar("train/grad_norm", float(grad_norm), step)
            writer.add_scalar("time/fps", step / max(elapsed, 1e-9), step)
        last = batch == batches or elapsed > cfg.max_minutes * 60
        if batch % cfg.eval_every == 0 or last:
            metrics = evaluate_model(model, val, reference, cfg.samples, device)
            for key, value in metrics.items():
                writer.add_scalar(f"eval/{key}", value, step)
            writer.add_scalar("eval/mean_reward", -metrics["greedy_cost"], step)
            print(f"[corais] batch {batch} step {step} {elapsed:.0f}s cost {float(cost.mean()):.3f} "
                  + " ".join(f"{k} {v:.4f}" for k, v in metrics.items()), flush=True)
            if metrics["greedy_gap"] < best_gap:
                best_gap = metrics["greedy_gap"]
                save_model(run_dir / "model_best.pt", model, batches=batch, steps=step, **metrics)
        if batch % cfg.checkpoint_every == 0:
            save_model(run_dir / "checkpoints" / f"model_{step}.pt", model, batches=batch, steps=step)
        if last:
            break
    writer.flush()
    writer.close()
    return save_model(run_dir / "model.pt", model, batches=batch, steps=batch * cfg.batch_size,
                      minutes=(time.perf_counter() - start) / 60)


def load_policy(run_dir: Path, env: gym.Env, **kwargs: Any) -> CoRaiSPolicy:
    """Contract 5: the CoRaiS policy of a run folder; kwargs ``samples`` (None = greedy), ``checkpoint``."""
    return load_corais_policy(run_dir, env, **kwargs)


def _parse_value(text: str) -> Any:
    """A ``--set`` value: int, then float (YAML 1.1 would read "2e-4" as a string), then YAML."""
    import yaml

    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return yaml.safe_load(text)


def main(argv: list[str] | None = None) -> None:
    """CLI without Hydra: ``python -m agents.corais.trainer --run-dir runs/corais_cpu --minutes 13.5``."""
    import argparse

    import yaml

    parser = argparse.ArgumentParser(description="Train the CoRaiS dispatcher (REINFORCE).")
    parser.add_argument("--config", default=str(Path(__file__).resolve().parents[2] / "conf/algo/corais.yaml"))
    parser.add_argument("--scale", type=int, nargs=3, default=(10, 5, 100), metavar=("N", "Q", "Z"))
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=10**9, help="instances to dispatch (default: until --minutes)")
    parser.add_argument("--minutes", type=float, default=None, help="override max_minutes")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--init-from", default=None, help="start from this saved model (continue a run)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="override algo config keys")
    args = parser.parse_args(argv)
    with open(args.config) as fh:
        algo = yaml.safe_load(fh)
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r} is invalid: expected KEY=VALUE")
        algo[key] = _parse_value(value)
    if args.minutes is not None:
        algo["max_minutes"] = args.minutes
    if args.init_from:
        algo["init_from"] = args.init_from
    path = train({"kwargs": {"scale": list(args.scale)}}, algo, run_dir=Path(args.run_dir), seed=args.seed,
                 steps=args.steps, device=args.device)
    print(path)


if __name__ == "__main__":
    main()
