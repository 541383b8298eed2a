"""Trainer of the constructive CoRaiS dispatcher (``agents.corais.pomo``; contract 5: ``train`` and ``load_policy``).

Three stages, each resumable:

1. **Teacher labels**: for every training scale, ``teacher_instances`` instances of the env's distribution (instance
   seeds drawn from the run seed) are solved by our tuned ILS stopped after ``teacher_kicks`` kicks (deterministic);
   the dispatches go to ``run_dir/teacher_labels.npz`` (instance seeds, dispatches and costs per scale, no pickle; a
   JSON meta file beside it). ``dataset=<file>`` reuses the labels of another run. About 5 min of one core with the
   defaults.
2. **Imitation**: ``imitation_epochs`` passes over the labels; each label is replayed in the list order and the
   network learns by cross-entropy the edge the search chose for each request, given the partial dispatch before
   it (teacher forcing); the learning rate decays linearly to ``imitation_lr / 10``.
3. **POMO**: until ``max_minutes`` (or ``steps`` dispatched instances), batches of ``pomo_batch`` fresh instances
   cycling over ``pomo_scales``; per instance ``rollouts`` rollouts, rollout k with its first request forced onto
   edge k mod Q and the rest sampled; REINFORCE with the rollouts' mean cost as shared baseline, the advantage
   divided by it.

A fixed validation set (``eval_instances`` at ``eval_scale``, seeds apart from training) is scored after every
epoch and every ``eval_every`` POMO batches: the greedy rollout and the ``starts``-start policy against
``list_greedy_ls`` (TensorBoard ``eval/``); the best multi-start model is ``model.pt``. Checkpoints
(``checkpoints/``) hold the model, the optimiser, the stage and the random states; on SIGINT/SIGTERM/SIGHUP the
current batch ends, a checkpoint is written and ``python train.py resume=<run>`` continues.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.corais.pomo import (
    DEFAULT_BUDGET,
    Batch,
    ListSchedulerNet,
    PomoDispatcher,
    PomoNetConfig,
    best_known,
    costs,
    rollout,
    scenario_instances,
    starts_for,
)

ENV_IDS: tuple[str, ...] = ("CoRaiS-v1",)
LABELS_FILE = "teacher_labels.npz"
MODEL_FILE = "model.pt"


@dataclass
class TrainConfig:
    """Hyper-parameters (schema of edge_sched_gym/conf/algo/corais_pomo.yaml, ConfigStore ``algo/corais_pomo_schema``)."""

    name: str = "corais_pomo"
    kind: str = "custom"
    default_steps: int = 100_000_000  # POMO instances; effectively unbounded: max_minutes ends the run
    teacher_scales: list[list[int]] = field(
        default_factory=lambda: [[10, 5, 100], [20, 10, 100], [20, 10, 50], [30, 15, 200]])
    teacher_instances: list[int] = field(default_factory=lambda: [1400, 2400, 400, 320])
    teacher_kicks: list[int] = field(default_factory=lambda: [60, 60, 60, 20])
    dataset: str | None = None  # a teacher_labels.npz to reuse instead of labelling
    workers: int = 1  # processes that label in parallel (one ILS per instance)
    imitation_epochs: int = 20
    imitation_batch: int = 32
    imitation_lr: float = 1e-3
    pomo_scales: list[list[int]] = field(default_factory=lambda: [[20, 10, 100], [10, 5, 100], [20, 10, 50]])
    pomo_batch: int = 16
    rollouts: int = 16
    lr: float = 1e-4
    max_minutes: float = 5.0  # wall time of the POMO stage
    grad_clip: float = 1.0
    eval_scale: list[int] = field(default_factory=lambda: [20, 10, 100])
    eval_instances: int = 64
    eval_every: int = 100
    checkpoint_every: int = 200
    starts: int = 100  # multi-start rollouts of the policy (PomoDispatcher) and of the validation, at most
    budget: int = 100_000  # and at most budget // (Q Z) of them (edge evaluations per decision; starts_for)
    threads: int = 1
    model: PomoNetConfig = field(default_factory=PomoNetConfig)

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> TrainConfig:
        """Validate ``cfg`` against the schema (unknown keys, types, ranges); ``model`` stays a plain dict."""
        from agents.cli import merge_schema

        out = cls(**merge_schema(cls, cfg, "corais_pomo"))  # type: ignore[arg-type]
        if not len(out.teacher_scales) == len(out.teacher_instances) == len(out.teacher_kicks):
            raise ValueError(f"teacher_scales, teacher_instances, teacher_kicks have lengths {len(out.teacher_scales)}, "
                             f"{len(out.teacher_instances)}, {len(out.teacher_kicks)}: expected one entry per scale")
        for key in ("teacher_scales", "pomo_scales"):
            for scale in getattr(out, key):
                if len(scale) != 3 or min(scale) < 1:
                    raise ValueError(f"{key} entry {scale} is invalid: expected [N, Q, Z] with positive integers")
        if len(out.eval_scale) != 3 or not out.pomo_scales:
            raise ValueError(f"eval_scale={out.eval_scale}, pomo_scales={out.pomo_scales} are invalid: expected "
                             "[N, Q, Z] and at least one POMO scale")
        for key in ("imitation_batch", "pomo_batch", "rollouts", "eval_instances", "eval_every", "checkpoint_every",
                    "starts", "budget", "workers"):
            if int(getattr(out, key)) < 1:
                raise ValueError(f"{key}={getattr(out, key)} is invalid: expected an integer >= 1")
        for key in ("teacher_instances", "teacher_kicks"):
            if min(getattr(out, key), default=1) < 1:
                raise ValueError(f"{key}={getattr(out, key)} is invalid: expected integers >= 1")
        if out.imitation_epochs < 0 or out.max_minutes < 0 or out.threads < 0:
            raise ValueError(f"imitation_epochs={out.imitation_epochs}, max_minutes={out.max_minutes}, "
                             f"threads={out.threads} are invalid: expected values >= 0")
        if not (out.lr > 0 and out.imitation_lr > 0 and out.grad_clip > 0):
            raise ValueError(f"lr={out.lr}, imitation_lr={out.imitation_lr}, grad_clip={out.grad_clip} are invalid: "
                             "expected values > 0")
        PomoNetConfig(**out.model)  # type: ignore[arg-type]
        return out


# ------------------------------------------------------------------------------------------ teacher labels

def scale_key(scale: Any) -> str:
    """``"N-Q-Z"``: the name of a scale's arrays in the labels file."""
    return "-".join(str(int(x)) for x in scale)


