"""REINFORCE trainer of the CoRaiS dispatcher (contract 5: ``train`` and ``load_policy``).

Per batch: draw ``batch_size`` fresh instances, sample ``samples`` (S) full decisions per instance from
the one-shot policy, score them with the batched torch cost (envs.corais.dynamics), and minimise
mean((R(pi) - mean_S R) * log p(pi)) - entropy_coef * H (mean per-request entropy, eq. 24) with Adam and
gradient-norm clipping. ``steps`` counts dispatched instances (env steps): batches = ceil(steps /
batch_size); ``max_minutes`` caps the wall time. Every ``eval_every`` batches the greedy and best-of-S
gaps against the exact MILP on a fixed validation set are logged to TensorBoard (``eval/``), the best
greedy model is kept as ``model_best.pt``, checkpoints go to ``checkpoints/``, the final model to
``model.pt``.

Command line (key=value, without Hydra; ``--help`` lists every key)::

    python -m agents.corais.trainer run_dir=runs/corais_cpu algo.max_minutes=13.5 seed=7
    python -m agents.corais.trainer run_dir=runs/corais_paper experiment=corais_train_paper device=cuda
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch

from agents.corais.model import CoRaiSNet, ModelConfig, count_parameters
from agents.corais.policy import CoRaiSPolicy, load_corais_policy, save_model
from envs.corais.dynamics import response_times, response_times_torch, stack_tables, tables_to_torch
from envs.corais.generator import Scenario, edge_features, generate_seeded, make_scenario, request_features
from envs.corais.types import Instance

#: The env versions the trainer draws instances of (they differ only in the instance distribution).
ENV_IDS: tuple[str, ...] = ("CoRaiS-v0", "CoRaiS-v1")


def _cpu_model() -> ModelConfig:
    """The CPU-sized network (0.14 M parameters); the paper's is in edge_sched_gym/conf/experiment/corais_train_paper.yaml."""
    return ModelConfig(embed_dim=64, edge_layers=2, request_layers=1, heads=8, ff_hidden=128, tanh_clip=10.0,
                       derived_edge_inputs=True)


@dataclass
class TrainConfig:
    """Hyper-parameters: the schema of edge_sched_gym/conf/algo/corais.yaml (Hydra ConfigStore ``algo/corais_schema``).

    The defaults are the CPU-sized run (25 min of one core); the paper-sized preset is
    edge_sched_gym/conf/experiment/corais_train_paper.yaml.
    """

    name: str = "corais"
    kind: str = "custom"
    default_steps: int = 100_000_000  # effectively unbounded: max_minutes ends the default run
    batch_size: int = 32
    samples: int = 16  # S decisions per instance (shared mean baseline)
    lr: float = 5e-4
    lr_final: float | None = 5e-5  # anneal lr geometrically to this over the wall-time budget (None: constant)
    entropy_coef: float = 0.0  # beta
    baseline: str = "mean"  # "mean" of the S samples (paper) or "greedy" (self-critical: the greedy decode's cost)
    greedy_phase: float = 0.0  # share of the wall-time budget, at its end, trained with the greedy baseline
    relative_advantage: bool = True  # divide each instance's advantage by its baseline cost (scale-free)
    grad_clip: float = 3.0
    max_minutes: float = 25.0
    eval_every: int = 25
    eval_instances: int = 32
    eval_time_limit: float = 2.0  # exact MILP for the validation reference
    checkpoint_every: int = 500
    threads: int = 1  # torch threads (0: leave torch's default)
    init_from: str | None = None  # a saved model file to start from (fine-tuning / continuing a run)
    model: ModelConfig = field(default_factory=_cpu_model)  # ignored with init_from; a dict after from_dict

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> TrainConfig:
        """Validate ``cfg`` against the schema (unknown keys, types, ranges); ``model`` stays a plain dict."""
        from omegaconf import OmegaConf
        from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

        cfg = {k: v for k, v in cfg.items() if k != "defaults"}  # a edge_sched_gym/conf/algo YAML read as plain YAML
        allowed = sorted(f.name for f in fields(cls))
        try:
            merged = OmegaConf.merge(OmegaConf.structured(cls), cfg)
            data = OmegaConf.to_container(merged, resolve=True, throw_on_missing=True)
        except ConfigKeyError as err:
            raise ValueError(f"algo config has unknown keys [{err.full_key!r}]; allowed: {allowed} "
                             f"(model: {[f.name for f in fields(ModelConfig)]})") from None
        except OmegaConfBaseException as err:
            raise ValueError(f"algo.{err.full_key} is invalid: {str(err.msg).splitlines()[0]}") from None
        out = cls(**data)  # type: ignore[arg-type]
        if out.baseline not in ("mean", "greedy"):
            raise ValueError(f"baseline={out.baseline!r} is invalid: expected 'mean' or 'greedy'")
        if out.lr_final is not None and not float(out.lr_final) > 0:
            raise ValueError(f"lr_final={out.lr_final!r} is invalid: expected None or a learning rate > 0")
        if not 0.0 <= float(out.greedy_phase) <= 1.0:
            raise ValueError(f"greedy_phase={out.greedy_phase!r} is invalid: expected a share in [0, 1]")
        for key in ("batch_size", "eval_every", "eval_instances", "checkpoint_every"):
            if int(getattr(out, key)) < 1:
                raise ValueError(f"{key}={getattr(out, key)} is invalid: expected an integer >= 1")
        if out.samples < 1 or out.threads < 0:
            raise ValueError(f"samples={out.samples}, threads={out.threads} are invalid: expected samples >= 1, "
                             "threads >= 0")
        ModelConfig(**out.model)  # type: ignore[arg-type]  # its own checks (heads divide embed_dim, mixings)
        return out


