"""Imitation of OINC-v0's online reference: a :class:`agents.oinc.prior.PriorNet` learns ``slo_liu_ls``'s actions.

Why: in the ladder's pair (Ekya), the online reference ``oinc_rollout+ekya`` plays ``slo_liu_ls``'s action every slot
(an inference action changes nothing after its slot there, so the MPC's forks agree: ``offline.oinc.online``); the
local search scores I(J + 2W) single-head changes per move (~9 ms a slot), and its pair runs Ekya at a higher tuned
retraining share than ``slo_liu+ekya`` because its actions keep the SLO hit rate up with less inference compute.
The student is the same per-head network as ``algo=oinc_prior`` (logits = α·[a = slo_liu's] + f_θ(exact
single-head cost changes, ...)) with ``slo_liu`` at the search pair's margin as its backbone, so one forward pass
can pick, per head, the moves the search would make.

Training (:func:`train`, ``python train.py env=oinc-v0 algo=oinc_dagger``): ``label_episodes`` episodes (half on
the training instance, half on ``train_instances`` pool instances, seeds ``instance_pool_base``..) are played and
every slot is labelled with the search's action (:func:`offline.oinc.heuristics.local_search` from ``slo_liu``'s).
Under Ekya the slots are exogenous (tasks, drift, jobs and shares do not depend on the inference actions), so the
states a student would visit are the teacher's: DAgger's later rounds would add nothing, and this is its round 0.
Then ``epochs`` epochs of per-head cross-entropy to the search's choices; the epoch with the best validation gain
(the exact slot reward over ``slo_liu``'s on the eval seeds' slots, the search's own objective) is ``model.pt``.
The labels are ``teacher_labels.npz`` (instance and episode seeds and the search's actions; the slots and their
features are rebuilt by replaying the episodes, ~0.5 s each): ``dataset=<file>`` fits a student from them.
The run's env kwargs get the pair's controller and share (null share: ``slo_liu_ls+ekya``'s tuned one), so
evaluate.py and agents.compare play it in the search's pair.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.curves import Column, CurveLog
from agents.imitation import LabelArrays, fixed_instance_kwargs, gradient_step
from agents.loading import save_config_model as save_model
from agents.oinc.prior import (
    CONTROLLERS,
    ENV_ID,
    MODEL_FILE,
    PriorModelConfig,
    PriorNet,
    _episode_slots,
    _record_pair,
    batch_slot_features,
    chunked_forward,
    validation_gain,
)
from envs.oinc.env import OINCEnv
from offline.oinc.heuristics import LS_PAIR, SloLiuPolicy, local_search, single_head_changes, tuned_pair_kwargs
from offline.oinc.slot import Slot, batch_slot_rewards

LABELS_FILE = "teacher_labels.npz"
CURVE: tuple[Column, ...] = (
    Column("epoch", "d"), Column("slots", "d"), Column("seconds", ".1f"), Column("train_loss", ".4f", "train/loss"),
    Column("val_agreement", ".4f", "eval/teacher_agreement"), Column("val_gain", ".5f", "eval/gain_per_slot"),
    Column("teacher_gain", ".5f", "reference/teacher_gain_per_slot"),
)


@dataclass
class SearchLabels(LabelArrays):
    """The search's action (H,) for every slot of the labelled episodes, in order; ``slot_episode`` indexes the
    (instance seed, episode seed) rows of ``instance_seed`` / ``episode_seed`` (one row per episode)."""

    teacher_action: np.ndarray  # (S, H) int64
    slot_episode: np.ndarray  # (S,) int64
    instance_seed: np.ndarray  # (E,) int64
    episode_seed: np.ndarray  # (E,) int64

    WHAT = "a teacher_labels.npz written by algo=oinc_dagger"

    @classmethod
    def concatenate(cls, parts: list[SearchLabels]) -> SearchLabels:  # type: ignore[override]
        offsets = np.cumsum([0] + [len(p.instance_seed) for p in parts[:-1]])
        return SearchLabels(np.concatenate([p.teacher_action for p in parts]),
                            np.concatenate([p.slot_episode + o for p, o in zip(parts, offsets, strict=True)]),
                            np.concatenate([p.instance_seed for p in parts]),
                            np.concatenate([p.episode_seed for p in parts]))


@dataclass
class TrainConfig:
    """The schema of edge_sched_gym/conf/algo/oinc_dagger.yaml (Hydra ConfigStore ``algo/oinc_dagger_schema``)."""

    name: str = "oinc_dagger"
    kind: str = "custom"
    default_steps: int = 20_000  # the most labelled slots
    controller: str = "ekya"  # the pair's retraining controller (one that never pauses: ekya, dedas, zhang)
    retraining_share: float | None = None  # null = slo_liu_ls+ekya's tuned share
    label_episodes: int = 40  # labelled episodes (200 slots each on the default instance)
    max_moves: int = 100  # the search's moves per slot (slo_liu_ls's default)
    epochs: int = 20
    batch_slots: int = 32  # slots per gradient step
    lr: float = 1e-3
    grad_clip: float = 1.0
    hidden: int = 64
    layers: int = 2
    temperature: float = 0.25  # initial 1/alpha
    train_instances: int = 16  # pool of extra training instances (instance seeds instance_pool_base..)
    instance_pool_base: int = 10_000  # disjoint from offline.partition's 0, 100..199 and 900..909
    fixed_instance_share: float = 0.5  # share of episodes on the env's own instance
    eval_episodes: int = 2  # validation episodes on the training instance (+ as many on pool instances)
    eval_seed: int = 1000
    max_minutes: float = 30.0
    dataset: str = ""  # a teacher_labels.npz to fit from (no labelling)
    threads: int = 1

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> TrainConfig:
        """Validate ``cfg`` against the schema (unknown keys, types, ranges)."""
        from agents.cli import merge_schema
        from offline.partition import check_instance_pool

        out = cls(**merge_schema(cls, cfg, "oinc_dagger"))  # type: ignore[arg-type]
        for key in ("label_episodes", "epochs", "batch_slots", "hidden", "layers", "eval_episodes", "threads"):
            if int(getattr(out, key)) < 1:
                raise ValueError(f"algo.{key}={getattr(out, key)} is invalid: expected an integer >= 1")
        if out.max_moves < 0 or not out.temperature > 0 or not 0.0 <= out.fixed_instance_share <= 1.0:
            raise ValueError("algo.max_moves must be >= 0, temperature > 0 and fixed_instance_share in [0, 1]")
        if out.controller not in CONTROLLERS:
            raise ValueError(f"algo.controller={out.controller!r} is invalid: expected one of {list(CONTROLLERS)} "
                             "(under a controller that pauses retraining the slots are not exogenous)")
        if out.retraining_share is not None and not 0.0 < out.retraining_share < 1.0:
            raise ValueError(f"algo.retraining_share={out.retraining_share} is invalid: expected null or (0, 1)")
        check_instance_pool(out.instance_pool_base, out.train_instances)
        return out


def search_labels(slots: list[Slot], max_moves: int) -> np.ndarray:
    """(S, H) the search's action on each slot, started from the slot's ``slo_liu`` action (``slot.heuristic``)."""
    if not slots:
        return np.zeros((0, 0), np.int64)
    neighbours = single_head_changes(slots[0].heuristic.size, slots[0].cpu_hz.size)
    return np.stack([local_search(s, np.asarray(s.heuristic, np.int64), *neighbours, max_moves)[0] for s in slots])


def head_cross_entropy(logits: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """mean over slots of Σ_h −log π_h(a_teacher,h | s): the per-head cross-entropy of a joint action
    (``logits`` (S, H, C) −inf off the valid choices, ``teacher`` (S, H))."""
    return -torch.log_softmax(logits, dim=-1).gather(2, teacher[..., None]).squeeze(-1).sum(dim=1).mean()


def train(env_cfg: dict[str, Any], algo_cfg: dict[str, Any], *, run_dir: Path, seed: int, steps: int,
          device: str = "cpu", resume: bool = False) -> Path:
    """Label, then fit (module docstring); returns ``run_dir/model.pt``. On SIGINT/SIGTERM/SIGHUP the current
    episode or epoch ends, the labels and ``model.pt`` are saved and :class:`agents.callbacks.TrainingInterrupted` is
    raised; ``resume=True`` fits again from the run's labels (labelling what is missing)."""
    from agents.callbacks import GracefulInterrupt, TrainingInterrupted

    cfg = TrainConfig.from_dict(dict(algo_cfg))
    kwargs = fixed_instance_kwargs("oinc_dagger", env_cfg, (ENV_ID,), steps, "labelled slots")
    pair = tuned_pair_kwargs(LS_PAIR)
    share = pair["retraining_share"] if cfg.retraining_share is None else cfg.retraining_share
    kwargs = {**kwargs, "retraining": cfg.controller, "retraining_share": float(share)}
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    _record_pair(run_dir, kwargs)
    torch.manual_seed(seed)
    torch.set_num_threads(int(cfg.threads))
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    env = OINCEnv(**{**kwargs, "resample_instance": False})
    base_seed = int(kwargs.get("instance_seed", 0))
    instances = {base_seed: env.instance}
    pool = [cfg.instance_pool_base + i for i in range(cfg.train_instances)]
    margin = float(pair["slo_margin"])
    heuristic = SloLiuPolicy(slo_margin=margin)

    def instance(seed_: int) -> Any:
        if seed_ not in instances:
            instances[seed_] = OINCEnv(**{**kwargs, "instance_seed": seed_}).instance
        return instances[seed_]

    def replay(inst_seed: int, ep_seed: int) -> list[Slot]:
        return _episode_slots(env, instance(inst_seed), ep_seed, heuristic)

    model = PriorNet(PriorModelConfig(env.instance.num_devices, env.instance.num_edges, margin, cfg.hidden,
                                      cfg.layers, cfg.temperature))
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    val = []
    for e in range(cfg.eval_episodes):
        for inst in [base_seed, *([pool[e % len(pool)]] if pool else [])]:
            val += replay(inst, cfg.eval_seed + e)
    val_teacher = search_labels(val, cfg.max_moves)
    val_feats = batch_slot_features(val)
    val_tensors = tuple(torch.from_numpy(x) for x in val_feats)
    val_data = list(zip(val, *val_feats, strict=True))
    teacher_gain = float(np.mean(
        batch_slot_rewards(val, val_teacher[:, None])[:, 0]
        - batch_slot_rewards(val, np.stack([s.heuristic for s in val])[:, None])[:, 0]))
    print(f"[oinc_dagger] {len(val)} validation slots; the search gains {teacher_gain:+.5f} reward/slot over slo_liu "
          f"there ({time.perf_counter() - start:.0f}s)", flush=True)

    dataset = str(run_dir / LABELS_FILE) if resume else cfg.dataset
    if dataset:
        saved_kwargs = SearchLabels.load_arrays(Path(dataset))[1].get("env_kwargs")
        if saved_kwargs is not None and saved_kwargs != kwargs:  # the slots are replayed with the run's kwargs
            raise ValueError(f"dataset={dataset!r} was labelled with env kwargs {saved_kwargs}, the run has {kwargs} "
                             "(the share changes the slots: label at the share the student will play)")
    labels = SearchLabels.load(Path(dataset))[0] if dataset else SearchLabels(
        np.zeros((0, 3 * env.instance.num_devices), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
        np.zeros(0, np.int64))
    meta = {"env_id": ENV_ID, "env_kwargs": kwargs, "teacher": "slo_liu_ls", "max_moves": cfg.max_moves,
            "slo_margin": margin, "seed": seed}
    episodes: list[list[Slot]] = [replay(int(i), int(s)) for i, s in zip(labels.instance_seed, labels.episode_seed,
                                                                         strict=True)]
    if resume:  # new episodes, not the first run's sequence again
        rng = np.random.default_rng([seed, len(episodes)])
    interrupt = GracefulInterrupt()
    with interrupt:
        interrupt.requested  # noqa: B018  (from here a signal stops at the next episode or epoch)
        collect = cfg.label_episodes - len(episodes) if (resume or not cfg.dataset) else 0
        for _ in range(max(collect, 0)):
            inst = base_seed if rng.random() < cfg.fixed_instance_share or not pool else pool[rng.integers(len(pool))]
            ep_seed = int(rng.integers(10_000_000, 2**31 - 1))
            slots = replay(inst, ep_seed)
            part = SearchLabels(search_labels(slots, cfg.max_moves), np.zeros(len(slots), np.int64),
                                np.array([inst]), np.array([ep_seed]))
            labels = SearchLabels.concatenate([labels, part])
            episodes.append(slots)
            if len(episodes) % 5 == 0 or interrupt.requested:
                labels.save(run_dir / LABELS_FILE, meta)
                print(f"[oinc_dagger] {len(episodes)} episodes labelled ({len(labels)} slots) at "
                      f"{time.perf_counter() - start:.0f}s", flush=True)
            if interrupt.requested or len(labels) >= steps or time.perf_counter() - start > cfg.max_minutes * 60 * 0.5:
                break
        if collect > 0:
            labels.save(run_dir / LABELS_FILE, meta)
        slots = [s for ep in episodes for s in ep]
        teacher = torch.from_numpy(labels.teacher_action)
        curve = CurveLog(run_dir, CURVE, "slots")
        best_gain, best_state = validation_gain(model, val_data, val_tensors)["gain"], copy.deepcopy(model.state_dict())
        save_model(run_dir / "model_best.pt", model, epoch=0, val_gain=best_gain)
        for epoch in range(1, cfg.epochs + 1):
            if interrupt.requested:
                break
            model.train()
            order = rng.permutation(len(slots))
            losses = []
            for first in range(0, order.size, cfg.batch_slots):
                idx = order[first:first + cfg.batch_slots]
                tokens, prior, valid = (torch.from_numpy(x) for x in batch_slot_features([slots[i] for i in idx]))
                loss = head_cross_entropy(chunked_forward(model, tokens, prior, valid), teacher[idx])
                losses.append(gradient_step(optimiser, loss, model.parameters(), cfg.grad_clip))
            model.eval()
            gain = validation_gain(model, val_data, val_tensors)["gain"]
            with torch.inference_mode():
                agree = float((chunked_forward(model, *val_tensors).argmax(-1).numpy() == val_teacher).mean())
            elapsed = time.perf_counter() - start
            curve.add(epoch=epoch, slots=len(slots), seconds=elapsed, train_loss=float(np.mean(losses)),
                      val_agreement=agree, val_gain=gain, teacher_gain=teacher_gain)
            print(f"[oinc_dagger] epoch {epoch} {elapsed:.0f}s loss {np.mean(losses):.4f} head agreement {agree:.4f} "
                  f"val gain {gain:+.5f}/slot (the search: {teacher_gain:+.5f})", flush=True)
            if gain > best_gain:
                best_gain, best_state = gain, copy.deepcopy(model.state_dict())
                save_model(run_dir / "model_best.pt", model, epoch=epoch, val_gain=gain)
            if time.perf_counter() - start > cfg.max_minutes * 60:
                break
        curve.close()
    model.load_state_dict(best_state)
    path = save_model(run_dir / MODEL_FILE, model, steps=len(slots), val_gain=best_gain, teacher_gain=teacher_gain,
                      minutes=(time.perf_counter() - start) / 60)
    (run_dir / "oinc_dagger_config.json").write_text(json.dumps(
        {"env_kwargs": kwargs, "algo_cfg": asdict(cfg), "seed": seed, "val_gain": best_gain,
         "teacher_gain": teacher_gain}, indent=2, default=str))
    if interrupt.requested:
        print(f"[oinc_dagger] stopped: continue with python train.py resume={run_dir}", flush=True)
        raise TrainingInterrupted(interrupt.signum or 2, path)
    return path
