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


def test_corais_queues__out_must_be_a_csv_file_and_nothing_else_is_overwritten(tmp_path, capsys):
    from offline.corais.queues import main

    victim = tmp_path / "passwd"
    victim.write_text("keep me\n")
    assert main([f"out={victim}"]) == 2
    assert victim.read_text() == "keep me\n" and ".csv" in capsys.readouterr().err
    assert main([f"out={tmp_path}/x.csv", "foo=1"]) == 2 and not (tmp_path / "x.csv").exists()