def training_scenario(env_cfg: dict) -> Scenario:
    """The Scenario of an env config (``{"id": ..., "kwargs": {"scale": ..., "scenario_overrides": ...}}``,
    or the kwargs alone): the env version's defaults (CoRaiS-v1: ``V1_DEFAULTS``), then the overrides."""
    from envs.problems import get_problem, load_attr

    kwargs = dict(env_cfg.get("kwargs", env_cfg) or {})
    env_id = str(env_cfg.get("id") or "CoRaiS-v0") if "kwargs" in env_cfg else "CoRaiS-v0"
    if env_id not in ENV_IDS:
        raise ValueError(f"env id {env_id!r} is invalid for the CoRaiS trainer: expected one of {list(ENV_IDS)}")
    defaults = getattr(load_attr(get_problem(env_id).entry_point), "scenario_defaults", {})
    overrides = {**defaults, **dict(kwargs.get("scenario_overrides") or {})}
    return make_scenario(kwargs.get("scale", (10, 5, 100)), **overrides)


def make_batch(scenario: Scenario, rng: np.random.Generator, size: int) -> list[Instance]:
    """``size`` fresh instances from ``scenario``, each the env's instance for a seed drawn from ``rng`` (as
    ``CoRaiSEnv.reset`` draws one), generated in one compiled pass (``generate_seeded``: 1.2 ms for 32 instances
    at (10, 5, 100) against 10 ms one by one). The seeds come from ``rng``, so its state is all a resume needs."""
    batch = generate_seeded(scenario, rng.integers(0, 2**63 - 1, size=size))
    return [batch.instance(b) for b in range(size)]


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
    """Greedy and best-of-``samples`` mean gaps and costs of ``model`` on ``instances`` (seeded sampling)."""
    model.eval()
    edges, reqs, cmp, trn, res, src, wl = batch_tensors(instances, device)
    logp = model(edges, reqs)
    greedy = logp.argmax(dim=-1).unsqueeze(1)
    r_greedy = response_times_torch(cmp, trn, res, src, wl, greedy)[0][:, 0].double().cpu().numpy()
    b, z, q = logp.shape
    # its own fixed generator: the same samples every evaluation, and the training random stream untouched
    generator = torch.Generator(device=logp.device).manual_seed(0)
    acts = torch.multinomial(logp.exp().reshape(b * z, q), samples, replacement=True, generator=generator)
    acts = acts.reshape(b, z, samples).transpose(1, 2)
    r_sample = response_times_torch(cmp, trn, res, src, wl, acts)[0].min(dim=1).values.double().cpu().numpy()
    model.train()
    return {
        "greedy_gap": float(np.mean(r_greedy / reference)),
        "greedy_cost": float(np.mean(r_greedy)),
        f"sample{samples}_gap": float(np.mean(r_sample / reference)),
    }


