"""The CoRaiS attention dispatcher (design/corais.md, paper eqs. 16-21).

Edge encoder and request encoder (separate parameters): a linear projection to ``d_h`` then ``layers``
blocks of [multi-head attention (8 heads) + skip + batch norm, feed-forward (one hidden layer, ReLU) +
skip + batch norm] (Kool et al. 2019). Context decoder: the max-pooled edge and request embeddings and
each request's own embedding form a query that attends (8 heads) over the edge embeddings -> h^c_i.
Policy: u_ij = C tanh((W_q h^c_i)^T (W_k h^e_j) / sqrt(d_h)), C = 10, softmax over the Q edges per request:
one-shot (non-autoregressive), log p(pi) = sum_i log p_{i, a_i}.

Ablations (paper's FC1/FC2/FC3): ``edge_mixing`` / ``request_mixing`` = "mlp" replaces that encoder's
attention sublayer by a per-element two-layer MLP of about the same size.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

EDGE_FEATURES = 10
REQUEST_FEATURES = 6


@dataclass
class ModelConfig:
    """Network sizes; the paper-sized preset is ``embed_dim=256, edge_layers=3, request_layers=3``."""

    embed_dim: int = 128
    edge_layers: int = 2
    request_layers: int = 2
    heads: int = 8
    ff_hidden: int = 512
    tanh_clip: float = 10.0
    edge_mixing: str = "attention"  # or "mlp" (FC1 ablation)
    request_mixing: str = "attention"  # or "mlp" (FC2; both "mlp" = FC3)
    derived_edge_inputs: bool = False  # append per-edge speeds and backlog time to the 10 observed features

    def __post_init__(self) -> None:
        if self.embed_dim % self.heads:
            raise ValueError(f"embed_dim={self.embed_dim} must be divisible by heads={self.heads}")
        for name in ("edge_mixing", "request_mixing"):
            if getattr(self, name) not in ("attention", "mlp"):
                raise ValueError(f"{name}={getattr(self, name)!r} is invalid: expected 'attention' or 'mlp'")

    def to_dict(self) -> dict:
        return asdict(self)


class _BatchNorm(nn.Module):
    """Batch norm over the feature axis of (B, n, d) tensors."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(dim, affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.reshape(-1, x.shape[-1])).reshape(x.shape)


class _EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, ff_hidden: int, mixing: str) -> None:
        super().__init__()
        self.mixing = mixing
        if mixing == "attention":
            self.mix = nn.MultiheadAttention(dim, heads, batch_first=True)
        else:  # same parameter count as the attention's 4 d x d projections
            self.mix = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.norm1 = _BatchNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff_hidden), nn.ReLU(), nn.Linear(ff_hidden, dim))
        self.norm2 = _BatchNorm(dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        mixed = self.mix(h, h, h, need_weights=False)[0] if self.mixing == "attention" else self.mix(h)
        h = self.norm1(h + mixed)
        return self.norm2(h + self.ff(h))


class _Encoder(nn.Module):
    def __init__(self, in_dim: int, cfg: ModelConfig, layers: int, mixing: str) -> None:
        super().__init__()
        self.project = nn.Linear(in_dim, cfg.embed_dim)
        self.layers = nn.ModuleList(
            [_EncoderLayer(cfg.embed_dim, cfg.heads, cfg.ff_hidden, mixing) for _ in range(layers)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.project(x)
        for layer in self.layers:
            h = layer(h)
        return h


#: Extra edge inputs computed inside the network when ``derived_edge_inputs`` is on.
DERIVED_EDGE_FEATURES = 5


def derived_edge_inputs(edges: torch.Tensor) -> torch.Tensor:
    """(B, Q, 5) functions of the observed edge features the dispatch cost depends on directly.

    1/m_j, a_j/m_j, b_j/m_j (time per unit of data / per request on one of m_j replicas), the time of
    a mean-sized request (a_j/2 + b_j)/m_j, and the backlog's compute time T^{L,cmp} + T^{I,cmp}.
    The observation stores a_j, b_j, m_j separately; the cost multiplies them, which a linear
    projection cannot, so without these the network has to learn the products first.
    """
    a, b, m = edges[..., 2], edges[..., 3], edges[..., 4].clamp_min(1.0)
    backlog = edges[..., 5] + edges[..., 7]  # workload order: L-cmp, I-trn, I-cmp, L-res, I-res
    return torch.stack([1.0 / m, a / m, b / m, (0.5 * a + b) / m, backlog], dim=-1)


class CoRaiSNet(nn.Module):
    """Maps edge features (B, Q, 10) and request features (B, Z, 6) to log-probabilities (B, Z, Q)."""

    def __init__(self, cfg: ModelConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or ModelConfig()
        d = self.cfg.embed_dim
        edge_in = EDGE_FEATURES + (DERIVED_EDGE_FEATURES if self.cfg.derived_edge_inputs else 0)
        self.edge_encoder = _Encoder(edge_in, self.cfg, self.cfg.edge_layers, self.cfg.edge_mixing)
        self.request_encoder = _Encoder(
            REQUEST_FEATURES, self.cfg, self.cfg.request_layers, self.cfg.request_mixing
        )
        self.context_query = nn.Linear(3 * d, d, bias=False)
        self.context_attention = nn.MultiheadAttention(d, self.cfg.heads, batch_first=True)
        self.policy_query = nn.Linear(d, d, bias=False)
        self.policy_key = nn.Linear(d, d, bias=False)
        self._init_uniform()

    def _init_uniform(self) -> None:
        """Uniform(-1/sqrt(d_in), 1/sqrt(d_in)) for every weight (paper; Kool et al.)."""
        for name, param in self.named_parameters():
            if "norm" in name:
                continue
            bound = 1.0 / math.sqrt(param.shape[-1])
            nn.init.uniform_(param, -bound, bound)

    def forward(self, edges: torch.Tensor, requests: torch.Tensor) -> torch.Tensor:
        if self.cfg.derived_edge_inputs:
            edges = torch.cat([edges, derived_edge_inputs(edges)], dim=-1)
        h_e = self.edge_encoder(edges)  # (B, Q, d)
        h_r = self.request_encoder(requests)  # (B, Z, d)
        z = h_r.shape[1]
        pooled = torch.cat([h_e.max(dim=1).values, h_r.max(dim=1).values], dim=-1)  # (B, 2d)
        query = self.context_query(torch.cat([pooled.unsqueeze(1).expand(-1, z, -1), h_r], dim=-1))
        h_c = self.context_attention(query, h_e, h_e, need_weights=False)[0]  # (B, Z, d)
        compat = self.policy_query(h_c) @ self.policy_key(h_e).transpose(1, 2) / math.sqrt(h_e.shape[-1])
        logits = self.cfg.tanh_clip * torch.tanh(compat)
        return torch.log_softmax(logits, dim=-1)


def count_parameters(model: nn.Module) -> int:
    """Number of learnable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
