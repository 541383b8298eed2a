"""Attention dispatcher for UEC-v0: one token per server-profile candidate (SSP) plus a reject token.

Token features (all from the flat observation via ``ObservationLayout.split``), per SSP (k, l):
normalised R_jkl(t), E[d_l]/D, server k's 5 features, the task's budget on server k, the feasibility bit
and a reject flag (0); the reject token has zeros, feasibility 1 and reject flag 1. The context (time,
device one-hot, weight and accuracy gap) is embedded and added to every token, so the encoder (pre-norm
multi-head attention layers) mixes candidates with the task in view. A query built from the context and
the mean token is scored against each token with CoRaiS' clipped-tanh compatibility ``C·tanh(q·k/√d)``;
infeasible candidates are masked before the softmax (reject is always feasible). Output order matches the
env's actions: index 0 = reject, ``1 + k·L + l`` = server k with profile l.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from agents.loading import save_config_model as save_model  # noqa: F401  (the trainers' save format)
from envs.uec.env import ObservationLayout

#: The env the UEC dispatchers act on.
ENV_ID = "UEC-v0"
TOKEN_FEATURES = 10


@dataclass
class UECModelConfig:
    """Sizes of the network; the env dimensions are stored so a saved model checks the env it meets."""

    num_servers: int
    num_devices: int
    num_profiles: int
    lp_features: bool = False
    embed_dim: int = 64
    heads: int = 4
    layers: int = 2
    ff_hidden: int = 128
    tanh_clip: float = 10.0

    def __post_init__(self) -> None:
        if self.embed_dim % self.heads:
            raise ValueError(f"embed_dim={self.embed_dim} must be a multiple of heads={self.heads}")
        if self.layers < 0 or self.tanh_clip <= 0:
            raise ValueError(f"need layers >= 0 and tanh_clip > 0 (got {self.layers}, {self.tanh_clip})")

    @property
    def layout(self) -> ObservationLayout:
        return ObservationLayout(self.num_servers, self.num_devices, self.num_profiles, self.lp_features)

    def to_dict(self) -> dict:
        return asdict(self)


def config_for_layout(layout: ObservationLayout, **sizes: object) -> UECModelConfig:
    """A model config whose env dimensions are those of ``layout``."""
    return UECModelConfig(layout.num_servers, layout.num_devices, layout.num_profiles, layout.lp_features,
                          **sizes)  # type: ignore[arg-type]


class UECAttentionNet(nn.Module):
    """Masked attention policy: flat observations (N, n) -> action logits (N, 1 + K·L), -inf where infeasible."""

    def __init__(self, cfg: UECModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.layout = cfg.layout
        d = cfg.embed_dim
        context_dim = 2 + cfg.num_devices + 2
        self.token_in = nn.Linear(TOKEN_FEATURES, d)
        self.context_in = nn.Sequential(nn.Linear(context_dim, d), nn.ReLU(), nn.Linear(d, d))
        self.encoder = nn.ModuleList(
            nn.TransformerEncoderLayer(d, cfg.heads, cfg.ff_hidden, dropout=0.0, batch_first=True, norm_first=True)
            for _ in range(cfg.layers)
        )
        self.norm = nn.LayerNorm(d)
        self.query = nn.Linear(2 * d, d, bias=False)
        self.key = nn.Linear(d, d, bias=False)

    def features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(tokens (N, 1+K·L, 10), context (N, 4+J), feasible (N, 1+K·L) bool) from flat observations."""
        parts = self.layout.split(obs)
        n, k, L = obs.shape[0], self.cfg.num_servers, self.cfg.num_profiles
        feasible = parts["action_mask"] > 0.5
        feasible[:, 0] = True  # reject is always allowed
        servers = parts["servers"].repeat_interleave(L, dim=1)  # (N, K·L, 5)
        budget = parts["task"][:, 2:].repeat_interleave(L, dim=1).unsqueeze(-1)  # (N, K·L, 1)
        ssp = torch.cat([
            parts["ssp_profit"].unsqueeze(-1), parts["ssp_duration"].unsqueeze(-1), servers, budget,
            feasible[:, 1:].unsqueeze(-1).float(), torch.zeros(n, k * L, 1, dtype=obs.dtype, device=obs.device),
        ], dim=-1)
        reject = torch.zeros(n, 1, TOKEN_FEATURES, dtype=obs.dtype, device=obs.device)
        reject[..., -2:] = 1.0
        context = torch.cat([parts["time"], parts["device"], parts["task"][:, :2]], dim=-1)
        return torch.cat([reject, ssp], dim=1), context, feasible

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        tokens, context, feasible = self.features(obs)
        c = self.context_in(context)
        h = self.token_in(tokens) + c.unsqueeze(1)
        for layer in self.encoder:
            h = layer(h)
        h = self.norm(h)
        q = self.query(torch.cat([c, h.mean(dim=1)], dim=-1))  # (N, d)
        compat = torch.einsum("nd,nad->na", q, self.key(h)) / math.sqrt(self.cfg.embed_dim)
        logits = self.cfg.tanh_clip * torch.tanh(compat)
        return logits.masked_fill(~feasible, float("-inf"))


def masked_log_probs(model: UECAttentionNet, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
    """log π(·|obs) for a batch of flat observations (infeasible actions get -inf)."""
    obs_t = torch.as_tensor(np.asarray(obs, dtype=np.float32)) if not torch.is_tensor(obs) else obs
    return torch.log_softmax(model(obs_t), dim=-1)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