class StepResult(NamedTuple):
    """What one REINFORCE update saw: sampled costs (B, S), the decisions (B, S, Z), the loss, the mean per-request
    entropy and the gradient norm before clipping."""

    cost: torch.Tensor
    actions: torch.Tensor
    loss: torch.Tensor
    entropy: torch.Tensor
    grad_norm: torch.Tensor


def reinforce_step(
    model: CoRaiSNet,
    optimiser: torch.optim.Optimizer,
    instances: list[Instance],
    cfg: TrainConfig,
    device: str,
    greedy_baseline: bool,
) -> StepResult:
    """One REINFORCE update on ``instances``: S = ``cfg.samples`` decisions sampled per instance, scored exactly
    by the cost model (each is one env step's dispatch and reward), baseline their mean or the greedy decode's cost.
    """
    edges, reqs = observation_tensors(instances, device)
    logp = model(edges, reqs)  # (B, Z, Q)
    b, z, q = logp.shape
    acts = torch.multinomial(logp.detach().exp().reshape(b * z, q), cfg.samples, replacement=True)
    acts = acts.reshape(b, z, cfg.samples).transpose(1, 2)  # (B, S, Z)
    score = batch_scorer(instances, device)
    cost = score(acts)  # (B, S)
    # baseline: the mean of the S samples (paper), or the cost of the current greedy decode (self-critical)
    greedy = logp.detach().argmax(dim=-1).unsqueeze(1)
    base = score(greedy) if greedy_baseline else cost.mean(dim=1, keepdim=True)  # (B, 1)
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
    return StepResult(cost, acts, loss, entropy, grad_norm)


