"""sb3-contrib's MaskablePPO on the suite's envs: the batched trainer of train.py's ``algo=ppo_mask``.

With ``vec_env=native`` it steps an env's native vector env (``gym.make_vec(..., "vector_entry_point")``) through
:mod:`agents.vec_env`. On MultiDiscrete envs (OINC's 120 heads, CoRaiS' 100) two things made PPO slow: the
``torch.distributions`` argument checks (:func:`fast_distributions`) and one ``Categorical`` per head;
:func:`speed_up_policy` swaps in the same distribution computed per group of equal-sized heads. Envs without
``action_masks()`` learn unmasked (:func:`learn_kwargs`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["fast_distributions", "grouped_multicategorical", "is_maskable_ppo", "learn_kwargs", "speed_up_policy"]


def is_maskable_ppo(cls: type) -> bool:
    """Whether ``cls`` is sb3-contrib's MaskablePPO (or a subclass)."""
    return any(f"{c.__module__}.{c.__name__}" == "sb3_contrib.ppo_mask.ppo_mask.MaskablePPO" for c in cls.__mro__)


def fast_distributions() -> None:
    """Turn off ``torch.distributions`` argument validation (as :mod:`agents.zoo` does for rl-zoo3): MaskablePPO
    builds one Categorical per action head per call, and with OINC's 120 heads and CoRaiS' 100 the checks take
    about half of PPO's time. Process-wide; the values computed are the same."""
    import torch

    torch.distributions.Distribution.set_default_validate_args(False)


@functools.cache
def grouped_multicategorical() -> type:
    """sb3-contrib's ``MaskableMultiCategoricalDistribution`` computed per group of equal-sized heads (the class is
    built on first use: sb3-contrib is imported lazily)."""
    import torch as th
    from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

    huge_neg = -1e8  # MaskableCategorical's value for a masked logit

    class GroupedMaskableMultiCategorical(MaskableMultiCategoricalDistribution):
        """The same distribution as its parent (independent categoricals over the concatenated logits, masks as
        ``-1e8`` logits, masked entries out of the entropy), computed per group of equal-sized heads as one
        ``[batch, n, heads]`` tensor instead of one ``Categorical`` per head: OINC's 120 heads (sizes 12, 4, 4)
        and CoRaiS' 100 made that PPO's main cost. Samples use other random draws than the parent's (same
        distribution); log-probabilities, entropies and modes agree up to float rounding."""

        def __init__(self, action_dims: list[int]) -> None:
            super().__init__(action_dims)
            dims = np.asarray(action_dims)
            starts = np.concatenate([[0], np.cumsum(dims)[:-1]])
            self._total = int(dims.sum())
            #: per head size n: (the heads of that size, [n, heads] indices into the flat logits). The heads are the
            #: inner (contiguous) axis: CPU softmax over a short inner axis is about 10x slower than over axis 1
            self._groups = [(th.as_tensor(np.flatnonzero(dims == n)),
                             th.as_tensor(np.arange(n)[:, None] + starts[dims == n][None, :]))
                            for n in np.unique(dims)]
            self._log_p: list[th.Tensor] = []
            self._mask: list[th.Tensor] | None = None
            self._raw: th.Tensor | None = None

        def proba_distribution(self, action_logits: th.Tensor) -> GroupedMaskableMultiCategorical:
            self._raw = action_logits.reshape(-1, self._total)
            self.distributions = []
            self.apply_masking(None)
            return self

        def apply_masking(self, masks: Any) -> None:
            assert self._raw is not None, "Must set distribution parameters"
            flat = None if masks is None else th.as_tensor(masks, dtype=th.bool, device=self._raw.device).reshape(
                -1, self._total)
            if flat is not None and bool(flat.all()):
                flat = None  # all allowed: the same distribution as no mask
            self._mask = None if flat is None else [flat[:, index] for _, index in self._groups]
            self._log_p = []
            for g, (_, index) in enumerate(self._groups):
                logits = self._raw[:, index]
                if self._mask is not None:
                    logits = logits.masked_fill(~self._mask[g], huge_neg)
                self._log_p.append(th.log_softmax(logits, dim=1))

        def log_prob(self, actions: th.Tensor) -> th.Tensor:
            assert self._log_p, "Must set distribution parameters"
            actions = actions.reshape(-1, len(self.action_dims)).long()
            return sum(log_p.gather(1, actions[:, None, heads]).squeeze(1).sum(dim=1)
                       for log_p, (heads, _) in zip(self._log_p, self._groups, strict=True))

        def entropy(self) -> th.Tensor:
            assert self._log_p, "Must set distribution parameters"
            total = 0
            for g, log_p in enumerate(self._log_p):
                p_log_p = log_p.exp() * log_p
                if self._mask is not None:
                    p_log_p = p_log_p.masked_fill(~self._mask[g], 0.0)
                total = total - p_log_p.sum(dim=(1, 2))
            return total

        def sample(self) -> th.Tensor:
            # Gumbel-max: argmax(log p - log(-log U)) is a draw from p (masked entries, log p ~ -1e8, never win)
            return self._per_head(lambda log_p: (log_p - th.empty_like(log_p).exponential_().log()).argmax(dim=1))

        def mode(self) -> th.Tensor:
            return self._per_head(lambda log_p: log_p.argmax(dim=1))

        def _per_head(self, choose: Any) -> th.Tensor:
            assert self._log_p, "Must set distribution parameters"
            out = th.empty(self._log_p[0].shape[0], len(self.action_dims), dtype=th.long, device=self._log_p[0].device)
            for log_p, (heads, _) in zip(self._log_p, self._groups, strict=True):
                out[:, heads] = choose(log_p)
            return out

    return GroupedMaskableMultiCategorical


def speed_up_policy(model: Any) -> None:
    """MaskablePPO on a MultiDiscrete action space (OINC, CoRaiS): swap the policy's per-head distribution for
    :func:`grouped_multicategorical`'s batched one (no parameters: saved models are unchanged and load as usual)."""
    from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

    dist = getattr(getattr(model, "policy", None), "action_dist", None)
    if type(dist) is MaskableMultiCategoricalDistribution:
        model.policy.action_dist = grouped_multicategorical()(list(dist.action_dims))


def learn_kwargs(model: Any) -> dict[str, Any]:
    """Extra ``model.learn`` arguments: MaskablePPO on an env without ``action_masks()`` (OINC, CoRaiS' MultiDiscrete)
    learns unmasked (``use_masking=False``, sb3-contrib's plain-PPO mode)."""
    if not is_maskable_ppo(type(model)):
        return {}
    from sb3_contrib.common.maskable.utils import is_masking_supported

    return {} if is_masking_supported(model.get_env()) else {"use_masking": False}
