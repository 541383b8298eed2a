"""Discrete soft actor-critic (SAC-discrete) on stable-baselines3's ``OffPolicyAlgorithm``.

The formulation of Christodoulou (2019, arXiv:1910.07207) and CleanRL's ``sac_atari.py``, which is also
the SAC-D of the OINC paper (Section IV-C, eqs. 5-7): the actor outputs a categorical distribution, two
critics output a Q-value per action, and every expectation over actions is computed exactly instead of
sampled:

* critic target   y = r + γ (1 − done) Σ_a π(a|s') [min_n Q'_n(s', a) − α log π(a|s')]
* critic loss     ½ Σ_n (Q_n(s, a) − y)²
* actor loss      Σ_a π(a|s) [α log π(a|s) − min_n Q_n(s, a)]
* temperature     log α · (H(π(·|s)) − H̄(s)),  H̄(s) = ratio · log(#feasible actions in s)

**Target entropy.** A fixed fraction ``target_entropy_ratio`` (default 0.6, the design's 0.6-0.9 band) of
the maximum entropy of the *feasible* actions of each state; CleanRL's 0.89 and the often-quoted 0.98 make
the temperature grow without bound on small action sets, and OINC's −log(1 + ι) is not an entropy
a categorical policy can reach meaningfully for the temperature update. A state with one feasible action
has target 0 and contributes nothing.

**Masks** (contract 6): the last ``mask_dim`` observation entries are the feasibility bits, so replayed
transitions carry their own masks. Infeasible actions get −inf logits (probability exactly 0) and are
dropped from every expectation above (the target, the actor loss, the entropy).

**MultiDiscrete** (factorised heads, for OINC-v0): the actor has one softmax per head, the joint policy
is their product (joint entropy = sum of head entropies), and each critic has one Q-head per action head
(action branching, Tavakoli et al. 2018): Q_h(s, a_h) is regressed on the shared target
y = r + γ(1 − done) mean_h [Σ_a π_h(a|s') min_n Q'_{n,h}(s', a) + α H(π_h(·|s'))], the actor loss is the
sum over heads of the single-head loss, and the temperature compares the mean head entropy with the mean
head target. The entropy bonus is the *mean* over heads, on the scale of one head's Q: with the joint
entropy (the sum over OINC's 120 heads, up to 210 nats against rewards of about −1 per step) the bonus
dominated the targets, Q grew to ~10⁵, its errors made the policy peaky, α grew and the critic diverged
(measured: critic loss 4·10³ and α = 44 after 50k steps, every seed). With one head this is exactly the
Discrete case.

**No padding.** Heads of equal size form a group, and every quantity is one ``[batch, heads, choices]``
tensor per group (a view of the network's flat output when the group's columns are contiguous, as for a
Discrete space; one gather otherwise), so no work is spent on padding entries.

**Cost per update** (measured with ``benchmarks/training_speed.py``): one pass of the online critics, whose
Q-values (taken before the critic step, detached) also serve the actor loss; log-probabilities through
``logsumexp`` (much cheaper than ``log_softmax`` on CPU); ``th.minimum`` over the critics; Adam with
``fused=True`` (one kernel per step on CPU and GPU); Polyak averaging with ``torch._foreach_lerp_``;
losses logged once per ``train`` call, not per gradient step. ``update_ratio`` (gradient steps per env
step) sets SB3's ``train_freq``/``gradient_steps``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    FlattenExtractor,
    create_mlp,
)
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, PyTorchObs, Schedule
from stable_baselines3.common.utils import get_linear_fn, get_parameters_by_name
from torch import nn

from agents.masking import FeasibleWarmupMixin, action_dims, mask_from_obs
from agents.off_policy import fast_optimizer_kwargs, update_schedule
from envs.allowlist import import_allowed

SelfDiscreteSAC = TypeVar("SelfDiscreteSAC", bound="DiscreteSAC")


# --------------------------------------------------------------------------------------------------
# The losses, as pure functions of [batch, heads, choices] tensors, one per group of equal-size heads
# (a single tensor is one group; tested against hand computations)
# --------------------------------------------------------------------------------------------------

#: One ``[B, H_g, N_g]`` tensor per group of equal-size heads, or a single tensor (one group).
Groups = th.Tensor | Sequence[th.Tensor]


def _groups(x: Groups) -> list[th.Tensor]:
    return [x] if isinstance(x, th.Tensor) else list(x)


def _num_heads(x: Groups) -> int:
    return sum(g.shape[1] for g in _groups(x))


def masked_log_softmax(logits: th.Tensor, valid: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """Probabilities and log-probabilities of one group with invalid entries at probability 0.

    ``logits`` and ``valid`` are ``[B, H, N]``; every head must have at least one valid entry. The
    returned log-probabilities are 0 (not −inf) at invalid entries so that ``p · log p`` is 0 there.
    Computed through ``logsumexp``, which is several times cheaper than ``log_softmax`` on CPU.
    """
    masked = logits.masked_fill(~valid, -th.inf)
    log_probs = (masked - masked.logsumexp(dim=-1, keepdim=True)).masked_fill(~valid, 0.0)
    probs = log_probs.exp() * valid
    return probs, log_probs


def policy_entropy(probs: Groups, log_probs: Groups) -> th.Tensor:
    """Entropy of the joint (factorised) policy per state: −Σ_h Σ_a p log p, shape ``[B]``."""
    return -sum((p * lp).sum(dim=(1, 2)) for p, lp in zip(_groups(probs), _groups(log_probs)))


def target_entropy(valid: Groups, ratio: float) -> th.Tensor:
    """``ratio`` times the maximum joint entropy Σ_h log(#valid_h) of each state, shape ``[B]``."""
    return ratio * sum(th.log(v.sum(dim=-1).clamp(min=1).to(th.float32)).sum(dim=-1) for v in _groups(valid))


def soft_state_value(probs: Groups, log_probs: Groups, q: Groups, alpha: th.Tensor | float) -> th.Tensor:
    """V(s) = mean_h [Σ_a π_h(a|s) Q_h(s, a) + α H(π_h(·|s))], shape ``[B]`` (exact expectation; the
    entropy bonus is the mean head entropy, see the module docstring).

    Q must be finite: infeasible actions have probability exactly 0, so their Q-values do not count.
    """
    expected_q = sum((p * qg).sum(dim=(1, 2)) for p, qg in zip(_groups(probs), _groups(q))) / _num_heads(probs)
    return expected_q + alpha * policy_entropy(probs, log_probs) / _num_heads(probs)


def critic_target(
    rewards: th.Tensor, dones: th.Tensor, discounts: th.Tensor | float, next_value: th.Tensor
) -> th.Tensor:
    """y = r + γ (1 − done) V(s'); ``rewards``/``dones`` are ``[B, 1]``, ``next_value`` ``[B]``."""
    return rewards.reshape(-1) + (1.0 - dones.reshape(-1)) * _flat(discounts) * next_value


def critic_loss(q_values: Sequence[Groups], actions: Groups, target: th.Tensor) -> th.Tensor:
    """½ Σ_n mean_{b,h} (Q_n(s_b, a_{b,h}) − y_b)² for the taken actions (``[B, H_g]`` per group)."""
    actions = _groups(actions)
    heads = sum(a.shape[1] for a in actions)
    batch = target.shape[0]
    total = th.zeros((), dtype=target.dtype, device=target.device)
    for q in q_values:
        for qg, ag in zip(_groups(q), actions):
            taken = qg.gather(-1, ag.long().unsqueeze(-1)).squeeze(-1)
            total = total + (taken - target.unsqueeze(-1)).square().sum()
    return 0.5 * total / (batch * heads)


def actor_loss(probs: Groups, log_probs: Groups, min_q: Groups, alpha: th.Tensor | float) -> th.Tensor:
    """mean_b Σ_h Σ_a π(a|s)[α log π(a|s) − min_n Q_n(s, a)] (Q detached by the caller, finite)."""
    per_state = sum(
        (p * (alpha * lp - q)).sum(dim=(1, 2)) for p, lp, q in zip(_groups(probs), _groups(log_probs), _groups(min_q))
    )
    return per_state.mean()


def temperature_loss(log_alpha: th.Tensor, entropy: th.Tensor, entropy_target: th.Tensor) -> th.Tensor:
    """mean_b log α · (H(s) − H̄(s)): α grows when the policy is less random than the target."""
    return (log_alpha * (entropy - entropy_target).detach()).mean()


def _flat(x: th.Tensor | float) -> th.Tensor | float:
    return x.reshape(-1) if isinstance(x, th.Tensor) else x


def polyak(params: Sequence[th.Tensor], target_params: Sequence[th.Tensor], tau: float) -> None:
    """target ← (1 − τ) target + τ params, in one fused call (SB3's ``polyak_update`` loops in Python)."""
    if params:
        with th.no_grad():
            th._foreach_lerp_(list(target_params), list(params), tau)


def elementwise_min(tables: Sequence[Groups]) -> list[th.Tensor]:
    """Per group, the element-wise minimum over the critics' Q tables (``th.minimum``, no stacking)."""
    groups = [_groups(t) for t in tables]
    out = []
    for per_critic in zip(*groups):
        low = per_critic[0]
        for other in per_critic[1:]:
            low = th.minimum(low, other)
        out.append(low)
    return out


# --------------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------------


class HeadLayout(nn.Module):
    """Splits flat per-action outputs ``[B, Σ n_h]`` (action-space order) into one ``[B, H_g, n_g]`` tensor
    per group of equal-size heads, without padding.

    Groups are ordered by first appearance of their size; within a group heads keep their order. A
    group whose columns are contiguous (a Discrete space, or heads of a single size) is a view; any other
    group costs one gather.
    """

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = list(dims)
        offsets = np.concatenate([[0], np.cumsum(self.dims)[:-1]]).astype(np.int64)
        self.sizes: list[int] = list(dict.fromkeys(self.dims))
        self.group_heads: list[list[int]] = [[h for h, n in enumerate(self.dims) if n == size] for size in self.sizes]
        self.slices: list[tuple[int, int] | None] = []
        for g, heads in enumerate(self.group_heads):
            columns = np.concatenate([offsets[h] + np.arange(self.dims[h]) for h in heads])
            contiguous = bool(np.array_equal(columns, np.arange(columns[0], columns[0] + columns.size)))
            self.slices.append((int(columns[0]), int(columns.size)) if contiguous else None)
            self.register_buffer(f"columns_{g}", th.as_tensor(columns), persistent=False)
            self.register_buffer(f"heads_{g}", th.as_tensor(heads, dtype=th.int64), persistent=False)
        self.num_heads = len(self.dims)

    def split(self, flat: th.Tensor) -> list[th.Tensor]:
        """``[B, Σ n_h]`` → one ``[B, H_g, n_g]`` tensor per group."""
        batch = flat.shape[0]
        out = []
        for g, (size, heads, where) in enumerate(zip(self.sizes, self.group_heads, self.slices)):
            part = flat.narrow(1, *where) if where is not None else flat.index_select(1, getattr(self, f"columns_{g}"))
            out.append(part.reshape(batch, len(heads), size))
        return out

    def valid_masks(self, flat_mask: th.Tensor | None, batch: int, device: th.device) -> list[th.Tensor]:
        """Feasibility per group ``[B, H_g, n_g]``; a head with no feasible entry falls back to all entries."""
        if flat_mask is None:
            return [th.ones(1, len(heads), size, dtype=th.bool, device=device).expand(batch, -1, -1)
                    for size, heads in zip(self.sizes, self.group_heads)]
        return [valid | ~valid.any(dim=-1, keepdim=True) for valid in self.split(flat_mask)]

    def split_actions(self, actions: th.Tensor) -> list[th.Tensor]:
        """Taken actions ``[B, H]`` (head order) → one ``[B, H_g]`` tensor per group."""
        if len(self.sizes) == 1:
            return [actions]
        return [actions.index_select(1, getattr(self, f"heads_{g}")) for g in range(len(self.sizes))]

    def merge_actions(self, per_group: list[th.Tensor]) -> th.Tensor:
        """One ``[B, H_g]`` tensor per group → actions ``[B, H]`` in head order."""
        if len(per_group) == 1:
            return per_group[0]
        out = th.empty(per_group[0].shape[0], self.num_heads, dtype=per_group[0].dtype, device=per_group[0].device)
        for g, actions in enumerate(per_group):
            out[:, getattr(self, f"heads_{g}")] = actions
        return out


def make_head(features_dim: int, n_outputs: int, net_arch: list[int], activation_fn: type[nn.Module],
              head_class: type[nn.Module] | None = None, head_kwargs: dict[str, Any] | None = None) -> nn.Module:
    """The network from features to one output per (head, choice): an MLP, or ``head_class`` (e.g. a
    per-action scorer such as :class:`agents.uec.sac_head.UECActionScorer`)."""
    if head_class is None:
        return nn.Sequential(*create_mlp(features_dim, n_outputs, net_arch, activation_fn))
    return head_class(features_dim, n_outputs, net_arch, activation_fn, **(head_kwargs or {}))


class CategoricalActor(BasePolicy):
    """Features → MLP → one logit per (head, choice)."""

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        features_extractor: BaseFeaturesExtractor,
        features_dim: int,
        net_arch: list[int],
        activation_fn: type[nn.Module] = nn.ReLU,
        normalize_images: bool = True,
        head_class: type[nn.Module] | None = None,
        head_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(observation_space, action_space, features_extractor=features_extractor,
                         normalize_images=normalize_images)
        self.net_arch = net_arch
        self.features_dim = features_dim
        self.activation_fn = activation_fn
        self.logits_net = make_head(features_dim, int(sum(action_dims(action_space))), net_arch, activation_fn,
                                    head_class, head_kwargs)

    def forward(self, obs: PyTorchObs) -> th.Tensor:
        return self.logits_net(self.extract_features(obs, self.features_extractor))

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        raise NotImplementedError("use DiscreteSACPolicy._predict, which knows the mask")


class ActionValueCritic(BasePolicy):
    """``n_critics`` Q-networks, each giving Q per (head, choice)."""

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        features_extractor: BaseFeaturesExtractor,
        features_dim: int,
        net_arch: list[int],
        activation_fn: type[nn.Module] = nn.ReLU,
        normalize_images: bool = True,
        head_class: type[nn.Module] | None = None,
        head_kwargs: dict[str, Any] | None = None,
        n_critics: int = 2,
    ) -> None:
        super().__init__(observation_space, action_space, features_extractor=features_extractor,
                         normalize_images=normalize_images)
        n_out = int(sum(action_dims(action_space)))
        self.q_networks = nn.ModuleList(
            make_head(features_dim, n_out, net_arch, activation_fn, head_class, head_kwargs) for _ in range(n_critics)
        )

    def forward(self, obs: PyTorchObs) -> list[th.Tensor]:
        features = self.extract_features(obs, self.features_extractor)
        return [q(features) for q in self.q_networks]

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        raise NotImplementedError