def train(
    env_cfg: dict,
    algo_cfg: dict,
    *,
    run_dir: Path,
    seed: int,
    steps: int,
    device: str = "cpu",
    resume: bool = False,
) -> Path:
    """Train the dispatcher on instances of ``env_cfg`` (``id`` CoRaiS-v0 or CoRaiS-v1, ``kwargs``: scale,
    scenario_overrides; see :func:`training_scenario`).

    Returns the path of the final model (``run_dir/model.pt``). Checkpoints hold the model, the optimiser,
    the batch/step counters, the elapsed time and the random states, so ``resume=True`` continues the run
    in ``run_dir`` from its newest one up to ``steps``. On SIGINT/SIGTERM/SIGHUP the current batch ends,
    ``checkpoints/model_interrupted_<step>.pt`` and ``model.pt`` are saved and
    :class:`agents.callbacks.TrainingInterrupted` is raised.
    """
    from torch.utils.tensorboard import SummaryWriter

    from agents.callbacks import (
        GracefulInterrupt,
        TrainingInterrupted,
        latest_trainer_checkpoint,
        restore_rng_states,
        rng_states,
    )
    from agents.corais.policy import load_model
    from offline.corais import solve_exact

    cfg = TrainConfig.from_dict(dict(algo_cfg))
    scenario = training_scenario(env_cfg)
    if steps < 1:
        raise ValueError(f"steps={steps} is invalid: expected >= 1 (instances to dispatch)")
    run_dir = Path(run_dir)
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    rng = np.random.default_rng(seed)
    batches = math.ceil(steps / cfg.batch_size)
    saved_state: dict[str, Any] | None = None
    if resume:
        latest = latest_trainer_checkpoint(run_dir)
        if latest is None:
            raise ValueError(f"resume={run_dir} has no checkpoint to continue from (checkpoints/model_<step>.pt)")
        model, saved = load_model(latest[0], device=device)
        saved_state = saved.get("trainer_state")
        if saved_state is None:
            raise ValueError(f"{latest[0]} holds no trainer state (saved by an older trainer): it cannot be resumed")
        if int(saved_state["batch"]) >= batches:
            raise ValueError(f"steps={steps} is invalid for resume={run_dir}: {latest[0].name} is at step "
                             f"{saved_state['step']}; expected steps > {saved_state['step']}")
    elif cfg.init_from:
        model = load_model(Path(cfg.init_from), device=device)[0]
    else:
        model = CoRaiSNet(ModelConfig(**cfg.model)).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    writer = SummaryWriter(log_dir=str(run_dir))  # resumed: a new events file in the same folder
    if saved_state is None:
        meta = {"env_cfg": env_cfg, "algo_cfg": asdict(cfg), "seed": seed, "steps": steps,
                "scale": scenario.scale, "parameters": count_parameters(model)}
        (run_dir / "corais_config.json").write_text(json.dumps(meta, indent=2, default=str))
        writer.add_text("hparams", json.dumps(meta, default=str))

    # fixed validation set with exact references (seeded apart from the training stream)
    val_rng = np.random.default_rng(seed + 1_000_003)
    val = make_batch(scenario, val_rng, cfg.eval_instances)
    reference = np.array([solve_exact(i, time_limit=cfg.eval_time_limit, require_incumbent=True).cost for i in val])

    start = time.perf_counter()
    best_gap, first_batch = math.inf, 1
    if saved_state is not None:
        optimiser.load_state_dict(saved_state["optimizer"])
        restore_rng_states(saved_state["rng"], rng)
        start -= float(saved_state["elapsed_s"])  # the wall-time budget and lr schedule go on where they were
        best_gap, first_batch = float(saved_state["best_gap"]), int(saved_state["batch"]) + 1
        print(f"[corais] resuming at batch {first_batch} (step {saved_state['step']})", flush=True)

    def checkpoint(path: Path, batch: int) -> Path:
        """Model plus everything resuming needs (tensors and plain containers only)."""
        state = {"batch": batch, "step": batch * cfg.batch_size, "elapsed_s": time.perf_counter() - start,
                 "best_gap": best_gap, "optimizer": optimiser.state_dict(), "rng": rng_states(rng)}
        return save_model(path, model, batches=batch, steps=batch * cfg.batch_size, trainer_state=state)

    model.train()
    batch = first_batch - 1
    interrupt = GracefulInterrupt()
    with interrupt:
        for batch in range(first_batch, batches + 1):
            progress = min(1.0, (time.perf_counter() - start) / (cfg.max_minutes * 60))  # share of the budget
            if cfg.lr_final is not None:  # geometric annealing over the wall-time budget
                for group in optimiser.param_groups:
                    group["lr"] = cfg.lr * (cfg.lr_final / cfg.lr) ** progress
            greedy_now = cfg.baseline == "greedy" or (cfg.greedy_phase > 0 and progress >= 1.0 - cfg.greedy_phase)
            instances = make_batch(scenario, rng, cfg.batch_size)
            cost, _, loss, entropy, grad_norm = reinforce_step(model, optimiser, instances, cfg, device, greedy_now)

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
                checkpoint(run_dir / "checkpoints" / f"model_{step}.pt", batch)
            if last or interrupt.requested:
                break
    if interrupt.requested:
        step = batch * cfg.batch_size
        saved_path = checkpoint(run_dir / "checkpoints" / f"model_interrupted_{step}.pt", batch)
        save_model(run_dir / "model.pt", model, batches=batch, steps=step)
        writer.flush()
        writer.close()
        raise TrainingInterrupted(interrupt.signum or 2, saved_path)
    writer.flush()
    writer.close()
    return save_model(run_dir / "model.pt", model, batches=batch, steps=batch * cfg.batch_size,
                      minutes=(time.perf_counter() - start) / 60)


def load_policy(run_dir: Path, env: gym.Env, **kwargs: Any) -> CoRaiSPolicy:
    """Contract 5: the CoRaiS policy of a run folder; kwargs ``samples`` (None = greedy), ``checkpoint``."""
    return load_corais_policy(run_dir, env, **kwargs)


