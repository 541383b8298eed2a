"""An OINC-v0 inference scheduler that starts AS ``slo_liu`` (paired with Ekya) and learns a correction to it.

Why: the flat learners (MaskablePPO, SAC-D) must rediscover from scratch what ``slo_liu`` already does well; here
the heuristic's action is the backbone of the logits and one small network, shared by all 3·I heads, learns
where to deviate from it. Every head h (device i's edge, compute level or bandwidth level) scores its choices:

    logit_h(a) = α · [a = slo_liu's choice for h] + f_θ(x_{h,a})

α = exp(log_alpha) > 0 is learnt; f_θ is an MLP fed the choice's own features (:func:`slot_features`): above
all the exact change of the slot's cost (latency and SLO misses of every task) if head h alone took ``a`` and
every other head kept the heuristic's choice, computed with ``envs.oinc.dynamics``. f_θ's last layer starts at
zero, so the untrained greedy policy (argmax per head) is ``slo_liu`` action for action.

Training (:func:`train`, contract 5) is REINFORCE with common random numbers at the level of one slot: with a
controller that never pauses retraining for inference (Ekya, the ladder's pair; also dedas, zhang) the
inference action of slot t changes nothing after slot t (tasks, drift, jobs and shares are exogenous), so the
episode's return is a sum of per-slot rewards that each depend on that slot's action only. For every slot
played, ``samples`` joint actions are drawn from the policy and scored exactly by the env's own reward model
(:func:`slot_rewards`, = ``env.step``'s reward, eq. (4)); their mean is the baseline. Half of the env copies
play the training instance, half a pool of other instances (instance seeds ``instance_pool_base``.., disjoint
from ``offline.partition``'s). A fixed validation set of slots (eval seeds) scores the greedy policy against
the heuristic on the same slots; ``model.pt`` holds the weights of the best validation gain.

The learner is a pair like ``slo_liu+ekya``: the algo config names the controller (``controller``) and its
share (``retraining_share``, null = ``slo_liu+ekya``'s tuned share); the trainer sets them in the run's
``env.kwargs`` (and its config.yaml), so evaluate.py and agents.compare play the run with its controller.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from agents.curves import Column, CurveLog
from agents.loading import save_config_model as save_model
from agents.priors import correction_mlp
from envs.oinc import dynamics as dyn
from envs.oinc.env import OINCEnv
from envs.oinc.types import Instance
from offline.oinc.heuristics import SloLiuPolicy, tuned_pair_kwargs
from offline.oinc.slot import (  # noqa: F401  (re-exported: the trainer's slot model)
    Slot,
    batch_slot_latency,
    batch_slot_rewards,
    current_slot,
    slot_latency,
    slot_rewards,
)

ENV_ID = "OINC-v0"
MODEL_FILE = "model.pt"
#: features of one (head, choice) token, see :func:`slot_features`
TOKEN_FEATURES = 14
#: controllers whose share does not depend on the inference action (no pause rule): per-slot credit is exact
CONTROLLERS = ("ekya", "dedas", "zhang")
#: curve.csv (x = slots): the sampled actions' reward over slo_liu's, the greedy policy's validation gain per slot
#: and its change in mean inference latency and SLO hit rate.
CURVE: tuple[Column, ...] = (
    Column("batch", "d"), Column("slots", "d"), Column("seconds", ".1f"),
    Column("rollout_gain", ".5f", "train/sampled_gain_per_slot"), Column("val_gain", ".5f", "eval/gain_per_slot"),
    Column("val_latency_change", ".5f", "eval/latency_change_s"),
    Column("val_hit_rate_change", ".5f", "eval/hit_rate_change"), Column("alpha", ".4f", "train/alpha"),
)


@dataclass
class PriorModelConfig:
    """Sizes of the correction network, the env dimensions and the heuristic it corrects (its ``slo_margin``,
    frozen so a saved model rebuilds the same prior even if ``tuned.yaml`` changes)."""

    num_devices: int
    num_edges: int
    slo_margin: float
    hidden: int = 64
    layers: int = 2
    temperature: float = 0.25  # initial 1/α

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.layers < 1 or not self.temperature > 0:
            raise ValueError(f"need hidden >= 1, layers >= 1, temperature > 0 (got {self.hidden}, {self.layers}, "
                             f"{self.temperature})")

    @property
    def choices(self) -> int:
        """Width of the padded choice axis: the edge head's J or the level heads' W."""
        return max(self.num_edges, dyn.NUM_LEVELS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------------
# One slot: context, exact rewards, features
# --------------------------------------------------------------------------------------------------


def _task_cost(latency: np.ndarray, slo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(latency, miss) of tasks; the slot cost is Σ latency + ψ·Σ miss."""
    return latency, (latency > slo).astype(np.float64)


