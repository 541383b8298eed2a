"""Typed containers for CoRaiS-v0: the instance the generator draws and its precomputed cost tables.

Indexing convention: the N edges of the service subsystem are numbered 0..N-1 and the Q edges of the
control region (the only ones that execute requests) are the first Q of them, 0..Q-1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Names of the five workload features (eqs. 1-5), in the column order of ``Instance.workload``.
WORKLOAD_FEATURES: tuple[str, ...] = ("T_L_cmp", "T_I_trn", "T_I_cmp", "T_L_res", "T_I_res")


@dataclass(frozen=True)
class Backlog:
    """Requests already queued at the region edges (flat arrays, one entry per backlog request).

    ``edge``: the region edge holding it; ``transferred``: False for Q^L (runs locally), True for Q^I
    (transferred in from ``src``); ``src`` is the edge itself for Q^L requests.
    """

    edge: np.ndarray  # (K,) int64 in [Q]
    transferred: np.ndarray  # (K,) bool
    src: np.ndarray  # (K,) int64 in [Q]
    pred: np.ndarray  # (K,) int64 in [N]
    d: np.ndarray  # (K,) float64 input size
    o: np.ndarray  # (K,) float64 output size


@dataclass(frozen=True)
class Instance:
    """One dispatch problem of scale (N, Q, Z).

    Edge arrays cover all N edges for coordinates and the Q region edges for service parameters.
    ``workload`` (Q, 5) holds the five features of eqs. (1)-(5) computed from ``backlog``.
    The (Z, Q) ``tables`` are what every cost evaluation reads (see ``CostTables``).
    """

    num_edges: int  # N
    num_region: int  # Q
    num_requests: int  # Z
    coords: np.ndarray  # (N, 2) edge coordinates
    replicas: np.ndarray  # (Q,) m_j (float64, >= 1)
    coef_a: np.ndarray  # (Q,) slope a_j of f_j(d) = a_j d + b_j
    coef_b: np.ndarray  # (Q,) intercept b_j
    mu: float  # transmission time per unit data per unit distance
    backlog: Backlog
    workload: np.ndarray  # (Q, 5) eqs. (1)-(5), columns WORKLOAD_FEATURES
    req_src: np.ndarray  # (Z,) int64 in [Q], source edge of each new request
    req_pred: np.ndarray  # (Z,) int64 in [N], predicted edge of the client at completion
    req_d: np.ndarray  # (Z,) input size
    req_o: np.ndarray  # (Z,) output size
    tables: CostTables = field(repr=False)

    @property
    def scale(self) -> tuple[int, int, int]:
        """(N, Q, Z)."""
        return (self.num_edges, self.num_region, self.num_requests)


@dataclass(frozen=True)
class CostTables:
    """Per-instance (Z, Q) tables from which the cost of any dispatch is assembled.

    ``cmp[i, j]`` = f_j(d_i) / m_j (compute time of request i on edge j, replicas averaged);
    ``trn[i, j]`` = mu d_i D(src(i), j) (input transfer, 0 when j = src(i));
    ``res[i, j]`` = mu o_i D(j, pred(i)) (result transfer); ``src[i]`` = source edge (request i is
    "local" on edge j iff src[i] == j). Leading batch axes are allowed (stacked instances of one scale).
    """

    cmp: np.ndarray  # (Z, Q)
    trn: np.ndarray  # (Z, Q)
    res: np.ndarray  # (Z, Q)
    src: np.ndarray  # (Z,) int64
    workload: np.ndarray  # (Q, 5), same as Instance.workload
