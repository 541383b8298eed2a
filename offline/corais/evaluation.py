"""CoRaiS's evaluation hooks for :func:`offline.runner.evaluate` (contract 3): the paper's Gap-M, with
the honest columns (``HOOK`` for CoRaiS-v0, ``HOOK_V1`` for CoRaiS-v1).

Each of the ``instances`` instances (reset seeds ``seed, seed+1, ...``; one env for all of them) is
dispatched ``episodes`` times per policy (policy seed ``reset_seed * 1000 + e``, so randomised policies
are re-drawn; the instance is the same). Gap = R(policy) / R(reference) per instance; the reference is
the exact MILP with ``exact_time_limit`` seconds (the paper's Gurobi(10s); lower it for quick CPU runs),
solved once per instance before the policies run, or, with ``reference="corais_1k"`` (Table V), any
name in ``policies`` (its first episode). Instances where the reference has no incumbent are left out
of every gap; a time-limited exact policy's gap/cost/time are over the instances it solved
(``solved_share``). Files: ``corais_per_instance.csv`` (one row per episode) and
``corais_per_edge.csv`` (mean requests and response time per edge and policy: Table VI's EReqN / LCost).

Honest gaps: every instance also gets a proven lower bound on its optimum, ``lower_bound`` = max(the
backlog-only bound max_j T_j(no new request), the fluid bound ``offline.corais.greedy.fluid_bound``,
HiGHS's dual bound when the reference is the MILP). An
instance is *trivial* when some dispatch played on it (any policy or the reference) reaches the
backlog-only bound: that dispatch is optimal and any policy that keeps every edge below the straggler
ties it. Summary columns per policy: ``gap_mean`` (all instances, vs the reference), ``gap_nontrivial``
(the non-trivial instances only), ``trivial_share``, ``bound_gap_mean`` (R / lower_bound: a gap against
a proven bound, >= the true gap), ``reference_optimal_share`` (instances whose reference HiGHS proved
optimal; below 1, ``gap_*`` are taken against unproven incumbents and ``bound_gap_mean`` brackets them).
Rows of a time-limited MILP (``exact*``, ``milp_*``) also carry what HiGHS proved on that instance:
``milp_proven_optimal``, ``milp_dual_bound``, ``milp_proven_gap`` = (incumbent - dual bound) / incumbent and
``milp_status`` (HiGHS's message): the incumbent is an optimum only where ``milp_proven_optimal`` is true.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.corais.dynamics import backlog_bound
from offline.corais.greedy import fluid_bound
from offline.corais.policies import ENV_ID, ExactPolicy
from offline.protocol import run_episode
from offline.runner import Entry, EvaluationHook, Resolver, Run, evaluate, group_by_policy
from offline.stats import mean_ci95

#: What `python evaluate.py env=corais-v0` runs (Table III's rows at the env's scale; ~1 min on 2 cores).
DEFAULT_EVALUATION: dict[str, Any] = {
    "policies": ["exact", "local", "predicted", "random1", "random100", "random1k", "corais_greedy", "corais_100", "corais_1k"],
    "instances": 10,
    "episodes": 1,
}
#: ``python evaluate.py env=corais-v1``: the paper's heuristics and MILP, our heuristics (the 100 ms and 1 s
#: searches) and the shipped v1 dispatcher, alone and inside the 100 ms search.
DEFAULT_EVALUATION_V1: dict[str, Any] = {
    "policies": ["exact", "local", "predicted", "random1k", "list_greedy", "list_greedy_ls", "ils_100ms", "ils_1s",
                 "corais_greedy", "corais_1k", "corais_ils_100ms"],
    "instances": 10,
    "episodes": 1,
}
#: Relative tolerance of "a cost equals the backlog-only bound".
TRIVIAL_RTOL = 1e-9


class CoRaiSHook(EvaluationHook):
    """CoRaiS's parts of :func:`offline.runner.evaluate` (see the module docstring); one per env id."""
    key_columns = {
        'cost_mean': 'mean response time R',
        'gap_mean': "R / the reference's R",
        'gap_ci95': 'its 95 % CI half-width',
        'bound_gap_mean': 'R / a proven lower bound',
        'reference_optimal_share': 'instances whose reference HiGHS proved optimal',
        'time_mean_s': 'seconds per dispatch',
        'solved_share': 'instances solved',
    }

    env_id = ENV_ID
    score_metric = "cost_mean"
    higher_is_better = False
    default_evaluation = DEFAULT_EVALUATION

    def __init__(self, env_id: str = ENV_ID, default_evaluation: dict[str, Any] | None = None) -> None:
        super().__init__(env_id)
        if default_evaluation is not None:
            self.default_evaluation = default_evaluation
    episodes_csv = "corais_per_instance.csv"
    options = {"exact_time_limit": 10.0, "reference": "exact"}

    def check_options(self, policies: Sequence[str], options: dict[str, Any]) -> None:
        reference = options["reference"]
        if reference != "exact" and reference not in policies:
            raise ValueError(f"reference={reference!r} must be 'exact' or one of policies={list(policies)}")

    def prepare(self, run: Run) -> None:
        reference = run.options["reference"]
        run.state["per_edge"] = {}
        if reference == "exact":
            run.state["reference_policy"] = ExactPolicy(time_limit=run.options["exact_time_limit"])

    def env_key(self, run: Run, instance: int, entry: Entry) -> int:
        return 0  # one env for every instance: instance k is the reset seed seed + k

    def make_env(self, run: Run, instance: int, entry: Entry) -> gym.Env:
        return gym.make(run.env_id, **run.env_kwargs)

    def seeds(self, run: Run, instance: int, episode: int) -> tuple[int, int]:
        inst_seed = run.instance_seed(instance)
        return inst_seed, inst_seed * 1000 + episode

    def instance_context(self, run: Run, instance: int, env: gym.Env) -> dict[str, Any]:
        """The exact reference, solved once per instance (reused for an identical exact policy)."""
        context: dict[str, Any] = {"ref_cost": np.nan, "cached": {}, "dual_bound": np.nan, "ref_optimal": False}
        if run.options["reference"] == "exact":
            reference_policy = run.state["reference_policy"]
            res = run_episode(env, reference_policy, seed=run.instance_seed(instance), time_decisions=True)
            ok = reference_policy.solved
            context["ref_cost"] = res.final_info["cost"] if ok else np.nan
            context["cached"][reference_policy.name] = (res.final_info, res.decision_seconds[0], ok)
            solve = reference_policy.last_solve
            context["ref_solve"] = solve
            if solve is not None:
                context["dual_bound"] = solve.bound
                context["ref_optimal"] = bool(solve.optimal)
        else:
            env.reset(seed=run.instance_seed(instance))
        context["backlog_bound"] = backlog_bound(env.unwrapped.instance)
        context["fluid_bound"] = fluid_bound(env.unwrapped.instance)
        return context

    def play(self, run: Run, env: gym.Env, policy: Any, entry: Entry, instance: int, episode: int,
             context: dict[str, Any]) -> dict[str, Any]:
        name = entry.name
        inst_seed, policy_seed = self.seeds(run, instance, episode)
        pol_name = getattr(policy, "name", name)
        solve = None
        if episode == 0 and isinstance(policy, ExactPolicy) and pol_name in context["cached"]:
            final, secs, ok = context["cached"][pol_name]
            solve = context.get("ref_solve")
        else:
            res = run_episode(env, policy, seed=inst_seed, policy_seed=policy_seed, time_decisions=True)
            final, secs = res.final_info, res.decision_seconds[0]
            ok = policy.solved if isinstance(policy, ExactPolicy) else True
            solve = policy.last_solve if isinstance(policy, ExactPolicy) else None
        cost = final["cost"]
        run.state["per_edge"].setdefault(name, []).append(
            (final["requests_per_edge"].astype(float), final["edge_times"], final["data_per_edge"])
        )
        if run.options["reference"] != "exact" and name == run.options["reference"] and episode == 0:
            context["ref_cost"] = cost
        row = {"policy": name, "instance": instance, "seed": inst_seed, "episode": episode, "cost": cost,
               "seconds": secs, "solved": ok}
        if solve is not None:  # a time-limited MILP row: what HiGHS proved, not only what it found
            row.update(milp_proven_optimal=bool(solve.optimal), milp_dual_bound=solve.bound,
                       milp_proven_gap=(solve.cost - solve.bound) / solve.cost if solve.has_incumbent
                       and np.isfinite(solve.bound) and solve.cost > 0 else np.nan,
                       milp_status=solve.message.split("(")[0].strip())
        return row

    def end_instance(self, run: Run, instance: int, context: dict[str, Any], records: list[dict[str, Any]]) -> None:
        ref_cost = context["ref_cost"]
        lb0 = context["backlog_bound"]
        dual = context["dual_bound"]
        lower = max(context["fluid_bound"], dual) if np.isfinite(dual) else context["fluid_bound"]
        best = min([ref_cost if np.isfinite(ref_cost) else np.inf] + [r["cost"] for r in records if r["solved"]])
        trivial = bool(best <= lb0 * (1 + TRIVIAL_RTOL))
        for rec in records:
            rec["reference_cost"] = ref_cost
            rec["gap"] = rec["cost"] / ref_cost if rec["solved"] and np.isfinite(ref_cost) else np.nan
            rec["backlog_bound"] = lb0
            rec["lower_bound"] = lower
            rec["bound_gap"] = rec["cost"] / lower if rec["solved"] and lower > 0 else np.nan
            rec["trivial"] = trivial
            rec["reference_optimal"] = bool(context["ref_optimal"]) or bool(ref_cost <= lb0 * (1 + TRIVIAL_RTOL))

    def summary_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        by_name = group_by_policy(records)
        rows = []
        for name in run.policies:
            recs = by_name[name]
            solved = [r for r in recs if r["solved"]]
            gaps = [r["gap"] for r in solved if np.isfinite(r["gap"])]
            gap_mean, gap_ci = mean_ci95(gaps) if gaps else (float("nan"), float("nan"))
            hard = [r["gap"] for r in solved if np.isfinite(r["gap"]) and not r["trivial"]]
            bound_gaps = [r["bound_gap"] for r in solved if np.isfinite(r["bound_gap"])]
            times = np.array([r["seconds"] for r in solved]) if solved else np.array([np.nan])
            nan = float("nan")
            rows.append(
                {
                    "policy": name,
                    "gap_mean": gap_mean,
                    "gap_ci95": gap_ci,
                    "gap_nontrivial": float(np.mean(hard)) if hard else nan,
                    "gap_nontrivial_ci95": mean_ci95(hard)[1] if len(hard) > 1 else nan,
                    "trivial_share": float(np.mean([r["trivial"] for r in recs])) if recs else nan,
                    "bound_gap_mean": float(np.mean(bound_gaps)) if bound_gaps else nan,
                    "reference_optimal_share": float(np.mean([r["reference_optimal"] for r in recs])) if recs else nan,
                    "cost_mean": float(np.mean([r["cost"] for r in solved])) if solved else nan,
                    "time_mean_s": float(np.mean(times)),
                    "time_std_s": float(np.std(times)),
                    "solved_share": len(solved) / len(recs),
                }
            )
        return rows

    def finish(self, run: Run, rows: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``corais_per_edge.csv``: Table VI's EReqN and LCost per edge and policy."""
        with open(run.out_dir / "corais_per_edge.csv", "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["policy", "edge", "requests_mean", "edge_time_mean", "data_mean"])
            for name, triples in run.state["per_edge"].items():
                counts, times, data = (np.mean([t[k] for t in triples], axis=0) for k in range(3))
                for j in range(counts.size):
                    writer.writerow([name, j, f"{counts[j]:.4f}", f"{times[j]:.6f}", f"{data[j]:.4f}"])
        return rows

    def progress_desc(self, run: Run) -> str:
        scale = run.env_kwargs.get("scale")
        return f"CoRaiS {tuple(scale)}" if scale is not None else "CoRaiS"


#: CoRaiS-v0's and CoRaiS-v1's evaluation hooks (``Problem.evaluation``).
HOOK = CoRaiSHook()
HOOK_V1 = CoRaiSHook("CoRaiS-v1", DEFAULT_EVALUATION_V1)


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
    resolve: Resolver | None = None,
    env_id: str = ENV_ID,
) -> list[dict]:
    """Run every policy on the same instances and summarise (:func:`offline.runner.evaluate`).

    Rows: ``policy, gap_mean, gap_ci95, gap_nontrivial, gap_nontrivial_ci95, trivial_share, bound_gap_mean,
    reference_optimal_share, cost_mean, time_mean_s, time_std_s, solved_share``.
    ``policy_kwargs`` maps a name to factory kwargs (e.g. ``{"corais_greedy": {"run_dir": "runs/..."}}``,
    with ``resolve=agents.loading.resolve_policy``, which knows the learned policies).
    """
    return evaluate(env_id, env_kwargs, policies, instances=instances, episodes=episodes, seed=seed,
                    out_dir=out_dir, progress=progress, resolve=resolve, policy_kwargs=policy_kwargs,
                    exact_time_limit=exact_time_limit, reference=reference)
