"""RESCUE's offline stage as the benchmark reports it: the default solve (aggregated, IPM + crossover) against an
independent reference solve (direct formulation, no pruning, dual simplex), and the iteration counts it reports.
Correctness only; timings are measured by ``python -m benchmarks.offline_stage``, never asserted."""

from __future__ import annotations

import numpy as np
import pytest

from envs.uec.generator import PRESETS, generate_instance
from offline.uec.lp import solve_lp
from offline.uec.values import compute_rescue_solution


@pytest.mark.parametrize(
    ("seed", "overrides"),
    [
        (0, {"num_reserved": 3}),
        (1, {"num_reserved": 0, "duration_family": "bimodal"}),
        (2, {"num_servers": 3, "num_devices": 6, "num_profiles": 4, "horizon": 40, "num_reserved": 4}),
    ],
)
def test_uec_v0__default_solve_matches_reference_optimum(seed, overrides):
    inst = generate_instance(PRESETS["tiny"].replace(**overrides), np.random.default_rng(seed))
    reference = solve_lp(inst, formulation="direct", method="highs-ds", prune_dominated=False)
    sol = compute_rescue_solution(inst)
    assert sol.lp_bound == pytest.approx(reference.value, rel=1e-6, abs=1e-9)
    # y* is a feasible assignment worth OPT(LP), so the value functions are built on an optimum
    assert float((sol.y * inst.expected_profit).sum()) == pytest.approx(reference.value, rel=1e-6, abs=1e-9)
    assert (inst.arrival_prob - sol.y.sum(axis=(1, 2)).T).min() >= -1e-9  # (3a)
    assert sol.value_bound >= 0.5 * sol.lp_bound - 1e-9


def test_uec_v0__solve_reports_iterations():
    inst = generate_instance(PRESETS["tiny"].replace(num_reserved=2), np.random.default_rng(4))
    ipm = solve_lp(inst, method="highs-ipm")
    simplex = solve_lp(inst, method="highs-ds")
    assert ipm.iterations > 0  # interior-point iterations (crossover counted apart)
    assert ipm.crossover_iterations >= 0
    assert simplex.iterations > 0
    assert ipm.value == pytest.approx(simplex.value, rel=1e-7, abs=1e-9)