def slot_features(slot: Slot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tokens (3I, C, F) float32, prior (3I, C) bool, valid (3I, C) bool) of one slot; C = max(J, W).

    Token of choice a of head h (device i's edge / compute level / bandwidth level) with every other head at the
    heuristic's choice: 0 prior bit, 1 change of the slot's summed latency (s), 2 change of its SLO misses / 4,
    3 device i's latency / SLO_i, 4 its miss, 5-7 head type, 8 the choice (edge: r_ij / max_j r_ij; level:
    l / 3), 9 the choice's edge f_j·F_j / max, 10 that edge's task count (heuristic) · J / I, 11 c_i / mean c,
    12 d_i / mean d, 13 device i's slack under the heuristic (SLO − τ) / SLO. Deltas are exact (dynamics).
    """
    tokens, prior, valid = batch_slot_features([slot])
    return tokens[0], prior[0], valid[0]


def batch_slot_features(slots: list[Slot]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`slot_features` of N slots of the same I and J at once: (N, 3I, C, F), (N, 3I, C), (N, 3I, C); row n
    is ``slot_features(slots[n])``'s, the same operations on a leading slot axis (the per-edge sums are
    ``dyn.group_totals``'s, the matrix products numpy's stacked ones)."""
    num_n, num_i, num_j, num_w = len(slots), slots[0].slo_s.size, slots[0].cpu_hz.size, dyn.NUM_LEVELS
    data_bits, cycles, slo = (np.stack([getattr(s, key) for s in slots]) for key in ("data_bits", "cycles", "slo_s"))
    rate = np.stack([s.rate for s in slots])  # (N, I, J)
    power = np.stack([s.cpu_hz for s in slots]) * np.stack([s.inference_share for s in slots])  # f_j^t F_j
    plan = np.stack([s.heuristic for s in slots]).reshape(num_n, num_i, 3)
    edge, wz, wv = plan[..., 0], dyn.LEVEL_WEIGHTS[plan[..., 1]], dyn.LEVEL_WEIGHTS[plan[..., 2]]  # (N, I)
    total_z = dyn.group_totals(edge, wz, num_j)  # (N, J)
    total_v = dyn.group_totals(edge, wv, num_j)
    slot_rows, rows = np.arange(num_n)[:, None], np.arange(num_i)
    total_z_e, total_v_e = total_z[slot_rows, edge], total_v[slot_rows, edge]  # (N, I): i's edge's totals
    upload = data_bits / (rate[slot_rows, rows, edge] * wv / total_v_e)
    compute = cycles / (power[slot_rows, edge] * wz / total_z_e)
    lat0, miss0 = _task_cost(upload + compute, slo)
    # [n, i, k]: k shares i's edge, k != i
    same = (edge[:, :, None] == edge[:, None, :]) & ~np.eye(num_i, dtype=bool)
    k_upload, k_compute, k_slo, k_lat0, k_miss0 = (x[:, None, :] for x in (upload, compute, slo, lat0, miss0))

    def others(scale_v: np.ndarray, scale_z: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Σ_k mask·(change of k's latency, of k's miss) when k's upload / compute times scale by the factors."""
        lat, miss = _task_cost(k_upload * scale_v + k_compute * scale_z, k_slo)
        return ((lat - k_lat0) * mask).sum(-1), ((miss - k_miss0) * mask).sum(-1)

    # edge head: device i moves to edge j with its levels
    with np.errstate(divide="ignore", invalid="ignore"):
        left_v = np.where(total_v_e > wv, (total_v_e - wv) / total_v_e, 0.0)  # i's old edge, i gone
        left_z = np.where(total_z_e > wz, (total_z_e - wz) / total_z_e, 0.0)
    gone_lat, gone_miss = others(left_v[..., None], left_z[..., None], same)
    add_v = (total_v_e[:, None, :] + wv[..., None]) / total_v_e[:, None, :]  # [n, i, k]: k's edge gains i
    add_z = (total_z_e[:, None, :] + wz[..., None]) / total_z_e[:, None, :]
    lat_k, miss_k = _task_cost(k_upload * add_v + k_compute * add_z, k_slo)
    onehot = np.eye(num_j)[edge]  # (N, I_k, J)
    not_self = ~np.eye(num_i, dtype=bool)
    join_lat = ((lat_k - k_lat0) * not_self) @ onehot  # (N, I, J)
    join_miss = ((miss_k - k_miss0) * not_self) @ onehot
    own_lat, own_miss = _task_cost(
        data_bits[..., None] / (rate * wv[..., None] / (total_v[:, None, :] + wv[..., None]))
        + cycles[..., None] / (power[:, None, :] * wz[..., None] / (total_z[:, None, :] + wz[..., None])),
        slo[..., None])
    at_home = edge[..., None] == np.arange(num_j)
    own_lat = np.where(at_home, lat0[..., None], own_lat)
    own_miss = np.where(at_home, miss0[..., None], own_miss)
    edge_dlat = np.where(at_home, 0.0, own_lat - lat0[..., None] + join_lat + gone_lat[..., None])
    edge_dmiss = np.where(at_home, 0.0, own_miss - miss0[..., None] + join_miss + gone_miss[..., None])

    # level heads: device i takes level l on its edge (compute or bandwidth)
    def level_head(weight: np.ndarray, total_e: np.ndarray, own_time: np.ndarray, is_compute: bool):
        new_total = total_e[..., None] - weight[..., None] + dyn.LEVEL_WEIGHTS  # (N, I, W)
        own = own_time[..., None] * (new_total / dyn.LEVEL_WEIGHTS) / (total_e / weight)[..., None]
        other_time = compute if is_compute else upload
        lat_o, miss_o = _task_cost((upload + compute)[:, None, None, :] + other_time[:, None, None, :]
                                   * (new_total[..., None] / total_e[..., None, None] - 1.0), slo[:, None, None, :])
        d_lat = ((lat_o - lat0[:, None, None, :]) * same[:, :, None, :]).sum(-1)
        d_miss = ((miss_o - miss0[:, None, None, :]) * same[:, :, None, :]).sum(-1)
        fixed = upload if is_compute else compute
        o_lat, o_miss = _task_cost(fixed[..., None] + own, slo[..., None])
        return o_lat, o_miss, o_lat - lat0[..., None] + d_lat, o_miss - miss0[..., None] + d_miss

    heads = [(own_lat, own_miss, edge_dlat, edge_dmiss), level_head(wz, total_z_e, compute, True),
             level_head(wv, total_v_e, upload, False)]
    width = max(num_j, num_w)
    tokens = np.zeros((num_n, num_i, 3, width, TOKEN_FEATURES), dtype=np.float32)
    valid = np.zeros((num_n, num_i, 3, width), dtype=bool)
    valid[..., 0, :num_j] = True
    valid[..., 1:, :num_w] = True
    prior = np.zeros((num_n, num_i, 3, width), dtype=bool)
    prior[slot_rows[..., None], rows[:, None], np.arange(3), plan] = True
    count = (edge[..., None] == np.arange(num_j)).sum(axis=1) * num_j / num_i  # (N, J)
    power_n = power / power.max(axis=-1, keepdims=True)
    slack = np.clip((slo - lat0) / slo, -5.0, 1.0)
    for h, (o_lat, o_miss, d_lat, d_miss) in enumerate(heads):
        n = o_lat.shape[-1]
        tok = tokens[:, :, h, :n]
        tok[..., 1] = np.clip(d_lat, -5.0, 5.0)
        tok[..., 2] = np.clip(d_miss / 4.0, -5.0, 5.0)
        tok[..., 3] = np.clip(o_lat / slo[..., None], 0.0, 5.0)
        tok[..., 4] = o_miss
        tok[..., 5 + h] = 1.0
        tok[..., 8] = rate / rate.max(axis=-1, keepdims=True) if h == 0 else np.arange(n) / (n - 1)
        tok[..., 9] = power_n[:, None, :] if h == 0 else power_n[slot_rows, edge][..., None]
        tok[..., 10] = count[:, None, :] if h == 0 else count[slot_rows, edge][..., None]
    tokens[..., 0] = prior
    tokens[..., 11] = (cycles / cycles.mean(axis=-1, keepdims=True))[..., None, None]
    tokens[..., 12] = (data_bits / data_bits.mean(axis=-1, keepdims=True))[..., None, None]
    tokens[..., 13] = slack[..., None, None]
    tokens *= valid[..., None]
    return (tokens.reshape(num_n, 3 * num_i, width, -1), prior.reshape(num_n, 3 * num_i, width),
            valid.reshape(num_n, 3 * num_i, width))


# --------------------------------------------------------------------------------------------------
# Model and policy
# --------------------------------------------------------------------------------------------------


class PriorNet(nn.Module):
    """logits (..., H, C) = α·prior + f_θ(tokens) on valid choices, −inf elsewhere (f_θ starts at zero)."""

    def __init__(self, cfg: PriorModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.correction = correction_mlp(TOKEN_FEATURES, cfg.hidden, cfg.layers)
        self.log_alpha = nn.Parameter(torch.tensor(-float(np.log(cfg.temperature))))

    def forward(self, tokens: torch.Tensor, prior: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        # f_θ runs on the valid tokens only (the padding of the level heads is ~45 % of the tokens at J = 12):
        # the same logits, row for row, as running it on every token and masking afterwards
        correction = tokens.new_zeros(valid.shape).index_put((valid,), self.correction(tokens[valid]).squeeze(-1))
        logits = self.log_alpha.exp() * prior.to(tokens.dtype) + correction
        return logits.masked_fill(~valid, float("-inf"))


#: slots per forward pass of :func:`chunked_forward`: 8 slots (6 400 tokens at I = 40, J = 12) keep the
#: activations in the CPU caches; one pass over hundreds of slots is ~1.7x slower per token on CPU
CHUNK_SLOTS = 8


def chunked_forward(model: PriorNet, tokens: torch.Tensor, prior: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``model(tokens, prior, valid)`` of slots (S, H, C, F) over the slot axis in chunks of :data:`CHUNK_SLOTS`
    slots: the same logits row for row (with gradients when enabled), faster for many slots. One slot's
    (H, C, F) features go through in one pass."""
    if tokens.dim() < 4 or tokens.shape[0] <= CHUNK_SLOTS:
        return model(tokens, prior, valid)
    return torch.cat([model(tokens[i:i + CHUNK_SLOTS], prior[i:i + CHUNK_SLOTS], valid[i:i + CHUNK_SLOTS])
                      for i in range(0, tokens.shape[0], CHUNK_SLOTS)])


def greedy_actions(model: PriorNet, tokens: np.ndarray, prior: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Argmax per head of a batch of slots' features (..., H, C, F) -> (..., H) int64 flat actions."""
    with torch.inference_mode():
        logits = chunked_forward(model, torch.from_numpy(tokens), torch.from_numpy(prior), torch.from_numpy(valid))
    return logits.argmax(dim=-1).numpy().astype(np.int64)


class PriorPolicy:
    """:class:`offline.protocol.Policy` of a :class:`PriorNet`: greedy (argmax per head) or sampled actions.
    Reads the instance and the current tasks through its ``slo_liu`` (rebuilt with the model's ``slo_margin``)."""

    def __init__(self, model: PriorNet, name: str = "oinc_prior", greedy: bool = True) -> None:
        self.model = model.eval()
        self.name = name
        self.greedy = greedy
        self.heuristic = SloLiuPolicy(slo_margin=model.cfg.slo_margin)
        self._generator = torch.Generator().manual_seed(0)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        inst = env.unwrapped.instance
        if (inst.num_devices, inst.num_edges) != (self.model.cfg.num_devices, self.model.cfg.num_edges):
            raise ValueError(f"the model was trained with I={self.model.cfg.num_devices}, J={self.model.cfg.num_edges}; "
                             f"the env has I={inst.num_devices}, J={inst.num_edges}")
        self.heuristic.reset(env, seed)
        if seed is not None:
            self._generator.manual_seed(int(seed))

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        slot = current_slot(self.heuristic.env, self.heuristic.act(obs, info))
        tokens, prior, valid = slot_features(slot)
        if self.greedy:
            return greedy_actions(self.model, tokens, prior, valid)
        with torch.no_grad():
            logits = self.model(torch.from_numpy(tokens), torch.from_numpy(prior), torch.from_numpy(valid))
        return torch.multinomial(torch.softmax(logits, -1), 1, generator=self._generator).squeeze(-1).numpy()


def load_model(path: Path) -> tuple[PriorNet, dict[str, Any]]:
    """A model saved by ``save_model`` (weights only: nothing in the file runs) and its meta."""
    from agents.loading import load_config_model

    model, blob = load_config_model(path, "cpu", "OINC prior model file",
                                    lambda cfg: PriorNet(PriorModelConfig(**cfg)))
    return model, dict(blob.get("meta") or {})


def load_policy(run_dir: Path, env: gym.Env, *, checkpoint: str | None = None, greedy: bool = True,
                **kwargs: Any) -> PriorPolicy:
    """Contract 5: the policy of a run folder (``checkpoint``: a model file inside the run). The pair's controller
    is the env's (the run's env.kwargs name it)."""
    path = Path(run_dir) / (checkpoint or MODEL_FILE)
    if not path.is_file():
        raise ValueError(f"{run_dir} has no {path.name} (training interrupted before the first save?)")
    return PriorPolicy(load_model(path)[0], name=f"oinc_prior:{Path(run_dir).name}", greedy=greedy)


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """The schema of edge_sched_gym/conf/algo/oinc_prior.yaml (Hydra ConfigStore ``algo/oinc_prior_schema``)."""

    name: str = "oinc_prior"
    kind: str = "custom"
    default_steps: int = 400_000  # slots played (env decisions)
    controller: str = "ekya"  # the pair's retraining controller (one that never pauses: ekya, dedas, zhang)
    retraining_share: float | None = None  # the controller's share; null = slo_liu+ekya's tuned share
    n_envs: int = 8  # env copies played in lockstep (half on the training instance when the pool is used)
    samples: int = 16  # joint actions drawn per slot; their mean reward is the baseline
    slots_per_batch: int = 8  # lockstep slots per gradient step (n_envs · slots_per_batch slots)
    lr: float = 1e-3
    grad_clip: float = 1.0
    hidden: int = 64
    layers: int = 2
    temperature: float = 0.25  # initial 1/alpha
    train_instances: int = 16  # pool of extra training instances (instance seeds instance_pool_base..)
    instance_pool_base: int = 10_000  # disjoint from offline.partition's 0, 100..199 and 900..909
    fixed_instance_share: float = 0.5  # share of env copies on the env's own instance when the pool is used
    max_minutes: float = 6.0
    eval_every: int = 25  # batches between validations
    eval_episodes: int = 2  # validation episodes on the training instance (+ as many on pool instances)
    eval_seed: int = 1000
    checkpoint_every: int = 100  # batches
    threads: int = 1

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> TrainConfig:
        """Validate ``cfg`` against the schema (unknown keys, types, ranges)."""
        from agents.cli import merge_schema

        data = merge_schema(cls, cfg, "oinc_prior")
        out = cls(**data)  # type: ignore[arg-type]
        for key in ("n_envs", "slots_per_batch", "eval_every", "eval_episodes", "checkpoint_every", "threads",
                    "hidden", "layers"):
            if int(getattr(out, key)) < 1:
                raise ValueError(f"algo.{key}={getattr(out, key)} is invalid: expected an integer >= 1")
        if out.samples < 2:
            raise ValueError(f"algo.samples={out.samples} is invalid: the baseline needs >= 2 samples per slot")
        if out.controller not in CONTROLLERS:
            raise ValueError(f"algo.controller={out.controller!r} is invalid: expected one of {list(CONTROLLERS)} "
                             "(controllers that pause retraining for inference break per-slot credit)")
        if out.retraining_share is not None and not 0.0 < out.retraining_share < 1.0:
            raise ValueError(f"algo.retraining_share={out.retraining_share} is invalid: expected null or (0, 1)")
        if not out.temperature > 0 or out.train_instances < 0 or not 0.0 <= out.fixed_instance_share <= 1.0:
            raise ValueError("algo.temperature must be > 0, train_instances >= 0 and fixed_instance_share in [0, 1]")
        from offline.partition import check_instance_pool

        check_instance_pool(out.instance_pool_base, out.train_instances)
        return out


def pair_env_kwargs(env_cfg: dict[str, Any], cfg: TrainConfig) -> dict[str, Any]:
    """The run's env kwargs with the pair's controller and share (null share: slo_liu+ekya's tuned one)."""
    kwargs = dict(env_cfg.get("kwargs") or {})
    if kwargs.get("resample_instance") or kwargs.get("instance_seed", 0) is None:
        raise ValueError("algo=oinc_prior: use a fixed instance_seed; train_instances adds the instance distribution")
    share = tuned_pair_kwargs()["retraining_share"] if cfg.retraining_share is None else cfg.retraining_share
    return {**kwargs, "retraining": cfg.controller, "retraining_share": float(share)}


def reinforce_loss(logits: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """REINFORCE over slots with the per-slot mean of the samples as baseline, normalised by the batch's std:

        loss = −mean_{s,k} (R_sk − mean_k R_sk) / std · Σ_h log π(a_skh | s)

    ``logits`` (S, H, C), ``actions`` (S, K, H) int64, ``rewards`` (S, K)."""
    log_p = torch.log_softmax(logits, dim=-1)  # (S, H, C)
    index = actions.permute(0, 2, 1)  # (S, H, K)
    chosen = log_p.gather(2, index).sum(dim=1)  # (S, K)
    advantage = rewards - rewards.mean(dim=1, keepdim=True)
    advantage = advantage / (advantage.std() + 1e-8)
    return -(advantage.to(chosen.dtype) * chosen).mean()


def _episode_slots(env: OINCEnv, instance: Instance, seed: int, heuristic: SloLiuPolicy) -> list[Slot]:
    """Every slot of one episode (played with the heuristic; the slots do not depend on the actions)."""
    obs, info = env.reset(seed=int(seed), options={"instance": instance})
    heuristic.reset(env)
    slots, done = [], False
    while not done:
        action = heuristic.act(obs, info)
        slots.append(current_slot(env, action))
        obs, _, _, done, info = env.step(action)
    return slots


def validation_gain(model: PriorNet, data: list[tuple[Slot, np.ndarray, np.ndarray, np.ndarray]],
                    tensors: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> dict[str, float]:
    """Greedy policy vs the heuristic on the same slots: mean reward gain per slot (eq. (4), the training
    objective), change of the mean latency (s; the ladder's inference term) and of the SLO hit rate.
    ``tensors``: the data's (tokens, prior, valid) already stacked (:func:`_stack_features`), to skip the stacking."""
    tokens, prior, valid = _stack_features([d[1:] for d in data]) if tensors is None else tensors
    with torch.inference_mode():
        actions = chunked_forward(model, tokens, prior, valid).argmax(dim=-1).numpy().astype(np.int64)
    slots = [d[0] for d in data]
    lat = batch_slot_latency(slots, np.stack([actions, np.stack([s.heuristic for s in slots])], axis=1))
    slo = np.stack([s.slo_s for s in slots])
    psi = np.array([s.psi for s in slots], dtype=np.float64)[:, None]
    gain = dyn.slot_reward(lat[:, 0], slo, psi) - dyn.slot_reward(lat[:, 1], slo, psi)
    dlat = lat[:, 0].mean(axis=-1) - lat[:, 1].mean(axis=-1)
    dhit = (lat[:, 0] <= slo).mean(axis=-1) - (lat[:, 1] <= slo).mean(axis=-1)
    return {"gain": float(np.mean(gain)), "latency": float(np.mean(dlat)), "hit_rate": float(np.mean(dhit))}


def _stack_features(feats: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[torch.Tensor, ...]:
    """(tokens, prior, valid) tensors of a list of :func:`slot_features` outputs, stacked on a new first axis."""
    return tuple(torch.from_numpy(np.stack(x)) for x in zip(*feats, strict=True))


def train(env_cfg: dict[str, Any], algo_cfg: dict[str, Any], *, run_dir: Path, seed: int, steps: int,
          device: str = "cpu", resume: bool = False) -> Path:
    """Train on OINC-v0 for ``steps`` slots (or ``max_minutes``); returns ``run_dir/model.pt`` (best validation).

    On SIGINT/SIGTERM/SIGHUP the current batch ends, ``checkpoints/model_interrupted_<slots>.pt`` and
    ``model.pt`` are saved and :class:`agents.callbacks.TrainingInterrupted` is raised; ``resume=True``
    continues from the newest checkpoint (model, optimiser, counters, time, random states; the env copies start
    new episodes, which changes nothing the policy could influence).

    Speed (``python -m benchmarks.oinc_prior_speed``): the env copies' features and sampled rewards are computed
    batched (:func:`batch_slot_features`, :func:`batch_slot_rewards`, the per-slot functions' numbers bit for
    bit), f_θ runs on valid tokens only, once per lockstep slot with gradients (no second forward for the loss)
    and in cache-sized chunks for validation. What is left is mostly ``slo_liu`` itself (a Python loop over the
    devices per slot and env copy) and f_θ's forward/backward."""
    from agents.callbacks import (
        GracefulInterrupt,
        TrainingInterrupted,
        latest_trainer_checkpoint,
        restore_rng_states,
        rng_states,
    )

    cfg = TrainConfig.from_dict(dict(algo_cfg))
    if str(env_cfg.get("id", ENV_ID)) != ENV_ID or env_cfg.get("wrappers"):
        raise ValueError(f"algo=oinc_prior trains only on {ENV_ID} without wrappers, not {env_cfg.get('id')!r}")
    if steps < 1:
        raise ValueError(f"steps={steps} is invalid: expected >= 1 (slots)")
    run_dir = Path(run_dir)
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    torch.set_num_threads(int(cfg.threads))
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    kwargs = pair_env_kwargs(env_cfg, cfg)
    _record_pair(run_dir, kwargs)

    start = time.perf_counter()
    make = lambda: OINCEnv(**{**kwargs, "resample_instance": False})  # noqa: E731
    base_env = make()
    base = base_env.instance
    pool = [OINCEnv(**{**kwargs, "instance_seed": cfg.instance_pool_base + i}).instance
            for i in range(cfg.train_instances)]
    margin = float(tuned_pair_kwargs()["slo_margin"])
    heuristic = SloLiuPolicy(slo_margin=margin)
    model = PriorNet(PriorModelConfig(base.num_devices, base.num_edges, margin, cfg.hidden, cfg.layers,
                                      cfg.temperature))
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    val: list[tuple[Slot, np.ndarray, np.ndarray, np.ndarray]] = []
    for e in range(cfg.eval_episodes):
        for inst in [base, *([pool[e % len(pool)]] if pool else [])]:
            slots = _episode_slots(base_env, inst, cfg.eval_seed + e, heuristic)
            val += [(s, *f) for s, *f in zip(slots, *batch_slot_features(slots), strict=True)]
    val_tensors = _stack_features([d[1:] for d in val])
    batch, played, best_gain = 0, 0, 0.0
    best_state = {k: v.clone() for k, v in model.state_dict().items()}
    if resume:
        latest = latest_trainer_checkpoint(run_dir)
        if latest is None:
            raise ValueError(f"resume={run_dir} has no checkpoint to continue from (checkpoints/model_<step>.pt)")
        loaded, meta = load_model(latest[0])
        state = meta["trainer_state"]
        model.load_state_dict(loaded.state_dict())
        optimiser.load_state_dict(state["optimizer"])
        restore_rng_states(state["rng"], rng, generator)
        batch, played, best_gain = int(state["batch"]), int(state["decisions"]), float(state["best"])
        best_state = state["best_state"]
        start -= float(state["elapsed_s"])
        if played >= steps:
            raise ValueError(f"steps={steps} is invalid for resume={run_dir}: it is at step {played}")
        print(f"[oinc_prior] resuming at batch {batch + 1} (slot {played})", flush=True)
    else:
        meta = {"env_kwargs": kwargs, "algo_cfg": asdict(cfg), "seed": seed, "steps": steps,
                "parameters": sum(p.numel() for p in model.parameters())}
        (run_dir / "oinc_prior_config.json").write_text(json.dumps(meta, indent=2, default=str))
        save_model(run_dir / "model_best.pt", model, batches=0, steps=0, val_gain=0.0)
    print(f"[oinc_prior] {len(pool)} pool instances, {len(val)} validation slots ready in "
          f"{time.perf_counter() - start:.0f}s", flush=True)
    curve = CurveLog(run_dir, CURVE, "slots", resume_step=played if resume else None)

    envs = [make() for _ in range(cfg.n_envs)]
    heuristics = [SloLiuPolicy(slo_margin=margin) for _ in envs]
    state_obs: list[tuple[Any, dict[str, Any]]] = [(None, {})] * len(envs)
    done = [True] * len(envs)

    def checkpoint(path: Path) -> Path:
        state = {"batch": batch, "decisions": played, "elapsed_s": time.perf_counter() - start, "best": best_gain,
                 "best_state": best_state, "optimizer": optimiser.state_dict(), "rng": rng_states(rng, generator)}
        return save_model(path, model, batches=batch, steps=played, trainer_state=state)

    def finish() -> Path:
        curve.close()
        model.load_state_dict(best_state)
        return save_model(run_dir / MODEL_FILE, model, batches=batch, steps=played, val_gain=best_gain,
                          minutes=(time.perf_counter() - start) / 60)

    window: list[float] = []
    interrupt = GracefulInterrupt()
    with interrupt:
        while played < steps and time.perf_counter() - start < cfg.max_minutes * 60 and not interrupt.requested:
            batch += 1
            # one forward with gradients per lockstep slot gives both the sampling distribution and the loss's
            # logits (the parameters do not change within a batch; the same rows as one forward over the batch)
            logits, acts, rews = [], [], []
            for _ in range(cfg.slots_per_batch):
                slots = []
                for i, env in enumerate(envs):
                    if done[i]:
                        share = cfg.fixed_instance_share if pool else 1.0
                        inst = base if rng.random() < share else pool[rng.integers(len(pool))]
                        state_obs[i] = env.reset(seed=int(rng.integers(2**31 - 1)), options={"instance": inst})
                        heuristics[i].reset(env)
                        done[i] = False
                    slots.append(current_slot(env, heuristics[i].act(*state_obs[i])))
                tokens, prior, valid = (torch.from_numpy(x) for x in batch_slot_features(slots))
                logits.append(chunked_forward(model, tokens, prior, valid))  # (N, H, C)
                probs = torch.softmax(logits[-1].detach(), dim=-1)
                n, h, c = probs.shape
                sampled = torch.multinomial(probs.reshape(-1, c), cfg.samples, replacement=True, generator=generator)
                sampled = sampled.reshape(n, h, cfg.samples).permute(0, 2, 1)  # (N, K, H)
                rewards = batch_slot_rewards(slots, sampled.numpy())  # (N, K)
                heuristic_rewards = batch_slot_rewards(slots, np.stack([s.heuristic for s in slots])[:, None])
                window.append(float((rewards - heuristic_rewards).mean()))
                acts.append(sampled)
                rews.append(torch.from_numpy(rewards))
                for i, (env, s) in enumerate(zip(envs, slots, strict=True)):
                    obs, _, _, truncated, info = env.step(s.heuristic)  # the slots ahead do not depend on it
                    state_obs[i], done[i] = (obs, info), truncated
                played += len(envs)
            loss = reinforce_loss(torch.cat(logits), torch.cat(acts), torch.cat(rews))
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimiser.step()
            last = played >= steps or time.perf_counter() - start >= cfg.max_minutes * 60
            if batch % cfg.eval_every == 0 or last:
                model.eval()
                v = validation_gain(model, val, val_tensors)
                model.train()
                elapsed = time.perf_counter() - start
                alpha = float(model.log_alpha.detach().exp())
                curve.add(batch=batch, slots=played, seconds=elapsed, rollout_gain=float(np.mean(window)),
                          val_gain=v["gain"], val_latency_change=v["latency"], val_hit_rate_change=v["hit_rate"],
                          alpha=alpha)
                print(f"[oinc_prior] batch {batch} slot {played} {elapsed:.0f}s sampled-vs-heuristic reward "
                      f"{np.mean(window):+.4f}; greedy val gain {v['gain']:+.5f}/slot (latency {v['latency']:+.5f} s, "
                      f"hit rate {v['hit_rate']:+.5f}) alpha {alpha:.2f}", flush=True)
                window = []
                if v["gain"] > best_gain:
                    best_gain = v["gain"]
                    best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
                    save_model(run_dir / "model_best.pt", model, batches=batch, steps=played, val_gain=best_gain)
            if batch % cfg.checkpoint_every == 0:
                checkpoint(run_dir / "checkpoints" / f"model_{played}.pt")
    if interrupt.requested:
        saved = checkpoint(run_dir / "checkpoints" / f"model_interrupted_{played}.pt")
        finish()
        raise TrainingInterrupted(interrupt.signum or 2, saved)
    checkpoint(run_dir / "checkpoints" / f"model_{played}.pt")
    return finish()


def _record_pair(run_dir: Path, kwargs: dict[str, Any]) -> None:
    """Write the pair's controller and share into the run's config.yaml (when train.py made one), so the run is
    evaluated with the controller it was trained with."""
    from omegaconf import OmegaConf

    path = run_dir / "config.yaml"
    if not path.is_file():
        return
    saved = OmegaConf.load(path)
    if saved.env.kwargs.get("retraining") != kwargs["retraining"] or \
            saved.env.kwargs.get("retraining_share") != kwargs["retraining_share"]:
        print(f"[oinc_prior] the pair's controller: env.kwargs.retraining={kwargs['retraining']}, "
              f"retraining_share={kwargs['retraining_share']:.4f} (written to {path})", flush=True)
        saved.env.kwargs.retraining = kwargs["retraining"]
        saved.env.kwargs.retraining_share = kwargs["retraining_share"]
        OmegaConf.save(saved, path)


# --------------------------------------------------------------------------------------------------
# The ladder's metric over an agents.compare output
# --------------------------------------------------------------------------------------------------
