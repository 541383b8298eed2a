"""CoRaiS-v0 non-learning policies and evaluation: the exact MILP (HiGHS), Local, Predicted, Random(k).

Registered for ``CoRaiS-v0`` (``offline.registry``):

| name                                   | policy                                                        |
|----------------------------------------|---------------------------------------------------------------|
| exact (kwarg ``time_limit``, def. 10)  | MILP of eqs. (6)-(15) solved by HiGHS under a time limit      |
| exact_0.02s, exact_0.05s, exact_1s, exact_5s, exact_10s | the same with the paper's time limits        |
| local                                  | every request at its source edge                              |
| predicted                              | at its predicted edge if that is in the region, else source   |
| random1, random100, random500, random1k | best of k uniform dispatches (kwarg ``samples``)             |
| corais_greedy, corais_10, corais_100, corais_500, corais_1k | the attention dispatcher (agents.corais), |
|                                        | greedy or best of K samples, from ``run_dir`` or the shipped checkpoint |

All of them read the instance (``env.unwrapped.instance``) and act through ``env.step``.
``evaluate_policies`` (contract 3) reports the paper's Gap-M: the mean over instances of
R(policy) / R(exact solver with a 10 s limit) (``exact_time_limit`` changes the limit, e.g. for CPU tests).
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from envs.corais.dynamics import dispatch_cost, response_times
from envs.corais.types import Instance
from offline.registry import register_policy
from offline.stats import mean_ci95

ENV_ID = "CoRaiS-v0"


# ----------------------------------------------------------------------------------------------------
# exact MILP
@dataclass
class SolveResult:
    """Outcome of one MILP solve: the dispatch (None without an incumbent) and what HiGHS proved."""

    action: np.ndarray | None  # (Z,) int64
    cost: float  # R(action) from envs.corais.dynamics (nan without an incumbent)
    has_incumbent: bool
    optimal: bool  # optimality proven (within mip_rel_gap)
    objective: float  # the MILP objective z (nan without an incumbent)
    mip_gap: float
    seconds: float
    message: str


def build_milp(instance: Instance) -> tuple[np.ndarray, np.ndarray, Bounds, list[LinearConstraint]]:
    """The MILP (c, integrality, bounds, constraints) of min_pi R(pi).

    Variables: p_ij (Z*Q binaries, index i*Q + j), K_j, S_j, O_j (Q each), z. Constraints:
    sum_j p_ij = 1; K_j >= T^{L,cmp}_j + sum_{local i} cmp_ij p_ij; K_j >= S_j;
    z >= K_j + T^{I,cmp}_j + sum_{non-local i} cmp_ij p_ij + O_j; S_j >= trn_ij p_ij; O_j >= res_ij p_ij;
    bounds S_j >= T^{I,trn}_j, O_j >= max(T^{L,res}_j, T^{I,res}_j). Exact because every max is only
    bounded from below and the objective pushes it down.
    """
    tab = instance.tables
    z_n, q = tab.cmp.shape
    n_p = z_n * q
    k0, s0, o0, zi = n_p, n_p + q, n_p + 2 * q, n_p + 3 * q
    n_var = zi + 1
    pid = np.arange(n_p).reshape(z_n, q)
    local = tab.src[:, None] == np.arange(q)[None, :]
    edges = np.arange(q)
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0

    def add(row_cols: np.ndarray, row_vals: np.ndarray, row_ids: np.ndarray) -> None:
        rows.append(row_ids)
        cols.append(row_cols)
        vals.append(row_vals)

    # (14) assignment
    add(pid.ravel(), np.ones(n_p), np.repeat(np.arange(z_n), q) + r)
    lo.append(np.ones(z_n))
    hi.append(np.ones(z_n))
    r += z_n
    # K_j - sum_local cmp p >= T^{L,cmp}
    ii, jj = np.nonzero(local)
    add(k0 + edges, np.ones(q), r + edges)
    add(pid[ii, jj], -tab.cmp[ii, jj], r + jj)
    lo.append(tab.workload[:, 0])
    hi.append(np.full(q, np.inf))
    r += q
    # K_j - S_j >= 0
    add(k0 + edges, np.ones(q), r + edges)
    add(s0 + edges, -np.ones(q), r + edges)
    lo.append(np.zeros(q))
    hi.append(np.full(q, np.inf))
    r += q
    # z - K_j - O_j - sum_nonlocal cmp p >= T^{I,cmp}
    ii, jj = np.nonzero(~local)
    add(np.full(q, zi), np.ones(q), r + edges)
    add(k0 + edges, -np.ones(q), r + edges)
    add(o0 + edges, -np.ones(q), r + edges)
    add(pid[ii, jj], -tab.cmp[ii, jj], r + jj)
    lo.append(tab.workload[:, 2])
    hi.append(np.full(q, np.inf))
    r += q
    # S_j - trn_ij p_ij >= 0 and O_j - res_ij p_ij >= 0 (only where the term is positive)
    for base, table in ((s0, tab.trn), (o0, tab.res)):
        ii, jj = np.nonzero(table > 0)
        m = ii.size
        ids = r + np.arange(m)
        add(base + jj, np.ones(m), ids)
        add(pid[ii, jj], -table[ii, jj], ids)
        lo.append(np.zeros(m))
        hi.append(np.full(m, np.inf))
        r += m
    a = sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, n_var)
    )
    c = np.zeros(n_var)
    c[zi] = 1.0
    integrality = np.zeros(n_var)
    integrality[:n_p] = 1
    lb = np.zeros(n_var)
    ub = np.full(n_var, np.inf)
    ub[:n_p] = 1.0
    lb[s0:o0] = tab.workload[:, 1]
    lb[o0:zi] = np.maximum(tab.workload[:, 3], tab.workload[:, 4])
    return c, integrality, Bounds(lb, ub), [LinearConstraint(a, np.concatenate(lo), np.concatenate(hi))]


def solve_exact(
    instance: Instance,
    *,
    time_limit: float = 10.0,
    mip_rel_gap: float = 1e-4,
    require_incumbent: bool = False,
) -> SolveResult:
    """Solve the dispatch MILP with HiGHS (scipy.optimize.milp) within ``time_limit`` seconds.

    Returns the incumbent (if any) with its cost from the one cost model, whether optimality was
    proven, and the solve time. ``require_incumbent=True`` raises RuntimeError when HiGHS found no
    feasible dispatch in time (instead of returning ``has_incumbent=False``).
    """
    if not (time_limit > 0):
        raise ValueError(f"time_limit={time_limit!r} is invalid: expected a number of seconds > 0")
    start = time.perf_counter()
    c, integrality, bounds, constraints = build_milp(instance)
    res = milp(
        c,
        integrality=integrality,
        bounds=bounds,
        constraints=constraints,
        options={"time_limit": float(time_limit), "mip_rel_gap": float(mip_rel_gap), "presolve": True},
    )
    seconds = time.perf_counter() - start
    z_n, q = instance.tables.cmp.shape
    if res.x is None or res.status not in (0, 1):
        if res.status in (2, 3):  # infeasible/unbounded cannot happen for a valid instance
            raise RuntimeError(f"CoRaiS MILP at scale {instance.scale}: HiGHS status {res.status}: {res.message}")
        if require_incumbent:
            raise RuntimeError(
                f"CoRaiS MILP at scale {instance.scale}: no feasible dispatch within {time_limit} s "
                f"(HiGHS: {res.message})"
            )
        return SolveResult(None, float("nan"), False, False, float("nan"), float("inf"), seconds, res.message)
    action = np.argmax(res.x[: z_n * q].reshape(z_n, q), axis=1).astype(np.int64)
    cost = float(dispatch_cost(instance, action))
    gap = float(getattr(res, "mip_gap", np.nan) if res.status == 1 else getattr(res, "mip_gap", 0.0))
    return SolveResult(action, cost, True, res.status == 0, float(res.fun), gap, seconds, res.message)


# ----------------------------------------------------------------------------------------------------
# heuristics
def local_dispatch(instance: Instance) -> np.ndarray:
    """Local: every request at its source edge."""
    return instance.req_src.copy()


def predicted_dispatch(instance: Instance) -> np.ndarray:
    """Predicted: at the predicted edge when it is a region edge, else at the source edge."""
    return np.where(instance.req_pred < instance.num_region, instance.req_pred, instance.req_src).astype(np.int64)


def best_of_random(instance: Instance, samples: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Random(k): the best of ``samples`` uniform dispatches (evaluated in memory-bounded chunks)."""
    z, q = instance.num_requests, instance.num_region
    chunk = max(1, min(samples, 2_000_000 // max(z, 1)))
    best_cost, best = np.inf, None
    done = 0
    while done < samples:
        k = min(chunk, samples - done)
        acts = rng.integers(0, q, size=(k, z))
        costs = dispatch_cost(instance, acts)
        i = int(np.argmin(costs))
        if costs[i] < best_cost:
            best_cost, best = float(costs[i]), acts[i].copy()
        done += k
    assert best is not None
    return best, best_cost


class _InstancePolicy:
    """Base for policies that read ``env.unwrapped.instance`` (set in ``reset``)."""

    name = "corais_base"

    def __init__(self) -> None:
        self._env: gym.Env | None = None
        self._rng = np.random.default_rng()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._env = env
        self._rng = np.random.default_rng(seed)

    @property
    def instance(self) -> Instance:
        if self._env is None or self._env.unwrapped.instance is None:
            raise RuntimeError(f"{self.name}: call reset(env) after env.reset() before act()")
        return self._env.unwrapped.instance


class LocalPolicy(_InstancePolicy):
    """Every request at its source edge (reads the instance)."""

    name = "local"

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        return local_dispatch(self.instance)


class PredictedPolicy(_InstancePolicy):
    """Every request at its predicted edge if that is a region edge, else at its source (reads the instance)."""

    name = "predicted"

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        return predicted_dispatch(self.instance)


class RandomBestPolicy(_InstancePolicy):
    """Random(k): best of k uniform dispatches under the cost model (reads the instance)."""

    def __init__(self, samples: int) -> None:
        super().__init__()
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
            raise ValueError(f"samples={samples!r} is invalid: expected an integer >= 1")
        self.samples = int(samples)
        self.name = f"random{samples}"

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        return best_of_random(self.instance, self.samples, self._rng)[0]


class ExactPolicy(_InstancePolicy):
    """The MILP solved by HiGHS within ``time_limit`` s (reads the instance).

    Without an incumbent it raises (``require_incumbent=True``) or plays the Local dispatch and sets
    ``last_solve.has_incumbent = False`` so evaluations count the instance as unsolved.
    """

    def __init__(self, time_limit: float = 10.0, mip_rel_gap: float = 1e-4, require_incumbent: bool = False):
        super().__init__()
        if not isinstance(time_limit, (int, float)) or isinstance(time_limit, bool) or not time_limit > 0:
            raise ValueError(f"time_limit={time_limit!r} is invalid: expected a number of seconds > 0")
        self.time_limit = float(time_limit)
        self.mip_rel_gap = float(mip_rel_gap)
        self.require_incumbent = bool(require_incumbent)
        self.name = f"exact_{self.time_limit:g}s"
        self.last_solve: SolveResult | None = None

    @property
    def solved(self) -> bool:
        """Whether the last solve found a feasible dispatch."""
        return self.last_solve is not None and self.last_solve.has_incumbent

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        self.last_solve = solve_exact(
            self.instance,
            time_limit=self.time_limit,
            mip_rel_gap=self.mip_rel_gap,
            require_incumbent=self.require_incumbent,
        )
        if self.last_solve.action is None:
            return local_dispatch(self.instance)
        return self.last_solve.action


@register_policy(ENV_ID, "exact")
def _make_exact(env: gym.Env, time_limit: float = 10.0, **kwargs: Any) -> ExactPolicy:
    return ExactPolicy(time_limit=time_limit, **kwargs)


def _register_exact(limit: float) -> None:
    @register_policy(ENV_ID, f"exact_{limit:g}s")
    def factory(env: gym.Env, **kwargs: Any) -> ExactPolicy:
        return ExactPolicy(time_limit=limit, **kwargs)


for _limit in (0.02, 0.05, 1.0, 5.0, 10.0):
    _register_exact(_limit)


@register_policy(ENV_ID, "local")
def _make_local(env: gym.Env) -> LocalPolicy:
    return LocalPolicy()


@register_policy(ENV_ID, "predicted")
def _make_predicted(env: gym.Env) -> PredictedPolicy:
    return PredictedPolicy()


def _register_random(name: str, samples: int) -> None:
    @register_policy(ENV_ID, name)
    def factory(env: gym.Env, samples: int = samples) -> RandomBestPolicy:
        return RandomBestPolicy(samples)


for _name, _k in (("random1", 1), ("random100", 100), ("random500", 500), ("random1k", 1000)):
    _register_random(_name, _k)


# ----------------------------------------------------------------------------------------------------
# evaluation (contract 3)

#: What `python evaluate.py env=corais-v0` runs (Table III's rows at the env's scale; ~1 min on 2 cores).
DEFAULT_EVALUATION: dict[str, Any] = {
    "policies": ["exact", "local", "predicted", "random1", "random100", "random1k", "corais_greedy", "corais_100", "corais_1k"],
    "instances": 10,
    "episodes": 1,
}


def evaluate_policies(
    env_kwargs: dict,
    policies: list[str],
    *,
    instances: int,
    episodes: int,
    seed: int,
    out_dir: Path,
    progress: bool = True,
    exact_time_limit: float = 10.0,
    reference: str = "exact",
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
) -> list[dict]:
    """Run every policy on the same instances (reset seeds seed, seed+1, ...) and summarise.

    Each of the ``instances`` instances is dispatched ``episodes`` times per policy (policy seeds
    differ per episode, so randomised policies are re-drawn; the instance is the same). Gap = R(policy) /
    R(reference) per instance; the reference is the exact MILP with ``exact_time_limit`` seconds (the
    paper's Gurobi(10s); lower it for quick CPU runs) or, with ``reference="corais_1k"`` (Table V), any
    name in ``policies``. Instances where the reference has no incumbent are left out of every gap;
    a time-limited exact policy's gap/cost/time are over the instances it solved (``solved_share``).
    Writes ``out_dir/corais_per_instance.csv`` and ``out_dir/corais_per_edge.csv`` (mean requests and
    response time per edge and policy: Table VI's EReqN / LCost). ``policy_kwargs`` maps a name to factory kwargs
    (e.g. ``{"corais_greedy": {"run_dir": "runs/..."}}``).
    """
    from offline.protocol import run_episode
    from offline.registry import resolve_policy

    if instances < 1 or episodes < 1:
        raise ValueError(f"instances={instances}, episodes={episodes}: both must be >= 1")
    if reference != "exact" and reference not in policies:
        raise ValueError(f"reference={reference!r} must be 'exact' or one of policies={policies}")
    policy_kwargs = dict(policy_kwargs or {})
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = gym.make(ENV_ID, **dict(env_kwargs))
    made = {name: resolve_policy(ENV_ID, name, env, **policy_kwargs.get(name, {})) for name in policies}
    reference_policy = ExactPolicy(time_limit=exact_time_limit) if reference == "exact" else made[reference]

    records: list[dict[str, Any]] = []
    per_edge: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    iterator: Any = range(instances)
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, desc=f"CoRaiS {env.unwrapped.scenario.scale}", unit="inst")
    for k in iterator:
        inst_seed = seed + k
        # the reference (solved once per instance; reused for an identical exact policy in the list)
        ref_cost = np.nan
        cached: dict[str, tuple[dict[str, Any], float, bool]] = {}
        if reference == "exact":
            res = run_episode(env, reference_policy, seed=inst_seed, time_decisions=True)
            ok = reference_policy.solved
            ref_cost = res.final_info["cost"] if ok else np.nan
            cached[reference_policy.name] = (res.final_info, res.decision_seconds[0], ok)
        for name, policy in made.items():
            for e in range(episodes):
                pol_name = getattr(policy, "name", name)
                if e == 0 and isinstance(policy, ExactPolicy) and pol_name in cached:
                    final, secs, ok = cached[pol_name]
                else:
                    res = run_episode(
                        env, policy, seed=inst_seed, policy_seed=inst_seed * 1000 + e, time_decisions=True
                    )
                    final, secs = res.final_info, res.decision_seconds[0]
                    ok = policy.solved if isinstance(policy, ExactPolicy) else True
                cost = final["cost"]
                per_edge.setdefault(name, []).append(
                    (final["requests_per_edge"].astype(float), final["edge_times"], final["data_per_edge"])
                )
                records.append(
                    {"policy": name, "instance": k, "seed": inst_seed, "episode": e, "cost": cost,
                     "seconds": secs, "solved": ok}
                )
                if reference != "exact" and name == reference and e == 0:
                    ref_cost = cost
        for rec in records:
            if rec["instance"] == k:
                rec["reference_cost"] = ref_cost
                rec["gap"] = rec["cost"] / ref_cost if rec["solved"] and np.isfinite(ref_cost) else np.nan

    with open(out_dir / "corais_per_instance.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)

    with open(out_dir / "corais_per_edge.csv", "w", newline="") as fh:  # Table VI's EReqN and LCost
        writer = csv.writer(fh)
        writer.writerow(["policy", "edge", "requests_mean", "edge_time_mean", "data_mean"])
        for name, triples in per_edge.items():
            counts, times, data = (np.mean([t[k] for t in triples], axis=0) for k in range(3))
            for j in range(counts.size):
                writer.writerow([name, j, f"{counts[j]:.4f}", f"{times[j]:.6f}", f"{data[j]:.4f}"])

    rows = []
    for name in policies:
        recs = [r for r in records if r["policy"] == name]
        solved = [r for r in recs if r["solved"]]
        gaps = [r["gap"] for r in solved if np.isfinite(r["gap"])]
        gap_mean, gap_ci = mean_ci95(gaps) if gaps else (float("nan"), float("nan"))
        times = np.array([r["seconds"] for r in solved]) if solved else np.array([np.nan])
        rows.append(
            {
                "policy": name,
                "gap_mean": gap_mean,
                "gap_ci95": gap_ci,
                "cost_mean": float(np.mean([r["cost"] for r in solved])) if solved else float("nan"),
                "time_mean_s": float(np.mean(times)),
                "time_std_s": float(np.std(times)),
                "solved_share": len(solved) / len(recs),
            }
        )
    env.close()
    return rows


def reference_costs(instance: Instance, actions: np.ndarray) -> np.ndarray:
    """Costs of several dispatches (S, Z) on one instance (a thin alias used by the benchmarks/tests)."""
    return response_times(instance.tables, actions)[0]
