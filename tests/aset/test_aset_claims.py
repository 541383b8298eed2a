"""offline.aset.claims: the claim checks on hand-made sweep rows."""

from __future__ import annotations

import csv

import pytest

from offline.aset.claims import CLAIM_A, CLAIM_C, check_claims, claims_table


def rows(values: dict[str, dict[str, float]], half: float = 0.01) -> list[dict]:
    return [{"topology": t, "policy": p, "success_rate": v, "success_rate_ci95": half}
            for t, per in values.items() for p, v in per.items()]


def test_aset_claims__best_policy_differs_and_co_dc_cloud_beats_dc_cloud_beyond_the_cis():
    data = {"dc-cloud": {"closest": 0.70, "cheaper": 0.60}, "co-dc-cloud": {"closest": 0.80, "cheaper": 0.90},
            "full-edge": {"closest": 0.95, "cheaper": 0.50}}
    result = {r["claim"]: r for r in check_claims(rows(data))}
    assert result[CLAIM_A]["holds"] and "co-dc-cloud: cheaper" in result[CLAIM_A]["detail"]
    assert result[CLAIM_C]["holds"]
    tie = {**data, "co-dc-cloud": {"closest": 0.71, "cheaper": 0.90}}  # +0.01 is inside the CIs
    result = {r["claim"]: r for r in check_claims(rows(tie))}
    assert not result[CLAIM_C]["holds"] and "better on co-dc-cloud: 1 of 2" in result[CLAIM_C]["detail"]
    assert "higher mean: 2" in result[CLAIM_C]["detail"]
    same_best = {t: {"closest": 0.9, "cheaper": 0.1} for t in data}
    assert not {r["claim"]: r for r in check_claims(rows(same_best))}[CLAIM_A]["holds"]


def test_aset_claims__table_reads_setting_from_file_names_and_refuses_an_empty_folder(tmp_path):
    with pytest.raises(ValueError, match="folder="):
        claims_table(tmp_path)
    data = rows({"dc-cloud": {"closest": 0.7}, "co-dc-cloud": {"closest": 0.8}})
    with (tmp_path / "per_replica_x1.5.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(data[0]))
        writer.writeheader()
        writer.writerows(data)
    table = claims_table(tmp_path)
    assert {(r["queueing"], r["capacity_scale"]) for r in table} == {("per_replica", 1.5)}


def test_aset_claims__markdown_has_one_row_per_setting_and_one_column_per_claim(tmp_path):
    from offline.aset.claims import CLAIM_A, CLAIM_C, claims_markdown

    table = [{"queueing": "pooled", "capacity_scale": 1.0, "claim": CLAIM_A, "holds": True, "detail": "x"},
             {"queueing": "pooled", "capacity_scale": 1.0, "claim": CLAIM_C, "holds": False, "detail": "y"},
             {"queueing": "none", "capacity_scale": 1.5, "claim": CLAIM_A, "holds": False, "detail": "z"}]
    lines = claims_markdown(table).splitlines()
    assert lines[0] == f"| queueing | capacity_scale | {CLAIM_A} | {CLAIM_C} |"
    assert lines[2] == "| pooled | 1 | holds (x) | fails (y) |"
    assert lines[3] == "| none | 1.5 | fails (z) |  |"
