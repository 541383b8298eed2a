"""Expert iteration on UEC-v0 (DAgger, Ross, Gordon & Bagnell 2011): a network imitates the online rollout reference.

Why: ``uec_rollout_preempt`` (``offline.uec.online``) earns ~1.06× lp_bid_price but simulates 512 sampled futures
per decision (~30 ms); a :class:`agents.uec.prior.PriorNet` decides in well under a millisecond. The student is a
PriorNet over the teacher's action set (``actions="useful"``: reject and every SSP the env allows with R > 0,
including those reserved work may pre-empt), logits = α·(R − LP bid price) + f_θ(action features).

Training (:func:`train_dagger`, ``python train.py env=uec-v0 algo=uec_dagger``):
1. round 0: the teacher plays episodes and labels each of its decisions (its action and the mean rollout value of
   every action it compared);
2. rounds 1..n: the current student plays (greedy), the teacher labels every state the student visits, and the
   labelled decisions join the data (so the student learns to recover from its own mistakes);
3. after every round the student is refitted on all data by cross-entropy to the teacher's action; the epoch with
   the best greedy evaluation (seeds ``eval_seed``.., disjoint from every reporting set) is kept.

Episodes are half on the env's instance and half on a pool of other instances (seeds ``instance_pool_base``..,
disjoint from ``offline.partition``'s tuning and held-out ranges); with ``dagger_loads``, each pool episode is drawn
at the env's mean arrival probability or one of those, uniformly. The labelled decisions are kept as a
:class:`TeacherLabels` dataset (``teacher_labels.npz``, plain arrays, loaded without pickle): the observations and
the info the features need, so a student trains from them in minutes (``dataset=<file>``, ``dagger_rounds=0``), and
``agents.datasets`` exports them in Minari format.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.curves import Column, CurveLog
from agents.imitation import (  # noqa: F401  (imitation_loss: re-exported)
    LabelArrays,
    advantage_loss,
    gradient_step,
    imitation_loss,
    soft_imitation_loss,
    value_targets,
)
from agents.uec.model import save_model
from agents.uec.prior import PriorNet, _Slot, decision_features
from envs.uec.env import UECEnv
from offline.protocol import policy_env, policy_seed_for

#: online references a student may imitate (offline.uec.online's rollouts)
TEACHERS: tuple[str, ...] = ("uec_rollout_preempt", "uec_rollout")
#: curve.csv of the DAgger trainer (x = teacher-labelled decisions)
DAGGER_CURVE: tuple[Column, ...] = (
    Column("round", "d"), Column("epoch", "d"), Column("decisions", "d"), Column("seconds", ".1f"),
    Column("train_loss", ".4f", "train/loss"), Column("val_agreement", ".4f", "eval/teacher_agreement"),
    Column("val_regret", ".4f", "eval/teacher_regret"),
    Column("eval_mean", ".3f", "eval/mean_reward"), Column("heuristic_mean", ".3f", "reference/mean_reward"),
)
LABELS_FILE = "teacher_labels.npz"


@dataclass
class TeacherLabels(LabelArrays):
    """Teacher-labelled decisions, one row each, in episode order (an episode's rows are consecutive).

    ``behaviour`` is the action the env was stepped with (the teacher's in round 0, the student's after), ``reward``
    what it earned (the last row of an episode ends it; ``final_obs`` holds the observation it ended on);
    ``teacher_action`` the teacher's choice and ``teacher_values`` (A,) its rollout value of every
    action it compared (NaN elsewhere). ``obs``, ``time``, ``device``, ``action_mask`` and ``safe_mask`` are what
    :func:`agents.uec.prior.decision_features` reads, given the instance (rebuilt from ``instance_seed`` and the
    env kwargs saved beside the arrays)."""

    obs: np.ndarray  # (N, O) float32
    time: np.ndarray  # (N,) int64
    device: np.ndarray  # (N,) int64
    action_mask: np.ndarray  # (N, A) int8
    safe_mask: np.ndarray  # (N, A) int8
    instance_seed: np.ndarray  # (N,) int64
    episode_seed: np.ndarray  # (N,) int64
    episode: np.ndarray  # (N,) int64, consecutive episode index
    round: np.ndarray  # (N,) int64
    behaviour: np.ndarray  # (N,) int64
    reward: np.ndarray  # (N,) float64
    teacher_action: np.ndarray  # (N,) int64
    teacher_values: np.ndarray  # (N, A) float32
    final_obs: np.ndarray  # (E, O) float32, the observation each episode ended on (row e: episode e in order)
    arrival_prob: np.ndarray  # (N,) float64, the instance's mean arrival probability override (NaN: the env's)

    WHAT = "a teacher_labels.npz written by algo=uec_dagger"

    @classmethod
    def load_arrays(cls, path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """As :meth:`LabelArrays.load_arrays`; labels from before loads were mixed get ``arrival_prob`` NaN."""
        arrays, meta = super().load_arrays(path)
        if "arrival_prob" not in arrays and "behaviour" in arrays:
            arrays["arrival_prob"] = np.full(arrays["behaviour"].shape, np.nan)
        return arrays, meta


def make_teacher(name: str, env: UECEnv) -> Any:
    """The registered online reference ``name`` (tuned parameters), not yet reset."""
    from offline.registry import make_policy

    if name not in TEACHERS:
        raise ValueError(f"teacher={name!r} is invalid: expected one of {list(TEACHERS)}")
    return make_policy("UEC-v0", name, env)


def label_episode(
    env: UECEnv, slot: _Slot, episode_seed: int, teacher: Any, student: PriorNet | None, *, round_index: int,
    episode: int,
) -> TeacherLabels:
    """Play one episode on ``slot``'s instance, stepping with ``student``'s greedy action (the teacher's when
    ``student`` is None), and label every decision with the teacher's action and rollout values. The teacher sees
    only the policy view (the non-anticipation contract), like in evaluation."""
    options = None if env.instance is slot.instance else {"instance": slot.instance}
    obs, info = env.reset(seed=int(episode_seed), options=options)
    teacher.reset(policy_env(env, teacher), seed=policy_seed_for(int(episode_seed)))
    A = env.action_space.n
    rows: dict[str, list[Any]] = {f.name: [] for f in fields(TeacherLabels)}
    done = False
    while not done:
        actions, values = teacher.candidate_values(info)
        best = int(actions[0]) if actions.size == 1 else int(actions[int(np.argmax(values))])
        full = np.full(A, np.nan, np.float32)
        full[actions] = values
        if student is None:
            action = best
        else:
            tokens, score, allowed = decision_features(obs, info, slot.heuristic, student.layout, slot.scale,
                                                       student.cfg.actions)
            with torch.no_grad():
                action = int(student(torch.from_numpy(tokens)[None], torch.from_numpy(score)[None],
                                     torch.from_numpy(allowed)[None])[0].argmax())
        for name, value in (("obs", np.asarray(obs, np.float32)), ("time", info["time"]), ("device", info["device"]),
                            ("action_mask", np.asarray(info["action_mask"], np.int8)),
                            ("safe_mask", np.asarray(info["safe_action_mask"], np.int8)),
                            ("instance_seed", slot_seed(slot)), ("episode_seed", episode_seed), ("episode", episode),
                            ("round", round_index), ("behaviour", action), ("teacher_action", best),
                            ("teacher_values", full)):
            rows[name].append(value)
        obs, reward, terminated, truncated, info = env.step(action)
        rows["reward"].append(float(reward))
        done = terminated or truncated
    rows["final_obs"] = [np.asarray(obs, np.float32)]
    rows["arrival_prob"] = [slot_load(slot)] * len(rows["behaviour"])
    dtypes = {"obs": np.float32, "action_mask": np.int8, "safe_mask": np.int8, "reward": np.float64,
              "teacher_values": np.float32, "final_obs": np.float32, "arrival_prob": np.float64}
    return TeacherLabels(**{k: np.asarray(v, dtypes.get(k, np.int64)) for k, v in rows.items()})


def slot_seed(slot: _Slot) -> int:
    """The instance seed a training slot was drawn with."""
    return int(slot.instance_seed)


def slot_load(slot: _Slot) -> float:
    """The mean arrival probability a training slot's instance was drawn at (NaN: the env's own)."""
    return float(slot.arrival_prob)


def slot_key(seed: int, load: float) -> tuple[int, float]:
    """How slots are looked up: (instance seed, load; -1.0 for the env's own load)."""
    return int(seed), -1.0 if np.isnan(load) else round(float(load), 6)


def load_slot(env_kwargs: dict[str, Any], seed: int, load: float, prior: str, weight: float) -> _Slot:
    """The training slot of instance ``seed`` drawn at mean arrival probability ``load`` (NaN: the env's)."""
    from agents.uec.prior import _slot

    kwargs = dict(env_kwargs)
    if not np.isnan(load):
        kwargs["scenario_overrides"] = {**(kwargs.get("scenario_overrides") or {}), "mean_arrival_prob": float(load)}
    slot = _slot(kwargs, seed, prior, weight)
    slot.arrival_prob = float(load)
    return slot


def features(labels: TeacherLabels, slots: dict[int, _Slot], model: PriorNet
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(tokens (N, A, F), score (N, A), allowed (N, A)) of every labelled decision, recomputed from the stored
    observation and info with the instance's heuristic (``slots`` by instance seed)."""
    out = []
    for i in range(len(labels)):
        info = {"time": int(labels.time[i]), "device": int(labels.device[i]), "action_mask": labels.action_mask[i],
                "safe_action_mask": labels.safe_mask[i]}
        slot = slots[slot_key(int(labels.instance_seed[i]), float(labels.arrival_prob[i]))]
        out.append(decision_features(labels.obs[i], info, slot.heuristic, model.layout, slot.scale, model.cfg.actions))
    if not out:
        A = model.layout.num_servers * model.layout.num_profiles + 1
        return (torch.zeros(0, A, model.cfg.token_features), torch.zeros(0, A, dtype=torch.float64),
                torch.zeros(0, A, dtype=torch.bool))
    return tuple(torch.from_numpy(np.stack([o[k] for o in out])) for k in range(3))  # type: ignore[return-value]










def teacher_regret(model: PriorNet, data: tuple[torch.Tensor, ...], values: torch.Tensor) -> float:
    """mean_s [max Q̂(s) − Q̂(s, greedy student action)] over states with several compared actions: the teacher's
    own estimate of what the student's choices lose, in profit per decision (0 = as good as the teacher)."""
    several = torch.isfinite(values).sum(dim=1) > 1
    if not bool(several.any()):
        return float("nan")
    with torch.no_grad():
        chosen = model(*(x[several] for x in data)).argmax(dim=-1)
    v = values[several].double()
    best = torch.where(torch.isfinite(v), v, torch.full_like(v, float("-inf"))).max(dim=1).values
    picked = v.gather(1, chosen[:, None]).squeeze(1)
    return float((best - picked.nan_to_num(float("nan"))).nanmean())


def agreement(model: PriorNet, data: tuple[torch.Tensor, ...], teacher: torch.Tensor) -> float:
    """Share of decisions where the greedy student picks the teacher's action."""
    if not teacher.numel():
        return float("nan")
    with torch.no_grad():
        return float((model(*data).argmax(dim=-1) == teacher).double().mean())


def train_dagger(
    model: PriorNet, optimiser: torch.optim.Optimizer, cfg: Any, base: _Slot, pool: list[_Slot],
    rng: np.random.Generator, *, env_kwargs: dict[str, Any], start: float, run_dir: Path, evaluate: Any,
    heuristic_mean: float, seed: int,
) -> Path:
    """DAgger rounds (module docstring). Without a ``dataset``: round 0 by the teacher, then ``dagger_rounds``
    student-driven rounds of ``dagger_episodes`` labelled episodes each; with one: a fit on it first, then
    ``dagger_rounds`` student-driven rounds. Every round ends with ``dagger_epochs`` epochs on all labels:
    ``dagger_loss=action``, cross-entropy to the teacher's action (or, with ``dagger_tau`` > 0, to its soft value
    targets, :func:`value_targets`); ``dagger_loss=advantage``, regression of the centred logits on the teacher's
    centred values in units of ``dagger_tau`` (:func:`advantage_loss`). One episode in ten is kept for validation
    (teacher agreement and regret). Writes the labels (``teacher_labels.npz``, unless it only fitted a given
    dataset), ``curve.csv`` and ``model.pt`` (the epoch with the best greedy evaluation)."""
    env = UECEnv(**{**env_kwargs, "resample_instance": False})
    env.reset(seed=0)
    teacher = make_teacher(cfg.teacher, env)
    slots = {slot_key(slot_seed(s), slot_load(s)): s for s in [base, *pool]}
    parts: list[TeacherLabels] = []
    if cfg.dataset:
        labels, meta = TeacherLabels.load(Path(cfg.dataset))
        if meta.get("env_kwargs") not in (None, env_kwargs):
            raise ValueError(f"dataset={cfg.dataset!r} was labelled on env kwargs {meta.get('env_kwargs')}, "
                             f"the run has {env_kwargs}")
        for seed_, load in {(int(a), float(b)) for a, b in zip(labels.instance_seed, labels.arrival_prob)}:
            if slot_key(seed_, load) not in slots:
                slots[slot_key(seed_, load)] = load_slot(env_kwargs, seed_, load, model.cfg.prior,
                                                        model.cfg.prior_weight)
        parts.append(labels)
    curve = CurveLog(run_dir, DAGGER_CURVE, "decisions")
    best_eval, best_state = heuristic_mean, copy.deepcopy(model.state_dict())
    episode = int(parts[0].episode.max()) + 1 if parts and len(parts[0]) else 0
    first_round = 0 if not parts else int(parts[0].round.max()) + 1
    # with a dataset: fit on it first (None), then collect dagger_rounds rounds with the fitted student
    plan: list[int | None] = ([None] if parts else []) + list(
        range(first_round, first_round + cfg.dagger_rounds + (0 if parts else 1)))
    meta = {"env_id": "UEC-v0", "env_kwargs": env_kwargs, "teacher": cfg.teacher, "seed": seed,
            "instance_pool_base": cfg.instance_pool_base, "train_instances": cfg.train_instances,
            "fixed_instance_share": cfg.fixed_instance_share, "episodes_per_round": cfg.dagger_episodes}
    from agents.callbacks import GracefulInterrupt, TrainingInterrupted

    interrupt = GracefulInterrupt()
    round_index: int | None = None
    with interrupt:
        for round_index in plan:
            interrupt.requested  # noqa: B018  (the loop runs: from here a signal stops it at the next episode or epoch)
            student = None if round_index == 0 else copy.deepcopy(model).eval()
            for _ in range(0 if round_index is None else cfg.dagger_episodes):
                slot = base if not pool or rng.random() < cfg.fixed_instance_share else pool[rng.integers(len(pool))]
                if slot is not base and cfg.dagger_loads:  # a pool episode at the env's load or one of these
                    load = [float("nan"), *map(float, cfg.dagger_loads)][rng.integers(len(cfg.dagger_loads) + 1)]
                    key = slot_key(slot_seed(slot), load)
                    if key not in slots:
                        slots[key] = load_slot(env_kwargs, slot_seed(slot), load, model.cfg.prior,
                                               model.cfg.prior_weight)
                    slot = slots[key]
                parts.append(label_episode(env, slot, int(rng.integers(10_000_000, 2**31 - 1)), teacher, student,
                                           round_index=round_index, episode=episode))
                episode += 1
                if time.perf_counter() - start > cfg.max_minutes * 60 * 0.8 or interrupt.requested:
                    break
            round_index = first_round - 1 if round_index is None else round_index  # the dataset's last round
            collected = len(parts) > 1 or not cfg.dataset
            labels = TeacherLabels.concatenate(parts)
            parts = [labels]
            if collected:  # a student fitted on a given dataset alone does not copy it
                labels.save(run_dir / LABELS_FILE, meta)
            val = labels.episode % 10 == 9
            data = features(labels, slots, model)
            teacher_t = torch.from_numpy(labels.teacher_action)
            values_t = torch.from_numpy(labels.teacher_values)
            targets = value_targets(values_t, teacher_t, float(cfg.dagger_tau))
            train_idx, val_idx = np.flatnonzero(~val), np.flatnonzero(val)
            val_data = tuple(x[val_idx] for x in data)
            print(f"[uec_dagger] round {round_index}: {len(labels)} labelled decisions ({int(labels.episode.max()) + 1} "
                  f"episodes) at {time.perf_counter() - start:.0f}s; teacher agreement of the student "
                  f"{agreement(model, val_data, teacher_t[val_idx]):.3f}", flush=True)
            model.train()
            for epoch in range(1, cfg.dagger_epochs + 1):
                order = torch.from_numpy(rng.permutation(train_idx))
                losses = []
                for first in range(0, order.numel(), cfg.q_batch):
                    idx = order[first : first + cfg.q_batch]
                    logits = model(*(x[idx] for x in data))
                    if cfg.dagger_loss == "advantage":
                        loss = advantage_loss(logits, values_t[idx], float(cfg.dagger_tau) or 1.0)
                    else:
                        loss = soft_imitation_loss(logits, targets[idx])
                    losses.append(gradient_step(optimiser, loss, model.parameters(), cfg.grad_clip))
                model.eval()
                agree = agreement(model, val_data, teacher_t[val_idx])
                regret = teacher_regret(model, val_data, values_t[val_idx])
                last = epoch == cfg.dagger_epochs
                eval_mean = evaluate() if epoch % cfg.eval_every == 0 or last else float("nan")
                model.train()
                elapsed = time.perf_counter() - start
                curve.add(round=round_index, epoch=epoch, decisions=len(labels), seconds=elapsed,
                          train_loss=float(np.mean(losses)) if losses else float("nan"), val_agreement=agree,
                          val_regret=regret,
                          eval_mean=eval_mean, heuristic_mean=heuristic_mean)
                print(f"[uec_dagger] round {round_index} epoch {epoch} {elapsed:.0f}s loss {np.mean(losses):.4f} "
                      f"agreement {agree:.3f} regret {regret:.4f} greedy eval {eval_mean:.2f} (start {heuristic_mean:.2f})",
                      flush=True)
                if eval_mean > best_eval:
                    best_eval, best_state = eval_mean, copy.deepcopy(model.state_dict())
                    save_model(run_dir / "model_best.pt", model, round=round_index, epoch=epoch, steps=len(labels),
                               eval_mean_reward=eval_mean)
                if interrupt.requested:
                    break
            if time.perf_counter() - start > cfg.max_minutes * 60 or interrupt.requested:
                break
    curve.close()
    model.load_state_dict(best_state)
    model.eval()
    path = save_model(run_dir / "model.pt", model, steps=len(parts[0]), minutes=(time.perf_counter() - start) / 60,
                      best_eval_mean_reward=float(best_eval), teacher=cfg.teacher)
    if interrupt.requested:  # labels of every finished episode are saved; model.pt is the best epoch so far
        last_planned = plan[-1] if plan[-1] is not None else first_round - 1
        left = max(last_planned - (round_index if round_index is not None else first_round - 1), 0)
        labels_path = run_dir / LABELS_FILE if (run_dir / LABELS_FILE).is_file() else Path(cfg.dataset)
        print(f"[uec_dagger] stopped: continue with algo.dataset={labels_path} algo.dagger_rounds={left}", flush=True)
        raise TrainingInterrupted(interrupt.signum or 2, path)
    return path
