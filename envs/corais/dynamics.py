"""The CoRaiS cost model, once: workload features (eqs. 1-5) and the response time R(pi) (eqs. 6-13, 22-23).

For a dispatch pi (request i -> region edge a_i), per region edge j ("local" means src(i) = j):

    C^L_j = T^{L,cmp}_j + sum_{local i -> j} f_j(d_i) / m_j
    C^I_j = T^{I,cmp}_j + sum_{non-local i -> j} f_j(d_i) / m_j
    S_j   = max(T^{I,trn}_j, max_{i -> j} mu d_i D(src(i), j))        (0 for local i: D = 0)
    O_j   = max(T^{L,res}_j, T^{I,res}_j, max_{i -> j} mu o_i D(j, pred(i)))
    T_j   = max(C^L_j, S_j) + C^I_j + O_j,        R(pi) = max_j T_j.

Everything a cost evaluation needs is precomputed per instance in ``CostTables`` ((Z, Q) arrays). The
batched evaluators take B stacked instances of one scale and S decisions per instance, actions of shape
(B, S, Z), and return R of shape (B, S) (and T of shape (B, S, Q)); ``response_times`` runs on numpy
arrays and ``response_times_torch`` on torch tensors. Both gather the per-request terms, reduce them
per edge (segment sum / segment max) and then apply the single formula in ``_edge_times``.
No gymnasium import here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from envs.corais.types import Backlog, CostTables, Instance

if TYPE_CHECKING:  # pragma: no cover
    import torch


def pairwise_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of ``a`` (..., n, 2) and ``b`` (..., m, 2): (..., n, m).

    Leading batch axes are folded into n for one einsum of the unbatched (n, m, 2) layout, so a batched
    call gives bit for bit the numbers of one call per instance.
    """
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    diff = np.empty((*lead, a.shape[-2], b.shape[-2], 2))
    for k in range(2):  # per coordinate: faster than one broadcast over a last axis of 2
        np.subtract(a[..., :, None, k], b[..., None, :, k], out=diff[..., k])
    flat = diff.reshape(-1, *diff.shape[-2:])
    return np.sqrt(np.einsum("nmk,nmk->nm", flat, flat)).reshape(diff.shape[:-1])


