"""Imitation losses shared by the expert-iteration (DAgger) trainers (``agents.uec.dagger``, ``agents.aset.dagger``).

A teacher labels a state with its action and, for a rollout teacher, its value estimate of every action it compared
(NaN for actions it did not simulate); a student's logits are −inf off its action set. Each loss is checked by hand
on tiny cases in tests/agents/test_uec_dagger.py.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

_L = TypeVar("_L", bound="LabelArrays")


def imitation_loss(logits: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """mean_s −log π(a_teacher(s) | s): cross-entropy to the teacher's action (logits −inf off the action set)."""
    return -torch.log_softmax(logits, dim=-1).gather(1, teacher[:, None]).squeeze(1).mean()


def value_targets(values: torch.Tensor, teacher: torch.Tensor, tau: float) -> torch.Tensor:
    """(N, A) soft targets softmax((Q̂ − max Q̂)/τ) over the actions the teacher compared (0 elsewhere); a state with
    a single compared action, or τ = 0, gets the teacher's action one-hot. Near-ties (within the rollouts' noise)
    then share the target instead of one of them being called right at random."""
    onehot = torch.nn.functional.one_hot(teacher, values.shape[1]).to(torch.float64)
    if tau <= 0:
        return onehot
    finite = torch.isfinite(values)
    shifted = torch.where(finite, values.double(), torch.full_like(values, float("-inf"), dtype=torch.float64))
    shifted = shifted - shifted.max(dim=1, keepdim=True).values
    soft = torch.softmax(shifted / tau, dim=1).nan_to_num(0.0)
    several = finite.sum(dim=1, keepdim=True) > 1
    return torch.where(several, soft, onehot)


def soft_imitation_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """mean_s −Σ_a target(a)·log π(a | s) (targets 0 off the action set, where log π = −inf)."""
    log_p = torch.log_softmax(logits, dim=-1)
    return -(torch.where(targets > 0, targets * log_p, torch.zeros_like(log_p))).sum(dim=-1).mean()


def advantage_loss(logits: torch.Tensor, values: torch.Tensor, scale: float) -> torch.Tensor:
    """Regression of the logits, centred over the actions the teacher compared, on its centred rollout values
    (Q̂ − mean Q̂)/``scale``: mean over those actions of the squared error, over states with several. The argmax of
    E[Q̂ | features] is then the greedy action; unlike a class label, a noisy near-tie costs only its small error."""
    finite = torch.isfinite(values)
    several = finite.sum(dim=1) > 1
    if not bool(several.any()):
        return logits.sum() * 0.0
    logits, values, finite = logits[several], values[several].double(), finite[several]
    count = finite.sum(dim=1, keepdim=True)
    zero = torch.zeros_like(values)
    centred_logit = logits - torch.where(finite, logits, zero).sum(dim=1, keepdim=True) / count
    centred_value = (values - torch.where(finite, values, zero).sum(dim=1, keepdim=True) / count) / scale
    error = torch.where(finite, centred_logit - centred_value, zero)
    return (error.pow(2).sum(dim=1) / count.squeeze(1)).mean()


class LabelArrays:
    """Mixin of a dataclass of equal-length label arrays (a DAgger trainer's dataset): concatenation and a
    pickle-free ``.npz`` with a JSON meta file beside it. Subclasses set ``WHAT`` (named in load errors)."""

    WHAT = "a teacher-label file"

    def __len__(self) -> int:
        first = fields(self)[0].name  # type: ignore[arg-type]
        return int(getattr(self, first).shape[0])

    @classmethod
    def concatenate(cls: type[_L], parts: list[_L]) -> _L:
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)})  # type: ignore[arg-type]

    def save(self, path: Path, meta: dict[str, Any]) -> Path:
        """Compressed arrays at ``path`` and ``meta`` (env kwargs, teacher, provenance) as JSON beside it."""
        path = Path(path)
        np.savez_compressed(path, **{f.name: getattr(self, f.name) for f in fields(self)})  # type: ignore[arg-type]
        path.with_suffix(".json").write_text(json.dumps(meta, indent=2, default=str))
        return path

    @classmethod
    def load_arrays(cls, path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The arrays of ``path`` (no pickle) and the meta JSON beside it; a missing file raises naming ``dataset``."""
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"dataset={str(path)!r} is not a file ({cls.WHAT})")
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        meta_path = path.with_suffix(".json")
        return arrays, json.loads(meta_path.read_text()) if meta_path.is_file() else {}

    @classmethod
    def load(cls: type[_L], path: Path) -> tuple[_L, dict[str, Any]]:
        """The labels of ``path`` and their meta; arrays a field needs but the file lacks raise."""
        arrays, meta = cls.load_arrays(path)  # type: ignore[attr-defined]
        missing = [f.name for f in fields(cls) if f.name not in arrays]  # type: ignore[arg-type]
        if missing:
            raise ValueError(f"dataset={str(path)!r} lacks {missing}: not {cls.WHAT}")  # type: ignore[attr-defined]
        return cls(**{f.name: arrays[f.name] for f in fields(cls)}), meta  # type: ignore[arg-type]


def gradient_step(optimiser: torch.optim.Optimizer, loss: torch.Tensor, parameters: Any, grad_clip: float) -> float:
    """One optimiser step on ``loss`` with the gradient norm clipped at ``grad_clip``; returns the loss value."""
    optimiser.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(parameters, grad_clip)
    optimiser.step()
    return float(loss.item())


def fixed_instance_kwargs(algo: str, env_cfg: dict[str, Any], env_ids: tuple[str, ...], steps: int,
                          unit: str) -> dict[str, Any]:
    """The env kwargs of a trainer that plays the run's own instance plus a pool of others: the env must be one of
    ``env_ids`` without wrappers, with a fixed ``instance_seed``; ``steps`` (in ``unit``) at least 1."""
    env_id = str(env_cfg.get("id", env_ids[0]))
    if env_id not in env_ids or env_cfg.get("wrappers"):
        raise ValueError(f"algo={algo} trains on {list(env_ids)} without wrappers, not {env_id!r}")
    kwargs = dict(env_cfg.get("kwargs") or {})
    if kwargs.get("resample_instance") or kwargs.get("instance_seed", 0) is None:
        raise ValueError(f"algo={algo}: use a fixed instance_seed; train_instances adds the instance distribution")
    if steps < 1:
        raise ValueError(f"steps={steps} is invalid: expected >= 1 ({unit})")
    return kwargs