@dataclass
class CLIConfig:
    """``python -m agents.corais.trainer`` (key=value; see :func:`main`)."""

    run_dir: str = "???"  # mandatory: the run folder (model.pt, TensorBoard events, checkpoints/)
    scale: list[int] = field(default_factory=lambda: [10, 5, 100])  # (N, Q, Z) of the training instances
    env_id: str = "CoRaiS-v0"  # CoRaiS-v0 or CoRaiS-v1 (its instance distribution)
    seed: int = 0
    steps: int = 10**9  # instances to dispatch (default: until algo.max_minutes)
    device: str = "cpu"
    experiment: str | None = None  # edge_sched_gym/conf/experiment/<name>.yaml whose algo, steps and env scale apply first
    resume: bool = False  # continue run_dir from its newest checkpoint (up to steps)
    algo: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.seed < 0:
            raise ValueError(f"steps={self.steps}, seed={self.seed} are invalid: expected steps >= 1, seed >= 0")


def _experiment(name: str) -> dict[str, Any]:
    """``algo``, ``steps``, ``scale`` and ``env_id`` of edge_sched_gym/conf/experiment/<name>.yaml (e.g. corais_train_paper)."""
    import yaml

    conf = Path(__file__).resolve().parents[2] / "edge_sched_gym" / "conf" / "experiment"
    path = conf / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"experiment={name!r} is not in {conf}; valid: {sorted(p.stem for p in conf.glob('*.yaml'))}")
    preset = yaml.safe_load(path.read_text()) or {}
    out: dict[str, Any] = {"algo": preset.get("algo") or {}}
    if "steps" in preset:
        out["steps"] = preset["steps"]
    scale = ((preset.get("env") or {}).get("kwargs") or {}).get("scale")
    if scale is not None:
        out["scale"] = scale
    for entry in preset.get("defaults") or []:  # `- override /env: corais-v1` picks the env version
        if isinstance(entry, dict) and "override /env" in entry:
            out["env_id"] = {"corais-v0": "CoRaiS-v0", "corais-v1": "CoRaiS-v1"}.get(str(entry["override /env"]),
                                                                                    "CoRaiS-v0")
    return out


def main(argv: list[str] | None = None) -> None:
    """Train without Hydra, key=value overrides of :class:`CLIConfig` (``algo.<key>`` as in edge_sched_gym/conf/algo/corais.yaml)::

        python -m agents.corais.trainer run_dir=runs/corais_cpu algo.max_minutes=13.5
        python -m agents.corais.trainer run_dir=runs/corais_v1 env_id=CoRaiS-v1 scale=[10,5,100]
        python -m agents.corais.trainer run_dir=runs/corais_seed7 seed=7 algo.lr=2e-4 algo.model.edge_mixing=mlp
        python -m agents.corais.trainer run_dir=runs/corais_paper experiment=corais_train_paper device=cuda
        python -m agents.corais.trainer run_dir=runs/corais_more algo.init_from=runs/corais_cpu/model.pt
        python -m agents.corais.trainer run_dir=runs/corais_cpu resume=true   # after Ctrl-C / SIGTERM

    ``python -m agents.corais.trainer --help`` lists every key with its default.
    """
    import sys

    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from agents.cli import parse_cli, usage

    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(usage(CLIConfig, main.__doc__))
        return
    try:
        base = parse_cli(CLIConfig, args)  # types and keys first
        if base.experiment:  # the preset, then the command line again on top
            preset = OmegaConf.merge(OmegaConf.structured(CLIConfig), _experiment(base.experiment))
            base = OmegaConf.to_object(OmegaConf.merge(preset, OmegaConf.from_cli(args)))  # type: ignore[assignment]
        algo = asdict(base.algo)
        TrainConfig.from_dict(algo)
    except OmegaConfBaseException as err:
        print(f"error: experiment={base.experiment}: {err}", file=sys.stderr)
        sys.exit(2)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    from agents.callbacks import TrainingInterrupted

    try:
        path = train({"id": base.env_id, "kwargs": {"scale": list(base.scale)}}, algo, run_dir=Path(base.run_dir), seed=base.seed,
                     steps=base.steps, device=base.device, resume=base.resume)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except TrainingInterrupted as stop:
        print(f"interrupted: saved {stop.saved}; continue with: python -m agents.corais.trainer "
              f"run_dir={base.run_dir} resume=true", file=sys.stderr)
        sys.exit(stop.exit_code)
    print(path)


if __name__ == "__main__":
    main()