def gather_rows(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``table[..., index, :]`` per instance: rows of ``table`` (..., n, d) at ``index`` (..., z) -> (..., z, d)
    (``np.take_along_axis``, as one flat gather)."""
    if table.ndim == 2:
        return np.take(table, index, axis=0)  # (much faster than fancy indexing for row gathers)
    n, d = table.shape[-2:]
    base = (np.arange(math.prod(table.shape[:-2]), dtype=np.int64) * n).reshape((*index.shape[:-1], 1))
    return np.take(table.reshape(-1, d), base + index, axis=0)


def _segment_max_np(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=np.float64)
    np.maximum.at(out, index, values)
    return out


def workload_features(
    coords: np.ndarray,
    replicas: np.ndarray,
    coef_a: np.ndarray,
    coef_b: np.ndarray,
    mu: float,
    backlog: Backlog,
    owner: np.ndarray | None = None,
) -> np.ndarray:
    """The five workload features of each region edge, eqs. (1)-(5): (Q, 5), max over an empty set = 0.

    Columns: T^{L,cmp} (compute of the local backlog / m_j), T^{I,trn} (longest pending input transfer
    of the transferred-in backlog), T^{I,cmp}, T^{L,res}, T^{I,res} (longest result transfers).
    Batched: with ``owner`` (K,) the edge arrays have a leading axis B (coords (B, N, 2), the others
    (B, Q)), backlog request k belongs to instance ``owner[k]``, and the result is (B, Q, 5). Sums run
    over each (instance, edge) in backlog order either way, so every instance gets the same numbers.
    """
    if owner is None:
        zeros = np.zeros(np.shape(backlog.edge), dtype=np.int64)
        return workload_features(coords[None], replicas[None], coef_a[None], coef_b[None], mu, backlog, zeros)[0]
    b, n, q = coords.shape[0], coords.shape[1], replicas.shape[-1]
    e = owner * q + backlog.edge  # (instance, edge) segment of each backlog request
    xy, base = coords.reshape(b * n, 2), owner * n  # row base + i of xy: edge i of the request's instance
    compute = (coef_a.reshape(-1)[e] * backlog.d + coef_b.reshape(-1)[e]) / replicas.reshape(-1)[e]
    at_edge = np.take(xy, base + backlog.edge, axis=0)
    trn = mu * backlog.d * np.linalg.norm(np.take(xy, base + backlog.src, axis=0) - at_edge, axis=1)
    res = mu * backlog.o * np.linalg.norm(at_edge - np.take(xy, base + backlog.pred, axis=0), axis=1)
    loc = ~backlog.transferred
    tin = backlog.transferred
    size = b * q
    w = np.zeros((size, 5), dtype=np.float64)
    w[:, 0] = np.bincount(e[loc], weights=compute[loc], minlength=size)
    w[:, 1] = _segment_max_np(e[tin], trn[tin], size)
    w[:, 2] = np.bincount(e[tin], weights=compute[tin], minlength=size)
    w[:, 3] = _segment_max_np(e[loc], res[loc], size)
    w[:, 4] = _segment_max_np(e[tin], res[tin], size)
    return w.reshape(b, q, 5)


def cost_tables(
    coords: np.ndarray,
    replicas: np.ndarray,
    coef_a: np.ndarray,
    coef_b: np.ndarray,
    mu: float,
    workload: np.ndarray,
    req_src: np.ndarray,
    req_pred: np.ndarray,
    req_d: np.ndarray,
    req_o: np.ndarray,
) -> CostTables:
    """Precompute the (Z, Q) per-request, per-edge terms of the cost (once per instance).

    Leading batch axes are allowed on every array (coords (..., N, 2), edge arrays (..., Q), request
    arrays (..., Z)): the tables are then (..., Z, Q), each instance's equal to its unbatched tables.
    """
    q = replicas.shape[-1]
    region = coords[..., :q, :]
    cmp = (req_d[..., :, None] * coef_a[..., None, :] + coef_b[..., None, :]) / replicas[..., None, :]
    src = req_src.astype(np.int64)
    distance = pairwise_distances(coords, region)  # (..., N, Q): D(i, j), gathered per request below
    trn = mu * req_d[..., :, None] * gather_rows(distance, src)
    trn.reshape(-1)[np.arange(src.size, dtype=np.int64) * q + src.reshape(-1)] = 0.0  # exactly 0 when local
    res = mu * req_o[..., :, None] * gather_rows(distance, req_pred.astype(np.int64))
    return CostTables(cmp=cmp, trn=trn, res=res, src=src, workload=workload)


def _edge_times(xp: Any, workload: Any, local_cmp: Any, in_cmp: Any, trn_max: Any, res_max: Any) -> Any:
    """T_j = max(C^L_j, S_j) + C^I_j + O_j from the per-edge aggregates of the new requests.

    ``workload`` (..., Q, 5) broadcasts against the aggregates (..., Q); ``xp`` is numpy or torch.
    """
    c_local = workload[..., 0] + local_cmp
    s_in = xp.maximum(workload[..., 1], trn_max)
    c_in = workload[..., 2] + in_cmp
    o_out = xp.maximum(xp.maximum(workload[..., 3], workload[..., 4]), res_max)
    return xp.maximum(c_local, s_in) + c_in + o_out


@numba.njit(cache=True)
def edge_time_scalar(workload: np.ndarray, j: int, local_cmp: float, in_cmp: float, trn_max: float,
                     res_max: float) -> float:
    """``_edge_times`` for one edge ``j`` in compiled code (the searches' kernels, offline.corais.search):
    the same formula, term for term and in the same order, so it returns the same float (tested)."""
    c_local = workload[j, 0] + local_cmp
    s_in = max(workload[j, 1], trn_max)
    c_in = workload[j, 2] + in_cmp
    o_out = max(max(workload[j, 3], workload[j, 4]), res_max)
    return max(c_local, s_in) + c_in + o_out


def edge_times_from_aggregates(
    workload: np.ndarray, local_cmp: np.ndarray, in_cmp: np.ndarray, trn_max: np.ndarray, res_max: np.ndarray
) -> np.ndarray:
    """T_j from per-edge aggregates of the new requests (numpy; broadcasts like ``_edge_times``).

    ``local_cmp`` / ``in_cmp``: summed compute of the local / transferred-in new requests on each edge;
    ``trn_max`` / ``res_max``: their longest input / result transfer (0 for none). The incremental
    heuristics (``offline.corais.greedy``) call this, so they use the same formula as ``response_times``.
    """
    return _edge_times(np, workload, local_cmp, in_cmp, trn_max, res_max)


def backlog_times(workload: np.ndarray) -> np.ndarray:
    """T_j with no new request (..., Q): what each edge needs for its backlog alone."""
    zeros = np.zeros(np.shape(workload)[:-1])
    return _edge_times(np, np.asarray(workload), zeros, zeros, zeros, zeros)


def backlog_bound(instance_or_tables: Instance | CostTables) -> float:
    """The backlog-only lower bound max_j T_j(no new request) <= R(pi) for every dispatch pi.

    Every term of T_j only grows when requests are added, so no dispatch finishes before the slowest
    backlog. An instance whose optimum equals this bound is *trivial*: any dispatch that keeps every edge
    below the straggler is optimal.
    """
    tables = instance_or_tables.tables if isinstance(instance_or_tables, Instance) else instance_or_tables
    return float(backlog_times(tables.workload).max())


def stack_tables(tables: Sequence[CostTables]) -> CostTables:
    """Stack the tables of several instances of one scale along a new leading batch axis."""
    return CostTables(
        cmp=np.stack([t.cmp for t in tables]),
        trn=np.stack([t.trn for t in tables]),
        res=np.stack([t.res for t in tables]),
        src=np.stack([t.src for t in tables]),
        workload=np.stack([t.workload for t in tables]),
    )


def response_times(tables: CostTables, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numpy batched cost: tables with shapes (B, Z, Q) (or unbatched (Z, Q)), actions (B, S, Z) ints.

    Unbatched tables take actions (S, Z) or (Z,). Returns (R, T): R has the actions' shape without the
    last axis, T has it with Q in place of Z.
    """
    cmp = np.asarray(tables.cmp)
    acts = np.asarray(actions, dtype=np.int64)
    if cmp.ndim == 2:  # one instance: add the batch axis
        lead = acts.shape[:-1]
        one = stack_tables([tables])
        r, t = response_times(one, acts.reshape(1, -1, acts.shape[-1]))
        q = cmp.shape[1]
        return r.reshape(lead), t.reshape((*lead, q))
    b, z, q = cmp.shape
    if acts.ndim != 3 or acts.shape[0] != b or acts.shape[2] != z:
        raise ValueError(f"actions must have shape (B={b}, S, Z={z}), got {acts.shape}")
    s = acts.shape[1]
    # gather the chosen per-request terms: flat index into the (B * Z * Q) tables
    idx = ((np.arange(b, dtype=np.int64) * (z * q))[:, None, None]
           + (np.arange(z, dtype=np.int64) * q)[None, None, :] + acts).ravel()
    cmp_sel = cmp.ravel()[idx]
    trn_sel = np.asarray(tables.trn).ravel()[idx]
    res_sel = np.asarray(tables.res).ravel()[idx]
    is_local = (acts == np.asarray(tables.src)[:, None, :]).ravel()
    # segment reductions per (instance, decision, edge); compute sums split local / non-local at once
    seg = ((np.arange(b * s, dtype=np.int64) * q).reshape(b, s, 1) + acts).ravel()
    size = b * s * q
    sums = np.bincount(seg * 2 + is_local, weights=cmp_sel, minlength=2 * size).reshape(b, s, q, 2)
    trn_max = _segment_max_np(seg, trn_sel, size).reshape(b, s, q)
    res_max = _segment_max_np(seg, res_sel, size).reshape(b, s, q)
    t = _edge_times(np, np.asarray(tables.workload)[:, None, :, :], sums[..., 1], sums[..., 0], trn_max, res_max)
    return t.max(axis=-1), t


def response_times_torch(
    cmp: torch.Tensor,
    trn: torch.Tensor,
    res: torch.Tensor,
    src: torch.Tensor,
    workload: torch.Tensor,
    actions: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Torch batched cost (same formula as ``response_times``): tables (B, Z, Q), src (B, Z),
    workload (B, Q, 5), actions (B, S, Z) int64 -> (R (B, S), T (B, S, Q)). No gradient flows.
    """
    import torch

    b, z, q = cmp.shape
    s = actions.shape[1]
    idx = actions.unsqueeze(-1)

    def pick(table: torch.Tensor) -> torch.Tensor:
        return torch.gather(table.unsqueeze(1).expand(b, s, z, q), 3, idx).squeeze(-1)

    with torch.no_grad():
        cmp_sel, trn_sel, res_sel = pick(cmp), pick(trn), pick(res)
        is_local = actions == src.unsqueeze(1)
        zeros = torch.zeros(b, s, q, dtype=cmp.dtype, device=cmp.device)
        local_cmp = zeros.scatter_add(2, actions, torch.where(is_local, cmp_sel, 0.0))
        in_cmp = zeros.scatter_add(2, actions, torch.where(is_local, 0.0, cmp_sel))
        trn_max = zeros.scatter_reduce(2, actions, trn_sel, reduce="amax", include_self=True)
        res_max = zeros.scatter_reduce(2, actions, res_sel, reduce="amax", include_self=True)
        t = _edge_times(torch, workload.unsqueeze(1), local_cmp, in_cmp, trn_max, res_max)
        return t.amax(dim=-1), t


def tables_to_torch(tables: CostTables, device: str = "cpu", dtype: Any = None) -> tuple[Any, ...]:
    """Batched numpy tables -> the tensors ``response_times_torch`` takes: (cmp, trn, res, src, workload)."""
    import torch

    dtype = dtype or torch.float64
    to = lambda x: torch.as_tensor(np.asarray(x), dtype=dtype, device=device)  # noqa: E731
    return (
        to(tables.cmp),
        to(tables.trn),
        to(tables.res),
        torch.as_tensor(np.asarray(tables.src), dtype=torch.int64, device=device),
        to(tables.workload),
    )


def dispatch_cost(instance: Instance, actions: np.ndarray) -> np.ndarray:
    """R(pi) of one instance for actions of shape (..., Z): returns shape (...)."""
    return response_times(instance.tables, actions)[0]


def edge_times(instance: Instance, action: np.ndarray) -> np.ndarray:
    """Per-edge response times T_j (Q,) of one dispatch (Z,) on one instance."""
    return response_times(instance.tables, np.asarray(action)[None, :])[1][0]