@dataclass
class ScaleLabels:
    """The teacher's dispatches of one scale: instance seeds (n,), dispatches (n, Z) and their costs (n,)."""

    scale: tuple[int, int, int]
    seeds: np.ndarray
    actions: np.ndarray
    cost: np.ndarray

    def __len__(self) -> int:
        return int(self.seeds.shape[0])


def save_labels(path: Path, labels: list[ScaleLabels], meta: dict[str, Any]) -> Path:
    """``path`` (.npz, arrays ``<N-Q-Z>/seeds|actions|cost``) and its meta JSON beside it; written atomically."""
    path = Path(path)
    arrays = {f"{scale_key(lab.scale)}/{name}": getattr(lab, name) for lab in labels
              for name in ("seeds", "actions", "cost")}
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2, default=str))
    return path


def load_labels(path: Path) -> tuple[list[ScaleLabels], dict[str, Any]]:
    """The labels of ``path`` (read without pickle) and their meta; a missing or malformed file raises naming
    ``dataset``."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"dataset={str(path)!r} is not a file (CoRaiS teacher labels, {LABELS_FILE})")
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    out = []
    for key in sorted({name.split("/")[0] for name in arrays}):
        try:
            scale = tuple(int(x) for x in key.split("-"))
            seeds, actions, cost = (arrays[f"{key}/{n}"] for n in ("seeds", "actions", "cost"))
        except (KeyError, ValueError):
            raise ValueError(f"dataset={str(path)!r} is not CoRaiS teacher labels (array group {key!r})") from None
        if len(scale) != 3 or actions.shape != (len(seeds), scale[2]) or cost.shape != (len(seeds),):
            raise ValueError(f"dataset={str(path)!r}: group {key!r} has inconsistent shapes")
        out.append(ScaleLabels(scale, seeds, actions, cost))  # type: ignore[arg-type]
    meta_path = path.with_suffix(".json")
    return out, json.loads(meta_path.read_text()) if meta_path.is_file() else {}


def teacher_seeds(seed: int, group: int, n: int) -> np.ndarray:
    """The instance seeds of training scale ``group`` (the same first k for every n >= k: labelling resumes)."""
    return np.random.default_rng([seed, 7_001, group]).integers(0, 2**62, size=n)


def _label_one(job: tuple[str, tuple[int, int, int], int, int, int]) -> tuple[np.ndarray, float]:
    """The teacher's dispatch of one instance and its cost (a worker's job, which generates the instance once):
    job = (env id, scale, instance seed, kicks, ILS seed)."""
    from envs.corais.dynamics import dispatch_cost

    env_id, scale, instance_seed, kicks, ils_seed = job
    instance = scenario_instances(env_id, scale, np.array([instance_seed]))[0]
    action = best_known(instance, kicks, ils_seed)
    return action, float(dispatch_cost(instance, action))


def _ignore_sigint() -> None:
    """Label workers leave Ctrl-C to the trainer, which stops after the chunk and saves."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def label_scales(cfg: TrainConfig, env_id: str, seed: int, path: Path, interrupt: Any,
                 done: list[ScaleLabels] | None = None) -> list[ScaleLabels]:
    """Label (or finish labelling) every training scale with ``cfg.workers`` processes; saves after each chunk of
    50 instances, so an interrupted run keeps what it labelled. Returns the labels."""
    import multiprocessing

    pool = multiprocessing.get_context("spawn").Pool(cfg.workers, _ignore_sigint) if cfg.workers > 1 else None

    have = {lab.scale: lab for lab in done or []}
    meta = {"env_id": env_id, "teacher": "ILS (offline.corais.search, tuned.yaml's parameters), fixed kicks",
            "teacher_kicks": dict(zip(map(scale_key, cfg.teacher_scales), cfg.teacher_kicks)), "seed": seed,
            "command": f"python train.py env=corais-v1 algo=corais_pomo seed={seed}"}
    labels: list[ScaleLabels] = []
    for group, (scale, n, kicks) in enumerate(zip(cfg.teacher_scales, cfg.teacher_instances, cfg.teacher_kicks)):
        scale = tuple(int(x) for x in scale)
        seeds = teacher_seeds(seed, group, int(n))
        old = have.get(scale)  # type: ignore[arg-type]
        lab = old if old is not None else ScaleLabels(scale, seeds[:0], np.zeros((0, scale[2]), np.int64),  # type: ignore[arg-type]
                                                      np.zeros(0))
        start_time = time.perf_counter()
        while len(lab) < n and not interrupt.requested:
            k = len(lab)
            chunk = seeds[k:min(n, k + 50)]
            jobs = [(env_id, scale, int(s), int(kicks), int(k + m)) for m, s in enumerate(chunk)]
            done_jobs = pool.map(_label_one, jobs) if pool is not None else [_label_one(j) for j in jobs]
            acts = np.stack([a for a, _ in done_jobs])
            cost = np.array([c for _, c in done_jobs])
            lab = ScaleLabels(scale, seeds[:k + len(chunk)], np.concatenate([lab.actions, acts]),  # type: ignore[arg-type]
                              np.concatenate([lab.cost, cost]))
            have[scale] = lab  # type: ignore[index]
            save_labels(path, list(have.values()), meta)
            print(f"[corais_pomo] labels {scale_key(scale)}: {len(lab)}/{n} "
                  f"({time.perf_counter() - start_time:.0f} s)", flush=True)
        labels.append(lab)
    if pool is not None:
        pool.close()
        pool.join()
    return labels


