"""CoRaiS instance calibration: per scale and version, how often the optimum is trivial and the heuristics' gaps.

    python -m benchmarks.corais_calibration                      # v0 and v1, every paper scale (~15 min, 2 cores)
    python -m benchmarks.corais_calibration versions=v1 scales=10-5-100,20-10-200 instances=20 milp_limit=2

For each instance (generator seeds ``seed, seed+1, ...``): the backlog-only bound LB0 = max_j T_j(no new
request) (``envs.corais.dynamics.backlog_bound``); list_greedy and list_greedy_ls; the MILP (HiGHS,
``milp_limit`` s) where Z * Q <= ``milp_max_vars``, with its proven dual bound; Local, Random(1),
Random(100), Random(1k). The reference is the best dispatch found (MILP incumbent or list_greedy_ls).

Columns: ``trivial_share`` = share of instances where a found dispatch reaches LB0 (it is then optimal and
the instance trivial; a lower estimate of the true share where the MILP did not prove optimality);
``proven_nontrivial_share`` = share where a proven lower bound exceeds LB0 (the fluid bound
``offline.corais.greedy.fluid_bound``, any scale, or the MILP's dual bound); ``<policy>_gap`` = mean
R(policy) / R(reference); ``ref_bound_gap`` = mean R(reference) / max(fluid bound, dual bound), how far
the reference may be from the optimum at most. Writes ``outputs/corais/calibration.csv`` (``publish=true``: the
checked-in ``results/corais/calibration.csv``); with ``shared=true`` also the headline rows to
``benchmarks.results`` (benchmark ``corais_calibration``).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from envs.corais.dynamics import backlog_bound, dispatch_cost
from envs.corais.generator import (
    GENERALISATION_SCALES,
    LARGE_SCALES,
    TRAINING_SCALES,
    V1_DEFAULTS,
    generate,
    make_scenario,
    parse_scale,
)
from offline.corais.greedy import fluid_bound, list_greedy, local_search
from offline.corais.milp import solve_exact
from offline.corais.policies import best_of_random, local_dispatch
from offline.provenance import check_output_path

PUBLISHED = Path(__file__).resolve().parent.parent / "results" / "corais" / "calibration.csv"
OUT = Path(__file__).resolve().parent.parent / "outputs" / "corais" / "calibration.csv"  # git-ignored
VERSIONS: dict[str, dict[str, Any]] = {"v0": {}, "v1": dict(V1_DEFAULTS)}
#: Default instances per scale: Table III, IV, V.
DEFAULT_INSTANCES = {**{s: 30 for s in TRAINING_SCALES}, **{s: 10 for s in GENERALISATION_SCALES},
                     (200, 100, 2000): 5, (600, 300, 4000): 2, (1000, 500, 6000): 1,
                     (2000, 1000, 10000): 1, (2000, 1000, 15000): 1}
TOL = 1e-9


def calibrate(version: str, scale: tuple[int, int, int], instances: int, seed: int, milp_limit: float,
              milp_max_vars: int, ls_limit: float = 60.0) -> dict[str, Any]:
    """One row of the table (see the module docstring)."""
    scenario = make_scenario(scale, **VERSIONS[version])
    rng = np.random.default_rng(seed)
    use_milp = scale[1] * scale[2] <= milp_max_vars and milp_limit > 0
    names = ("local", "random1", "random100", "random1k", "list_greedy", "list_greedy_ls")
    costs: dict[str, list[float]] = {k: [] for k in names}
    ref, trivial, proven, ref_bound = [], [], [], []
    seconds = {"list_greedy": 0.0, "list_greedy_ls": 0.0}
    start = time.perf_counter()
    for k in range(instances):
        inst = generate(scenario, np.random.default_rng(seed + k))
        lb0 = backlog_bound(inst)
        t = time.perf_counter()
        greedy = list_greedy(inst)
        seconds["list_greedy"] += time.perf_counter() - t
        ls = local_search(inst, greedy, time_limit=ls_limit)
        seconds["list_greedy_ls"] += time.perf_counter() - t
        costs["list_greedy"].append(float(dispatch_cost(inst, greedy)))
        costs["list_greedy_ls"].append(float(dispatch_cost(inst, ls)))
        costs["local"].append(float(dispatch_cost(inst, local_dispatch(inst))))
        for name, samples in (("random1", 1), ("random100", 100), ("random1k", 1000)):
            costs[name].append(best_of_random(inst, samples, rng)[1])
        best, lower = costs["list_greedy_ls"][-1], fluid_bound(inst)
        if use_milp:
            res = solve_exact(inst, time_limit=milp_limit)
            if res.has_incumbent:
                best = min(best, res.cost)
            if np.isfinite(res.bound):
                lower = max(lower, res.bound)
        proven.append(lower > lb0 * (1 + TOL))
        ref.append(best)
        trivial.append(best <= lb0 * (1 + TOL))
        ref_bound.append(best / lower)
    ref_arr = np.array(ref)
    row: dict[str, Any] = {
        "version": version, "scale": "-".join(map(str, scale)), "instances": instances,
        "trivial_share": float(np.mean(trivial)),
        "proven_nontrivial_share": float(np.mean(proven)),
        "reference": f"best of MILP({milp_limit:g}s), list_greedy_ls" if use_milp else "list_greedy_ls",
        "ref_bound_gap": float(np.mean(ref_bound)),
    }
    for name in names:
        row[f"{name}_gap"] = float(np.mean(np.array(costs[name]) / ref_arr))
    row["list_greedy_ms"] = 1e3 * seconds["list_greedy"] / instances
    row["list_greedy_ls_ms"] = 1e3 * seconds["list_greedy_ls"] / instances
    row["seconds"] = time.perf_counter() - start
    return row


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """key=value arguments: versions (v0,v1), scales (N-Q-Z,...), instances (per scale; default by table),
    seed (0), milp_limit (1.0 s), milp_max_vars (40000), ls_limit (local search time cap, 60 s),
    out (outputs/corais/calibration.csv), shared (false), publish (false: true writes the checked-in
    results/corais/calibration.csv and, with shared=true, results/benchmarks/performance.csv)."""
    given = list(sys.argv[1:] if argv is None else argv)
    bad = [a for a in given if "=" not in a]
    if bad:
        raise SystemExit(f"error: argument {bad[0]!r} is invalid: expected key=value; see {main.__doc__}")
    args = dict(a.split("=", 1) for a in given)
    unknown = set(args) - {"versions", "scales", "instances", "seed", "milp_limit", "milp_max_vars", "ls_limit", "out",
                           "shared", "publish"}
    if unknown:
        raise SystemExit(f"error: unknown arguments {sorted(unknown)}; see {main.__doc__}")
    versions = args.get("versions", "v0,v1").split(",")
    for v in versions:
        if v not in VERSIONS:
            raise SystemExit(f"error: versions={v!r} is invalid: expected among {sorted(VERSIONS)}")
    scales = ([parse_scale(s) for s in args["scales"].split(",")] if "scales" in args
              else list(TRAINING_SCALES + GENERALISATION_SCALES + LARGE_SCALES))
    if args.get("publish", "false").lower() not in ("0", "1", "true", "false", "yes", "no"):
        raise SystemExit(f"error: publish={args['publish']!r} is invalid: expected true or false")
    publish = args.get("publish", "false").lower() in ("1", "true", "yes")
    out = Path(args.get("out", PUBLISHED if publish else OUT))
    try:
        check_output_path(out, publish=publish)  # a checked-in file changes only with publish=true
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    rows = []
    for version in versions:
        for scale in scales:
            n = int(args["instances"]) if "instances" in args else DEFAULT_INSTANCES.get(scale, 10)
            row = calibrate(version, scale, n, int(args.get("seed", 0)), float(args.get("milp_limit", 1.0)),
                            int(args.get("milp_max_vars", 40_000)), float(args.get("ls_limit", 60.0)))
            rows.append(row)
            print(" | ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()),
                  flush=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            with open(out, "w", newline="") as fh:  # rewritten after every row: partial runs keep their rows
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    if args.get("shared", "false").lower() in ("1", "true", "yes"):
        from benchmarks.results import write_rows

        write_rows("corais_calibration", [
            {"quantity": f"{r['version']} {r['scale']} {key}", "value": r[key], "unit": "share" if "share" in key else "x"}
            for r in rows for key in ("trivial_share", "local_gap", "random1k_gap", "list_greedy_ls_gap")
        ], publish=publish)
    print(out)
    return rows


if __name__ == "__main__":
    main()
