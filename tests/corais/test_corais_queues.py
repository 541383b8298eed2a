"""CoRaiS-v1's backlog queues are shorter than v0's at every scale the docs tabulate (offline.corais.queues)."""

from __future__ import annotations

import pytest

from offline.corais.queues import SCALES, queue_rows


@pytest.mark.filterwarnings("ignore:.*out of date")
def test_corais_queues__v1_queues_are_shorter_and_emptier_than_v0s():
    rows = {(r["scale"], r["env_id"]): r for r in queue_rows(SCALES, range(8))}
    for scale in {r[0] for r in rows}:
        v0, v1 = rows[scale, "CoRaiS-v0"], rows[scale, "CoRaiS-v1"]
        assert v1["backlog_per_edge"] < v0["backlog_per_edge"]
        assert v1["edges_without_backlog"] > v0["edges_without_backlog"]