# ----------------------------------------------------------------------------------------------- training

def imitation_loss(net: ListSchedulerNet, batch: Batch, teacher: np.ndarray) -> torch.Tensor:
    """Mean cross-entropy per placement of the teacher's dispatches (B, Z), replayed in the list order."""
    _, _, ce = rollout(net, batch, 1, sample=False, teacher=torch.as_tensor(teacher))
    return ce.mean() / batch.shape[1]


def pomo_loss(net: ListSchedulerNet, batch: Batch, rollouts: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(REINFORCE loss, costs (B, P)): P multi-start sampled rollouts, shared mean baseline, relative advantage."""
    actions, logp, _ = rollout(net, batch, rollouts, sample=True)
    cost = costs(batch, actions).to(torch.float32)
    base = cost.mean(dim=1, keepdim=True)
    advantage = (cost - base) / base.clamp_min(1e-9)
    return (advantage * logp).mean(), cost


def validation(net: ListSchedulerNet, batch: Batch, reference: np.ndarray, starts: int, budget: int
               ) -> dict[str, float]:
    """Greedy and multi-start (``starts_for``) costs of ``net`` on the validation batch, as ratios to ``reference``."""
    net.eval()
    with torch.inference_mode():
        greedy = costs(batch, rollout(net, batch, 1, sample=False, forced_first=False)[0])[:, 0].numpy()
        p = starts_for(batch.shape[2], batch.shape[1], starts, budget)
        multi = costs(batch, rollout(net, batch, p, sample=False, forced_first=p > 1)[0]).amin(dim=1).numpy()
    net.train()
    return {"greedy_vs_list_greedy_ls": float(np.mean(greedy / reference)),
            "multistart_vs_list_greedy_ls": float(np.mean(multi / reference))}


def save_net(path: Path, net: ListSchedulerNet, **extra: Any) -> Path:
    """The model file (weights-only loadable: config dict, state dict, plain metadata)."""
    from agents.corais.policy import save_model

    return save_model(path, net, **extra)  # type: ignore[arg-type]


def load_net(path: Path, device: str = "cpu") -> tuple[ListSchedulerNet, dict[str, Any]]:
    """A model saved by :func:`save_net`, in eval mode, and its metadata (read weights-only)."""
    from agents.loading import load_config_model

    net, blob = load_config_model(path, device, "constructive CoRaiS model file",
                                  lambda cfg: ListSchedulerNet(PomoNetConfig(**cfg)))
    return net, {k: v for k, v in blob.items() if k != "state_dict"}


def train(env_cfg: dict[str, Any], algo_cfg: dict[str, Any], *, run_dir: Path, seed: int, steps: int,
          device: str = "cpu", resume: bool = False) -> Path:
    """Labels, imitation, POMO (module docstring); returns ``run_dir/model.pt`` (the best validated model)."""
    from torch.utils.tensorboard import SummaryWriter

    from agents.callbacks import (
        GracefulInterrupt,
        TrainingInterrupted,
        latest_trainer_checkpoint,
        restore_rng_states,
        rng_states,
    )
    from envs.corais.dynamics import dispatch_cost
    from offline.corais.greedy import list_greedy_ls

    cfg = TrainConfig.from_dict(dict(algo_cfg))
    env_id = str(env_cfg.get("id", "CoRaiS-v1"))
    if env_id not in ENV_IDS or env_cfg.get("wrappers"):
        raise ValueError(f"algo=corais_pomo trains on {list(ENV_IDS)} without wrappers, not {env_id!r}")
    if steps < 1:
        raise ValueError(f"steps={steps} is invalid: expected >= 1 (POMO instances)")
    if device != "cpu":
        raise ValueError(f"device={device!r} is invalid for algo=corais_pomo: expected 'cpu' (a small network)")
    run_dir = Path(run_dir)
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = ListSchedulerNet(PomoNetConfig(**cfg.model))  # type: ignore[arg-type]
    optimiser = torch.optim.Adam(net.parameters(), lr=cfg.imitation_lr)
    state: dict[str, Any] = {"stage": "labels", "epoch": 0, "batch": 0, "updates": 0, "elapsed_s": 0.0,
                             "best": math.inf}
    if resume:
        latest = latest_trainer_checkpoint(run_dir)
        if latest is None and not (run_dir / LABELS_FILE).is_file():
            raise ValueError(f"resume={run_dir} has nothing to continue from (no checkpoint, no {LABELS_FILE})")
        if latest is not None:
            net, saved = load_net(latest[0])
            net.train()
            optimiser = torch.optim.Adam(net.parameters(), lr=cfg.imitation_lr)
            state = dict(saved["trainer_state"])
            optimiser.load_state_dict(state.pop("optimizer"))
            restore_rng_states(state.pop("rng"), rng)
            print(f"[corais_pomo] resuming at stage {state['stage']} epoch {state['epoch']} batch {state['batch']}",
                  flush=True)
    else:
        meta = {"env_cfg": env_cfg, "algo_cfg": asdict(cfg), "seed": seed, "steps": steps}
        (run_dir / "corais_pomo_config.json").write_text(json.dumps(meta, indent=2, default=str))
    writer = SummaryWriter(log_dir=str(run_dir))
    val_instances = scenario_instances(env_id, tuple(cfg.eval_scale),  # type: ignore[arg-type]
                                       np.random.default_rng([seed, 9_001]).integers(0, 2**62, cfg.eval_instances))
    val_batch = Batch(val_instances)
    reference = np.array([float(dispatch_cost(i, list_greedy_ls(i))) for i in val_instances])
    labels_path = Path(cfg.dataset) if cfg.dataset else run_dir / LABELS_FILE
    interrupt = GracefulInterrupt()

    def checkpoint(interrupted: bool = False) -> Path:
        """``checkpoints/model[_interrupted]_<gradient updates>.pt``: the net, the optimiser, the stage, the rngs."""
        blob = {**state, "optimizer": optimiser.state_dict(), "rng": rng_states(rng)}
        name = f"model_{'interrupted_' if interrupted else ''}{state['updates']}.pt"
        return save_net(run_dir / "checkpoints" / name, net, trainer_state=blob)

    def evaluate(step: int) -> None:
        metrics = validation(net, val_batch, reference, cfg.starts, cfg.budget)
        for key, value in metrics.items():
            writer.add_scalar(f"eval/{key}", value, step)
        print(f"[corais_pomo] {state['stage']} step {step} " + " ".join(f"{k} {v:.4f}" for k, v in metrics.items()),
              flush=True)
        if metrics["multistart_vs_list_greedy_ls"] < state["best"]:
            state["best"] = metrics["multistart_vs_list_greedy_ls"]
            save_net(run_dir / MODEL_FILE, net, stage=state["stage"], epoch=state["epoch"], batch=state["batch"],
                     starts=cfg.starts, budget=cfg.budget, **metrics)

    def stop() -> None:
        saved = checkpoint(interrupted=True)
        if not (run_dir / MODEL_FILE).is_file():
            save_net(run_dir / MODEL_FILE, net, stage=state["stage"], starts=cfg.starts, budget=cfg.budget)
        writer.close()
        raise TrainingInterrupted(interrupt.signum or 2, saved)

    with interrupt:
        # 1. labels
        if cfg.dataset:
            labels, _ = load_labels(labels_path)
        else:
            done = load_labels(labels_path)[0] if labels_path.is_file() else None
            labels = label_scales(cfg, env_id, seed, labels_path, interrupt, done)
            if interrupt.requested:
                stop()
        if state["stage"] == "labels":
            state["stage"] = "imitation"
        # 2. imitation
        batches = {(g, s): None for g, lab in enumerate(labels) for s in range(0, len(lab), cfg.imitation_batch)}
        total = max(1, cfg.imitation_epochs * len(batches))
        while state["stage"] == "imitation" and state["epoch"] < cfg.imitation_epochs:
            keys = list(batches)  # the epoch's order comes from (seed, epoch) alone, so a resumed epoch replays it
            jobs = [keys[i] for i in np.random.default_rng([seed, 5_003, state["epoch"]]).permutation(len(keys))]
            losses = []
            for k, (g, s) in enumerate(jobs):
                if k < state["batch"]:
                    continue  # resumed mid-epoch: the batches already done are skipped
                done_share = (state["epoch"] * len(jobs) + k) / total
                for group in optimiser.param_groups:
                    group["lr"] = cfg.imitation_lr * (1.0 - 0.9 * done_share)
                lab = labels[g]
                if batches[(g, s)] is None:
                    batches[(g, s)] = Batch(scenario_instances(env_id, lab.scale, lab.seeds[s:s + cfg.imitation_batch]))
                loss = imitation_loss(net, batches[(g, s)], lab.actions[s:s + cfg.imitation_batch])  # type: ignore[arg-type]
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
                optimiser.step()
                losses.append(loss.item())
                state["batch"], state["updates"] = k + 1, state["updates"] + 1
                if interrupt.requested:
                    stop()
            writer.add_scalar("imitation/cross_entropy", float(np.mean(losses)) if losses else math.nan,
                              state["epoch"] + 1)
            state["epoch"] += 1
            state["batch"] = 0
            evaluate(state["epoch"])
            checkpoint()
        if state["stage"] == "imitation":
            state["stage"], state["batch"] = "pomo", 0
            if cfg.imitation_epochs == 0:
                evaluate(0)
            for group in optimiser.param_groups:
                group["lr"] = cfg.lr
        # 3. POMO
        start = time.perf_counter() - float(state["elapsed_s"])
        pomo_batches = math.ceil(steps / cfg.pomo_batch)
        while state["batch"] < pomo_batches and time.perf_counter() - start < cfg.max_minutes * 60:
            scale = tuple(cfg.pomo_scales[state["batch"] % len(cfg.pomo_scales)])
            instances = scenario_instances(env_id, scale, rng.integers(0, 2**62, size=cfg.pomo_batch))  # type: ignore[arg-type]
            loss, cost = pomo_loss(net, Batch(instances), cfg.rollouts)
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.grad_clip)
            optimiser.step()
            state["batch"] += 1
            state["updates"] += 1
            state["elapsed_s"] = time.perf_counter() - start
            step = state["batch"] * cfg.pomo_batch
            if state["batch"] % 10 == 0:
                writer.add_scalar("pomo/cost_mean", float(cost.mean()), step)
                writer.add_scalar("pomo/cost_best", float(cost.amin(dim=1).mean()), step)
                writer.add_scalar("pomo/loss", loss.item(), step)
            if state["batch"] % cfg.eval_every == 0:
                evaluate(step)
            if state["batch"] % cfg.checkpoint_every == 0:
                checkpoint()
            if interrupt.requested:
                stop()
        if state["stage"] == "pomo" and state["batch"] % cfg.eval_every:
            evaluate(state["batch"] * cfg.pomo_batch)
    writer.close()
    return run_dir / MODEL_FILE


def load_policy(run_dir: Path, env: Any, starts: int | None = None, budget: int | None = None,
                checkpoint: str = MODEL_FILE, **kwargs: Any) -> PomoDispatcher:
    """Contract 5: the dispatcher of a run folder (``starts``, ``budget``: see ``starts_for``; default the run's)."""
    path = Path(run_dir) / checkpoint
    if not path.is_file():
        raise ValueError(f"run_dir={str(run_dir)!r} has no {checkpoint!r}: expected an algo=corais_pomo run folder")
    net, meta = load_net(path)
    return PomoDispatcher(net, starts=int(starts or meta.get("starts", 100)),
                          budget=int(budget or meta.get("budget", DEFAULT_BUDGET)), **kwargs)