class DiscreteSACPolicy(BasePolicy):
    """Actor, twin critics and target critics for SAC-discrete; masks come from the observation tail.

    :param net_arch: hidden layers, a list (shared by actor and critics) or ``{"pi": [...], "qf": [...]}``
    :param mask_dim: number of trailing observation entries holding the action mask (0 = none)
    :param head: the output network of actor and critics (a class or "module:Class"; default an MLP), e.g.
        ``agents.uec.sac_head:UECActionScorer`` for UEC-v0; ``head_kwargs`` go to it, with
        ``critic_head_kwargs`` on top for the critics (e.g. a prior's scale in Q units instead of logits)
    """

    actor: CategoricalActor
    critic: ActionValueCritic
    critic_target: ActionValueCritic

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        n_critics: int = 2,
        mask_dim: int = 0,
        head: type[nn.Module] | str | None = None,
        head_kwargs: dict[str, Any] | None = None,
        critic_head_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class,
            features_extractor_kwargs,
            optimizer_class=optimizer_class,
            optimizer_kwargs=fast_optimizer_kwargs(optimizer_class, optimizer_kwargs),
            normalize_images=normalize_images,
            squash_output=False,
        )
        if net_arch is None:
            net_arch = [256, 256]
        if isinstance(net_arch, dict):
            pi_arch, qf_arch = list(net_arch["pi"]), list(net_arch["qf"])
        else:
            pi_arch, qf_arch = list(net_arch), list(net_arch)
        self.net_arch = net_arch
        self.pi_arch, self.qf_arch = pi_arch, qf_arch
        self.activation_fn = activation_fn
        self.n_critics = n_critics
        self.mask_dim = int(mask_dim)
        self.head = head
        self.head_kwargs = dict(head_kwargs or {})
        self.critic_head_kwargs = dict(critic_head_kwargs or {})
        self.layout = HeadLayout(action_dims(action_space))
        self._build(lr_schedule)

    def _build(self, lr_schedule: Schedule) -> None:
        head_class = import_allowed(self.head, "policy_kwargs.head") if isinstance(self.head, str) else self.head

        def make(cls: type[BasePolicy], arch: list[int], head_kwargs: dict[str, Any], **extra: Any) -> Any:
            extractor = self.make_features_extractor()
            return cls(self.observation_space, self.action_space, extractor, extractor.features_dim, arch,
                       self.activation_fn, self.normalize_images, head_class, head_kwargs, **extra)

        critic_kwargs = {**self.head_kwargs, **self.critic_head_kwargs}
        self.actor = make(CategoricalActor, self.pi_arch, self.head_kwargs)
        self.critic = make(ActionValueCritic, self.qf_arch, critic_kwargs, n_critics=self.n_critics)
        self.critic_target = make(ActionValueCritic, self.qf_arch, critic_kwargs, n_critics=self.n_critics)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.set_training_mode(False)
        self.actor.optimizer = self.optimizer_class(self.actor.parameters(), lr=lr_schedule(1),
                                                    **self.optimizer_kwargs)
        self.critic.optimizer = self.optimizer_class(self.critic.parameters(), lr=lr_schedule(1),
                                                     **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            dict(
                net_arch=self.net_arch,
                activation_fn=self.activation_fn,
                features_extractor_class=self.features_extractor_class,
                features_extractor_kwargs=self.features_extractor_kwargs,
                optimizer_class=self.optimizer_class,
                optimizer_kwargs=self.optimizer_kwargs,
                n_critics=self.n_critics,
                mask_dim=self.mask_dim,
                head=self.head,
                head_kwargs=self.head_kwargs,
                critic_head_kwargs=self.critic_head_kwargs,
            )
        )
        return data

    # --- helpers on preprocessed observation tensors ---
    def valid_actions(self, obs: th.Tensor) -> list[th.Tensor]:
        """Per group ``[B, H_g, n_g]`` boolean: the observation's action mask (all True without one)."""
        return self.layout.valid_masks(mask_from_obs(obs, self.mask_dim), obs.shape[0], obs.device)

    def distribution(self, obs: th.Tensor) -> tuple[list[th.Tensor], list[th.Tensor], list[th.Tensor]]:
        """(probs, log_probs, valid), one ``[B, H_g, n_g]`` tensor per head group, of the actor at ``obs``."""
        valid = self.valid_actions(obs)
        pairs = [masked_log_softmax(logits, v) for logits, v in zip(self.layout.split(self.actor(obs)), valid)]
        return [p for p, _ in pairs], [lp for _, lp in pairs], valid

    @property
    def has_prior(self) -> bool:
        """Whether the actor's head defines a fixed prior policy (``prior_logits``, e.g. a heuristic's scores)."""
        return bool(getattr(self.actor.logits_net, "has_prior", False))

    def prior_log_probs(self, obs: th.Tensor, valid: list[th.Tensor]) -> list[th.Tensor]:
        """Log-probabilities of the head's fixed prior policy under the same masks, one tensor per group."""
        logits = self.actor.logits_net.prior_logits(self.actor.extract_features(obs, self.actor.features_extractor))
        return [masked_log_softmax(g, v)[1] for g, v in zip(self.layout.split(logits), valid)]

    def log_ratio(self, obs: th.Tensor, log_probs: list[th.Tensor], valid: list[th.Tensor]) -> list[th.Tensor]:
        """log π − log π₀ with a prior (the entropy terms become −KL(π‖π₀)), else log π."""
        if not self.has_prior:
            return log_probs
        return [lp - lp0 for lp, lp0 in zip(log_probs, self.prior_log_probs(obs, valid))]

    def q_values(self, obs: th.Tensor, target: bool = False) -> list[list[th.Tensor]]:
        """Per critic, its Q tables (one ``[B, H_g, n_g]`` per group), online or target critics."""
        net = self.critic_target if target else self.critic
        return [self.layout.split(q) for q in net(obs)]

    def forward(self, obs: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        return self._predict(obs, deterministic=deterministic)

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        probs, _, valid = self.distribution(observation)
        if deterministic:
            per_group = [p.masked_fill(~v, -1.0).argmax(dim=-1) for p, v in zip(probs, valid)]
        else:
            # th.multinomial: the same categorical draw as Categorical(probs).sample(), ~3x cheaper per call
            per_group = [th.multinomial(p.reshape(-1, p.shape[-1]), 1).reshape(p.shape[:-1]) for p in probs]
        actions = self.layout.merge_actions(per_group)
        if isinstance(self.action_space, spaces.Discrete):
            return actions[:, 0]
        return actions

    def set_training_mode(self, mode: bool) -> None:
        """Switch actor and critics between train and eval mode; a no-op when already in ``mode`` (SB3 calls
        this at every env step and every update, and the recursive ``nn.Module.train`` costs ~0.4 ms)."""
        if self.training == mode and self.actor.training == mode and self.critic.training == mode:
            return
        self.actor.set_training_mode(mode)
        self.critic.set_training_mode(mode)
        self.training = mode


# --------------------------------------------------------------------------------------------------
# The algorithm
# --------------------------------------------------------------------------------------------------


class DiscreteSAC(FeasibleWarmupMixin, OffPolicyAlgorithm):
    """Soft actor-critic for Discrete / MultiDiscrete actions with masks from the observation.

    Hyper-parameters as SB3's SAC, plus:

    :param ent_coef: ``"auto"`` (learned temperature) or a fixed float
    :param ent_coef_init: initial temperature when learned (OINC uses 1.0)
    :param target_entropy_ratio: target entropy as a fraction of the maximum feasible entropy
    :param target_kl: with a head that has a prior policy (``prior_logits``): the temperature keeps
        KL(π‖π₀) per head near this value instead of the entropy near its target (nats)
    :param mask_dim: trailing observation entries that hold the action mask (0 = none)
    :param max_grad_norm: gradient-norm clip for actor and critics (None = no clipping)
    :param update_ratio: gradient steps per env step; when given it sets ``train_freq`` and
        ``gradient_steps`` (0.25: one update every 4 env steps)
    :param learning_rate_final: when given, the learning rate (actor, critics, temperature) decays linearly
        from ``learning_rate`` to this value over the ``learn`` call, which damps late policy churn
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": DiscreteSACPolicy}
    policy: DiscreteSACPolicy

    def __init__(
        self,
        policy: str | type[DiscreteSACPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 3e-4,
        buffer_size: int = 100_000,
        learning_starts: int = 1000,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        n_steps: int = 1,
        ent_coef: str | float = "auto",
        ent_coef_init: float = 1.0,
        target_entropy_ratio: float = 0.6,
        target_kl: float = 0.05,
        target_update_interval: int = 1,
        mask_dim: int = 0,
        max_grad_norm: float | None = None,
        update_ratio: float | None = None,
        learning_rate_final: float | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        if update_ratio is not None:
            train_freq, gradient_steps = update_schedule(update_ratio)
        if learning_rate_final is not None:
            if callable(learning_rate):
                raise ValueError("learning_rate_final needs a constant learning_rate to decay from")
            learning_rate = get_linear_fn(float(learning_rate), float(learning_rate_final), 1.0)
        super().__init__(
            policy,
            env,
            learning_rate,
            buffer_size,
            learning_starts,
            batch_size,
            tau,
            gamma,
            train_freq,
            gradient_steps,
            action_noise=None,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            n_steps=n_steps,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            device=device,
            seed=seed,
            sde_support=False,
            supported_action_spaces=(spaces.Discrete, spaces.MultiDiscrete),
            support_multi_env=True,
        )
        if not (isinstance(ent_coef, (int, float)) or ent_coef == "auto"):
            raise ValueError(f"ent_coef={ent_coef!r} is not valid; valid values: 'auto' or a float >= 0")
        if not 0.0 <= target_entropy_ratio < 1.0:
            raise ValueError(f"target_entropy_ratio={target_entropy_ratio} must lie in [0, 1)")
        self.ent_coef = ent_coef
        self.ent_coef_init = float(ent_coef_init)
        self.target_entropy_ratio = float(target_entropy_ratio)
        if not target_kl > 0:
            raise ValueError(f"target_kl={target_kl!r} is invalid: expected a number > 0")
        self.target_kl = float(target_kl)
        self.target_update_interval = int(target_update_interval)
        self.mask_dim = int(mask_dim)
        self.max_grad_norm = max_grad_norm
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        self.policy_kwargs = {**self.policy_kwargs, "mask_dim": self.mask_dim}
        super()._setup_model()
        self.actor = self.policy.actor
        self.critic = self.policy.critic
        self.critic_target = self.policy.critic_target
        self.critic_parameters = list(self.critic.parameters())
        self.critic_target_parameters = list(self.critic_target.parameters())
        self.batch_norm_stats = get_parameters_by_name(self.critic, ["running_"])
        self.batch_norm_stats_target = get_parameters_by_name(self.critic_target, ["running_"])
        if self.ent_coef == "auto":
            init = th.log(th.tensor(self.ent_coef_init, dtype=th.float32))
            self.log_ent_coef = init.to(self.device).requires_grad_(True)
            self.ent_coef_optimizer = th.optim.Adam([self.log_ent_coef], lr=self.lr_schedule(1))
        else:
            self.log_ent_coef = th.log(th.tensor(float(self.ent_coef), device=self.device))
            self.ent_coef_optimizer = None

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        self.policy.set_training_mode(True)
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers.append(self.ent_coef_optimizer)
        self._update_learning_rate(optimizers)
        layout = self.policy.layout

        logs: dict[str, list[th.Tensor]] = {k: [] for k in ("critic_loss", "actor_loss", "ent_coef", "ent_coef_loss",
                                                            "entropy", "target_entropy", "q_mean")}
        for step in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            discounts = data.discounts if data.discounts is not None else self.gamma
            actions = layout.split_actions(data.actions.long().reshape(batch_size, -1))
            alpha = self.log_ent_coef.detach().exp()

            with th.no_grad():
                next_probs, next_log_probs, next_valid = self.policy.distribution(data.next_observations)
                next_log_probs = self.policy.log_ratio(data.next_observations, next_log_probs, next_valid)
                next_q = elementwise_min(self.policy.q_values(data.next_observations, target=True))
                next_value = soft_state_value(next_probs, next_log_probs, next_q, alpha)
                target = critic_target(data.rewards, data.dones, discounts, next_value)

            # one pass of the online critics: its Q-values, detached, are also the actor's (taken before the
            # critic step, as a full extra forward pass after it would cost about a third of the update)
            q_values = self.policy.q_values(data.observations)
            loss_q = critic_loss(q_values, actions, target)
            self._step(self.critic.optimizer, loss_q, self.critic.parameters())

            probs, log_probs, valid = self.policy.distribution(data.observations)
            log_probs = self.policy.log_ratio(data.observations, log_probs, valid)
            min_q = [q.detach() for q in elementwise_min(q_values)]
            loss_pi = actor_loss(probs, log_probs, min_q, alpha)
            self._step(self.actor.optimizer, loss_pi, self.actor.parameters())

            entropy = policy_entropy(probs, log_probs).detach()  # −KL(π‖π₀) with a prior
            if self.policy.has_prior:
                entropy_target = th.full_like(entropy, -self.target_kl * _num_heads(probs))
            else:
                entropy_target = target_entropy(valid, self.target_entropy_ratio)
            if self.ent_coef_optimizer is not None:
                heads = _num_heads(probs)  # mean head entropy against the mean head target
                loss_alpha = temperature_loss(self.log_ent_coef, entropy / heads, entropy_target / heads)
                self.ent_coef_optimizer.zero_grad()
                loss_alpha.backward()
                self.ent_coef_optimizer.step()
                logs["ent_coef_loss"].append(loss_alpha.detach())

            if step % self.target_update_interval == 0:
                polyak(self.critic_parameters, self.critic_target_parameters, self.tau)
                polyak(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)

            logs["critic_loss"].append(loss_q.detach())
            logs["actor_loss"].append(loss_pi.detach())
            logs["ent_coef"].append(alpha)
            logs["entropy"].append(entropy.mean())
            logs["target_entropy"].append(entropy_target.mean())
            first = [q.detach() for q in q_values[0]]
            logs["q_mean"].append(sum((q * v).sum() for q, v in zip(first, valid))
                                  / sum(v.sum() for v in valid).clamp(min=1))

        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        for key, values in logs.items():
            if values:  # one synchronisation per train() call, not one per gradient step and quantity
                self.logger.record(f"train/{key}", float(th.stack(values).float().mean()))

    def _step(self, optimizer: th.optim.Optimizer, loss: th.Tensor, params: Any) -> None:
        optimizer.zero_grad()
        loss.backward()
        if self.max_grad_norm is not None:
            th.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
        optimizer.step()

    def learn(
        self: SelfDiscreteSAC,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str = "DiscreteSAC",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfDiscreteSAC:
        return super().learn(total_timesteps=total_timesteps, callback=callback, log_interval=log_interval,
                             tb_log_name=tb_log_name, reset_num_timesteps=reset_num_timesteps,
                             progress_bar=progress_bar)

    def _excluded_save_params(self) -> list[str]:
        # the parameter lists are views of the policy's modules, rebuilt by _setup_model at load: saving them
        # pickled every critic weight a second and a third time into model.zip's data (9 MB for OINC)
        return [*super()._excluded_save_params(), "actor", "critic", "critic_target", "critic_parameters",
                "critic_target_parameters", "batch_norm_stats", "batch_norm_stats_target"]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts = ["policy", "actor.optimizer", "critic.optimizer"]
        if self.ent_coef_optimizer is not None:
            state_dicts.append("ent_coef_optimizer")
        return state_dicts, ["log_ent_coef"]
