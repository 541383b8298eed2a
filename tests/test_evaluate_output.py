"""evaluate.py prints a compact table (the policy and at most 7 key columns) with a one-line legend (issue 28 F8)."""

from __future__ import annotations

import pytest

from edge_sched_gym import evaluate
from envs.problems import PROBLEMS


@pytest.mark.parametrize("env_id", list(PROBLEMS))
def test_evaluate_output__compact_table_has_at_most_8_columns_and_a_legend(env_id):
    hook = evaluate.problem_hook(env_id)
    assert hook.key_columns, f"{env_id}'s hook names no key columns"
    row = {"policy": "p", **{k: 1.0 for k in hook.key_columns}, "extra_1": 2.0, "extra_2": 3.0}
    lines = evaluate.compact_table([row], hook).splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == "policy" and len(header) <= 8 and "extra_1" not in header
    assert lines[-1].endswith("Every column: summary.csv.") and all(f"{k}:" in lines[-1] for k in header[1:])
