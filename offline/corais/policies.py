"""CoRaiS non-learning policies: the exact MILP (``offline.corais.milp``), Local, Predicted, Random(k),
list_greedy and list_greedy_ls (``offline.corais.greedy``), and ours: the anytime iterated local search
(``offline.corais.search``; parameters from tuned.yaml) with a wall-clock budget (``ils_50ms`` / ``ils_100ms`` /
``ils_1s`` / ``ils_5s`` and the online references ``ils_30s`` / ``ils_60s``), its load-independent twins with a
fixed kick budget (``ils_it6`` / ``ils_it18`` / ``ils_it260`` / ``ils_it1600``, :data:`ILS_TWINS`) and ``ils``
(100 kicks, for tests), and ``milp_1s`` / ``milp_10s`` / ``milp_30s`` / ``milp_60s``, the time-limited MILP under
names that say they are best-found incumbents, not optima.

A wall-clock budget makes a row's answer depend on the machine's load (a busy machine does fewer kicks); a
twin's answer is a deterministic function of (instance, seed), so its rank does not. Each twin's kick budget
was calibrated so that its mean CPU time over the tuning instances 900..907 at the ladder's main scale
(10, 5, 100) matches its wall-clock sibling on an unloaded core (process time, so the calibration itself did
not depend on the load: 2026-11-29, x86_64, 2 cores). At other scales a kick costs a different time: about
half at (20, 10, 100), and at (50, 20, 400) the first descent alone takes ~1 s and a kick ~0.5-1.2 s, so
``ils_it6`` takes ~8 s of CPU there (held-out instances 100..109), where ``ils_1s`` stops after about one descent.

They read the instance (``env.unwrapped.instance``) and act through ``env.step``; importing this module
registers them for ``CoRaiS-v0`` and ``CoRaiS-v1`` (``offline.registry``, names in ``offline.corais``'s
docstring).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.corais.dynamics import dispatch_cost, response_times
from envs.corais.types import Instance
from offline.corais.bounds import record_incumbent, solve_milp_cached
from offline.corais.greedy import list_greedy, list_greedy_ls
from offline.corais.milp import SolveResult, solve_exact
from offline.corais.search import DEFAULT_SEARCH, iterated_local_search
from offline.ladder_spec import tuned_params
from offline.registry import register_policy

ENV_ID = "CoRaiS-v0"
#: Every CoRaiS version; each gets the same policies (versions differ only in the instance distribution).
ENV_IDS: tuple[str, ...] = ("CoRaiS-v0", "CoRaiS-v1")
#: The ILS entry of tuned.yaml: every budget variant shares the parameters tuned for ``ils_1s``.
ILS_TUNED_ENTRY = "ils_1s"
#: Registered anytime-search variants: name -> wall-clock budget in seconds per dispatch.
ILS_BUDGETS: dict[str, float] = {"ils_50ms": 0.05, "ils_100ms": 0.1, "ils_1s": 1.0, "ils_5s": 5.0,
                                 "ils_30s": 30.0, "ils_60s": 60.0}
#: Load-independent twins: name -> (kicks, the wall-clock variant it mirrors at (10, 5, 100); module docstring).
ILS_TWINS: dict[str, tuple[int, str]] = {"ils_it6": (6, "ils_50ms"), "ils_it18": (18, "ils_100ms"),
                                         "ils_it260": (260, "ils_1s"), "ils_it1600": (1600, "ils_5s")}
#: The time-limited MILP rows, named as best-found incumbents: name -> HiGHS time limit in seconds.
MILP_LIMITS: dict[str, float] = {"milp_1s": 1.0, "milp_10s": 10.0, "milp_30s": 30.0, "milp_60s": 60.0}


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


class MilpPolicy(ExactPolicy):
    """``ExactPolicy`` whose solve is shared, per instance and time limit, with ``offline.corais.bounds``
    (``solve_milp_cached``), so a ladder row and the instance's dual bound come from one HiGHS run. Its
    answer is the incumbent at the time limit: optimal only where ``last_solve.optimal`` says HiGHS proved
    it (reads the instance)."""

    def __init__(self, name: str, time_limit: float, mip_rel_gap: float = 1e-4) -> None:
        super().__init__(time_limit=time_limit, mip_rel_gap=mip_rel_gap)
        self.name = name

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        self.last_solve = solve_milp_cached(self.instance, self.time_limit, self.mip_rel_gap)
        if self.last_solve.action is None:
            return local_dispatch(self.instance)
        return self.last_solve.action


class SearchPolicy(_InstancePolicy):
    """Ours (not from the paper): the anytime iterated local search of ``offline.corais.search`` (list
    greedy start, move/swap descent, random kicks) with a wall-clock budget ``time_limit`` and/or a kick
    budget ``max_iterations`` (deterministic given the policy seed when ``time_limit`` is None). Records
    its cost for ``offline.corais.bounds``' best-known row (reads the instance)."""

    def __init__(self, name: str, time_limit: float | None, max_iterations: int | None, **params: Any) -> None:
        super().__init__()
        if time_limit is None and max_iterations is None:
            raise ValueError(f"{name}: time_limit=None and max_iterations=None; set at least one budget")
        if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                       or not time_limit > 0):
            raise ValueError(f"{name}: time_limit={time_limit!r} is invalid: expected seconds > 0 or None")
        if max_iterations is not None and (isinstance(max_iterations, bool)
                                           or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1):
            raise ValueError(f"{name}: max_iterations={max_iterations!r} is invalid: expected an integer >= 1 "
                             "(kicks) or None")
        self.name = name
        self.time_limit = None if time_limit is None else float(time_limit)
        self.max_iterations = None if max_iterations is None else int(max_iterations)
        self.params = params
        self.last_result = None

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        seed = int(self._rng.integers(2**31))
        self.last_result = iterated_local_search(self.instance, time_limit=self.time_limit,
                                                 max_iterations=self.max_iterations, seed=seed, **self.params)
        record_incumbent(self.instance, self.last_result.cost)
        return self.last_result.action


#: The search parameters every ILS variant defaults to (tuned.yaml's ``ils_1s`` entry, else DEFAULT_SEARCH).
ILS_PARAMS: dict[str, Any] = tuned_params(Path(__file__).parent, ILS_TUNED_ENTRY, DEFAULT_SEARCH)


class ListGreedyPolicy(_InstancePolicy):
    """List scheduling, requests in decreasing size to the earliest-completing edge; with
    ``local_search=True`` then move/swap local search until no improvement or ``time_limit`` seconds
    (default 10, as the exact solver's; at the paper's scales up to (100, 50, 800) it stops well before)
    (``offline.corais.greedy``; reads the instance)."""

    def __init__(self, local_search: bool = False, time_limit: float = 10.0) -> None:
        super().__init__()
        if not isinstance(time_limit, (int, float)) or isinstance(time_limit, bool) or not time_limit > 0:
            raise ValueError(f"time_limit={time_limit!r} is invalid: expected a number of seconds > 0")
        self.local_search = bool(local_search)
        self.time_limit = float(time_limit)
        self.name = "list_greedy_ls" if self.local_search else "list_greedy"

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        if self.local_search:
            return list_greedy_ls(self.instance, time_limit=self.time_limit)
        return list_greedy(self.instance)


def _register_all(env_id: str) -> None:
    """Register every non-learning CoRaiS policy for ``env_id`` (the same set for every version)."""

    @register_policy(env_id, "exact")
    def _make_exact(env: gym.Env, time_limit: float = 10.0, **kwargs: Any) -> ExactPolicy:
        return ExactPolicy(time_limit=time_limit, **kwargs)

    def register_exact(limit: float) -> None:
        @register_policy(env_id, f"exact_{limit:g}s")
        def factory(env: gym.Env, **kwargs: Any) -> ExactPolicy:
            return ExactPolicy(time_limit=limit, **kwargs)

    for limit in (0.02, 0.05, 1.0, 5.0, 10.0):
        register_exact(limit)

    @register_policy(env_id, "local")
    def _make_local(env: gym.Env) -> LocalPolicy:
        return LocalPolicy()

    @register_policy(env_id, "predicted")
    def _make_predicted(env: gym.Env) -> PredictedPolicy:
        return PredictedPolicy()

    def register_random(name: str, samples: int) -> None:
        @register_policy(env_id, name)
        def factory(env: gym.Env, samples: int = samples) -> RandomBestPolicy:
            return RandomBestPolicy(samples)

    for name, k in (("random1", 1), ("random100", 100), ("random500", 500), ("random1k", 1000)):
        register_random(name, k)

    @register_policy(env_id, "list_greedy")
    def _make_list_greedy(env: gym.Env) -> ListGreedyPolicy:
        return ListGreedyPolicy(local_search=False)

    @register_policy(env_id, "list_greedy_ls")
    def _make_list_greedy_ls(env: gym.Env, time_limit: float = 10.0) -> ListGreedyPolicy:
        return ListGreedyPolicy(local_search=True, time_limit=time_limit)

    def register_ils(name: str, budget: float | None, iterations: int | None) -> None:
        @register_policy(env_id, name)
        def factory(env: gym.Env, time_limit: float | None = budget, max_iterations: int | None = iterations,
                    kick_size: int = ILS_PARAMS["kick_size"], accept_worse: float = ILS_PARAMS["accept_worse"],
                    restart_after: int = ILS_PARAMS["restart_after"],
                    swap_edges: int = ILS_PARAMS["swap_edges"]) -> SearchPolicy:
            return SearchPolicy(name, time_limit, max_iterations, kick_size=int(kick_size),
                                accept_worse=float(accept_worse), restart_after=int(restart_after),
                                swap_edges=int(swap_edges))

    for name, budget in ILS_BUDGETS.items():
        register_ils(name, budget, None)
    for name, (kicks, _) in ILS_TWINS.items():
        register_ils(name, None, kicks)
    register_ils("ils", None, 100)  # a kick budget: deterministic given the seed (tests)

    def register_milp(name: str, limit: float) -> None:
        @register_policy(env_id, name)
        def factory(env: gym.Env, time_limit: float = limit) -> MilpPolicy:
            return MilpPolicy(name, time_limit)

    for name, limit in MILP_LIMITS.items():
        register_milp(name, limit)


for _env_id in ENV_IDS:
    _register_all(_env_id)


def reference_costs(instance: Instance, actions: np.ndarray) -> np.ndarray:
    """Costs of several dispatches (S, Z) on one instance (a thin alias used by the benchmarks/tests)."""
    return response_times(instance.tables, actions)[0]
