"""evaluate_papers: the papers' numbers beside the experiments, the verdicts, the generated files, README's table."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from edge_sched_gym import evaluate_papers as ep

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = ep.experiment_blocks()


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


# ------------------------------------------------------------------------------------- the paper blocks

def test_papers__every_paper_has_experiments_and_every_block_is_valid():
    assert {b["name"] for b in BLOCKS.values()} == set(ep.PAPERS)
    for experiment, block in BLOCKS.items():
        ep.check_block(experiment, block)
    # the experiments the issue names all carry a block
    expected = {"rescue_fig5", "rescue_fig6", "rescue_fig7", "rescue_fig8", "rescue_fig9", "uec_sensitivity",
                "oinc_table2", "oinc_devices", "oinc_edges", "oinc_bandwidth", "oinc_retraining_workload",
                "aset_fig4", "aset_fig5", "aset_fig6", "aset_fig6_v1", "corais_table3", "corais_table4", "corais_table5",
                "corais_table6", "corais_v1_table3", "corais_v1_table4"}
    assert expected <= set(BLOCKS)


@pytest.mark.parametrize("experiment", sorted(BLOCKS))
def test_papers__checks_name_a_result_file_and_columns_of_their_experiment(experiment):
    """file = summary or one of the experiment's sweeps (or a file inside a sweep point); `by` = the sweep's
    column; quick's sweeps/values name existing sweeps; every check appears in the checked-in comparison with
    a verdict (the run that wrote it read every column: an unknown column raises)."""
    cfg = yaml.safe_load((ROOT / "edge_sched_gym" / "conf" / "experiment" / f"{experiment}.yaml").read_text())
    sweeps = {s["name"]: s["parameter"].split(".")[-1] for s in cfg.get("sweeps") or []}
    block = BLOCKS[experiment]
    quick = block.get("quick") or {}
    assert set(quick.get("values") or {}) <= set(sweeps)
    assert set(quick.get("sweeps") or []) <= set(sweeps)
    for check in block["checks"]:
        if check["kind"] == "not_run":
            assert "python" in check["command"]
            continue
        file = check.get("file", "summary")
        assert file == "summary" or file.split("/")[0] in sweeps, f"{check['id']}: {file} is not a result of {experiment}"
        if check.get("by") and file in sweeps:
            assert check["by"] in (sweeps[file], "policy"), f"{check['id']}: by={check['by']} is not {sweeps[file]}"
        if check.get("explanation"):
            assert check["explanation"].startswith("../") and ".md" in check["explanation"]
    comparison = ROOT / "results" / block["name"] / f"{experiment}.csv"
    if not comparison.is_file():
        pytest.skip(f"{comparison.relative_to(ROOT)} is not checked in yet (python -m evaluate_papers)")
    rows = {r["check"]: r for r in read_csv(comparison)}
    for check in block["checks"]:
        assert check["id"] in rows, f"{check['id']} is not in {comparison.name}: re-run the papers"
        assert rows[check["id"]]["verdict"] in ep.VERDICTS


def test_papers__a_malformed_block_is_refused_with_the_key_named():
    good = {"name": "aset", "checks": [{"id": "x", "kind": "value", "quantity": "q", "source": "Fig. 1",
                                         "column": "success_rate", "paper_value": 1}]}
    ep.check_block("aset_fig4", good)
    with pytest.raises(ValueError, match="name='nope'"):
        ep.check_block("aset_fig4", {**good, "name": "nope"})
    with pytest.raises(ValueError, match="kind='guess'"):
        ep.check_block("aset_fig4", {**good, "checks": [{**good["checks"][0], "kind": "guess"}]})
    with pytest.raises(ValueError, match="colum"):
        ep.check_block("aset_fig4", {**good, "checks": [{**good["checks"][0], "colum": "x"}]})
    with pytest.raises(ValueError, match="command"):
        ep.check_block("aset_fig4", {**good, "checks": [{"id": "y", "kind": "not_run", "quantity": "q", "source": "s"}]})


# ------------------------------------------------------------------------------------------- verdicts

ROWS = [
    {"x": "1", "policy": "a", "m": "1.00", "m_ci95": "0.05"},
    {"x": "1", "policy": "b", "m": "0.80", "m_ci95": "0.05"},
    {"x": "2", "policy": "a", "m": "1.20", "m_ci95": "0.05"},
    {"x": "2", "policy": "b", "m": "1.50", "m_ci95": "0.05"},
    {"x": "3", "policy": "a", "m": "1.40", "m_ci95": "0.05"},
    {"x": "3", "policy": "b", "m": "1.60", "m_ci95": "0.05"},
]


def check(**kw):
    return {"id": "c", "quantity": "q", "source": "s", **kw}


def test_papers__value_verdict_uses_ci_plus_tolerance():
    base = check(kind="value", where={"policy": "a", "x": 1}, column="m", tolerance={"rel": 0.1})
    inside = ep.judge({**base, "paper_value": 1.12}, ROWS)  # |1.00 - 1.12| = 0.12 <= 0.05 + 0.112
    assert inside["verdict"] == "reproduced" and inside["ours"] == 1.0 and inside["ours_ci95"] == 0.05
    assert inside["ratio"] == pytest.approx(1 / 1.12)
    outside = ep.judge({**base, "paper_value": 1.25}, ROWS)  # 0.25 > 0.05 + 0.125
    assert outside["verdict"] == "differs"
    absolute = ep.judge({**base, "paper_value": 1.3, "tolerance": {"abs": 0.3}}, ROWS)
    assert absolute["verdict"] == "reproduced"
    wide = [{"policy": "a", "m": "1.0", "m_ci95": "0.9"}]  # covers 1.5 only because the CI is wide
    assert ep.judge({**base, "where": {"policy": "a"}, "paper_value": 1.5}, wide)["verdict"] == "inconclusive"
    assert ep.judge({**base, "where": {"policy": "a"}, "paper_value": 3.0}, wide)["verdict"] == "differs"
    missing = ep.judge({**base, "paper_value": 1.0, "where": {"policy": "a", "x": 9}}, ROWS)
    assert missing["verdict"] == "not run" and "no row" in missing["note"]
    with pytest.raises(ValueError, match="column 'nope'"):
        ep.judge({**base, "paper_value": 1.0, "column": "nope"}, ROWS)


def test_papers__qualitative_claims():
    best = ep.judge(check(kind="best", by="x", policy="b", column="m", better="higher"), ROWS)
    assert best["verdict"] == "differs" and best["ours"] == pytest.approx(2 / 3)  # b best at x=2, 3 only
    best_sub = ep.judge(check(kind="best", by="x", policy="b", column="m", where={"x": [2, 3]}), ROWS)
    assert best_sub["verdict"] == "reproduced" and best_sub["ours"] == 1.0
    lowest = ep.judge(check(kind="best", by="x", policy="a", column="m", better="lower", where={"x": [2, 3]}), ROWS)
    assert lowest["verdict"] == "reproduced"
    up = ep.judge(check(kind="trend", by="x", column="m", direction="increasing"), ROWS)
    assert up["verdict"] == "reproduced" and up["ours"] == pytest.approx(1.0)
    down = ep.judge(check(kind="trend", by="x", column="m", direction="decreasing"), ROWS)
    assert down["verdict"] == "differs"
    rng = ep.judge(check(kind="range", column="m", paper_value=[0.8, 1.6], tolerance={"abs": 0.0}), ROWS)
    assert rng["verdict"] == "reproduced" and rng["ours"] == "0.8–1.6"
    narrow = ep.judge(check(kind="range", column="m", paper_value=[0.9, 1.5], tolerance={"abs": 0.05}), ROWS)
    assert narrow["verdict"] == "differs"
    spread = ep.judge(check(kind="bound", column="m", where={"x": 1}, stat="spread", relation="<=", paper_value=0.25), ROWS)
    assert spread["verdict"] == "reproduced" and spread["ours"] == pytest.approx(0.2)
    mean = ep.judge(check(kind="bound", column="m", where={"policy": "a"}, stat="mean", relation=">=", paper_value=1.3), ROWS)
    assert mean["verdict"] == "differs" and mean["ours"] == pytest.approx(1.2)
    paired = ep.judge(check(kind="paired", by="x", a=3, b=1, relation=">", column="m"), ROWS)
    assert paired["verdict"] == "reproduced" and paired["ours"] == 1.0
    apps = [{"policy": "a", "u": "0.9", "v": "0.2"}, {"policy": "b", "u": "0.5", "v": "0.7"}]
    differs = ep.judge(check(kind="best_differs", columns=["u", "v"]), apps)
    assert differs["ours"] == 2 and differs["verdict"] == "reproduced"  # a best at u, b at v
    same = ep.judge(check(kind="best_differs", columns=["u", "v"], where={"policy": "a"}), apps)
    assert same["ours"] == 1 and same["verdict"] == "differs"
    not_run = ep.judge(check(kind="not_run", command="python train.py ..."), ROWS)
    assert not_run["verdict"] == "not run" and "needs a trained run: python train.py" in not_run["note"]
    rows = [{"policy": "a", "i": "0.25", "r": "96.0"}, {"policy": "b", "i": "1", "r": "1"}]
    summed = ep.judge(check(kind="value", sum_of=["i", "r"], where={"policy": "a"}, paper_value=96.459,
                            tolerance={"rel": 0.1}), rows)
    assert summed["ours"] == pytest.approx(96.25) and summed["verdict"] == "reproduced"


def test_papers__a_check_may_judge_a_checked_in_results_file(tmp_path):
    """results_file: a longer run's checked-in table (e.g. a trained agent's) is judged instead of this run's."""
    block = {"name": "oinc", "checks": [{"id": "t", "kind": "value", "quantity": "q", "source": "s", "paper_value": 96.459,
                         "results_file": "results/oinc/table2_sacd/table2.csv", "where": {"policy": "oinc"},
                         "sum_of": ["inference_latency_s", "retraining_completion_s"], "tolerance": {"rel": 0.1}}]}
    ep.check_block("x", block)
    (row,) = ep.compare_experiment("oinc", "x", block, tmp_path)  # tmp_path holds no results of its own
    rows = ep.read_rows(ep.ROOT / "results/oinc/table2_sacd/table2.csv")
    (oinc,) = [r for r in rows if r["policy"] == "oinc"]
    assert row["ours"] == pytest.approx(float(oinc["inference_latency_s"]) + float(oinc["retraining_completion_s"]))
    assert "judged on results/oinc/table2_sacd/table2.csv" in row["note"]
    assert row["compares_to"].startswith("results/oinc/table2_sacd/table2.csv [policy=oinc]")
    with pytest.raises(ValueError, match="results_file"):
        ep.check_block("x", {"name": "oinc", "checks": [{**block["checks"][0], "results_file": "results/none.csv"}]})


# ----------------------------------------------------------------------------------------- bad input

def test_papers__bad_input_raises_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"papers=\['foo'\] is invalid: expected 'all' or a list among"):
        ep.run_papers("foo", results=tmp_path / "r", docs=tmp_path / "d", readme=None)
    with pytest.raises(ValueError, match=r"quick='maybe' is invalid: expected true or false"):
        ep.run_papers("aset", "maybe", results=tmp_path / "r", docs=tmp_path / "d", readme=None)
    with pytest.raises(ValueError, match=r"experiments \['nope'\]"):
        ep.run_papers("aset", True, results=tmp_path / "r", docs=tmp_path / "d", readme=None, experiments=["nope"])
    assert not list(tmp_path.iterdir())


def test_papers__hydra_names_the_experiment_choices_for_an_unknown_paper():
    from hydra.errors import MissingConfigException

    with pytest.raises(MissingConfigException) as err:
        ep.compose("papers_foo")
    assert "experiment" in str(err.value) and "papers_rescue" in str(err.value)


def test_papers__evaluate_py_refuses_quick_maybe(tmp_path):
    result = subprocess.run([sys.executable, "evaluate.py", "experiment=papers_aset", "quick=maybe"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "quick='maybe' is invalid: expected true or false" in result.stderr


# ------------------------------------------------------------------------------------------ end to end

def test_papers__tiny_end_to_end_run_writes_comparison_page_and_summary(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{ep.README_BEGIN}\nold\n{ep.README_END}\n\nrest\n")
    summary = ep.run_papers("aset", True, results=tmp_path / "results", docs=tmp_path / "docs", readme=readme,
                            experiments=["aset_fig4"], extra={"set": {"env.kwargs.horizon": 8}})
    rows = read_csv(tmp_path / "results" / "aset" / "aset_fig4.csv")
    assert [r["check"] for r in rows] == [c["id"] for c in BLOCKS["aset_fig4"]["checks"]]
    assert all(r["verdict"] in ep.VERDICTS for r in rows)
    assert (tmp_path / "results" / "aset" / "aset_fig4" / "summary.csv").is_file()
    page = (tmp_path / "docs" / "aset.md").read_text()
    assert "## aset_fig4" in page and "Size: quick" in page and "## Provenance" in page and "commit" in page
    assert read_csv(summary)[0]["paper"] == "aset"
    text = readme.read_text()
    assert "old" not in text and "[docs/papers/aset.md](docs/papers/aset.md)" in text and text.endswith("rest\n")


# ---------------------------------------------------------------------------------------------- README

def test_papers__readme_table_equals_the_checked_in_results():
    readme = (ROOT / "README.md").read_text()
    if ep.README_BEGIN not in readme or ep.README_END not in readme:
        pytest.skip("README.md has no results-at-a-glance markers yet (another change adds them)")
    summary = ROOT / "results" / "papers" / "summary.csv"
    assert summary.is_file(), "results/papers/summary.csv is not checked in"
    table = readme.split(ep.README_BEGIN, 1)[1].split(ep.README_END, 1)[0].strip()
    assert table == ep.render_readme_table(summary), "README's table is stale: run python -m evaluate_papers readme"


@pytest.mark.parametrize("paper", list(ep.PAPERS))
def test_papers__pages_show_every_experiment_plot_as_checked_in(paper):
    """issue 28 F7: each page's Figures section shows every checked-in sweep plot of its experiments, and the
    docs' copies equal the results' files (python -m evaluate_papers figures refreshes them)."""
    page = (ROOT / "docs" / "papers" / f"{paper}.md").read_text()
    plots = [(e, png) for e in ep.experiment_blocks(paper) for png in sorted((ROOT / "results" / paper / e).glob("*.png"))]
    assert plots, f"results/{paper}/ has no plots"
    shown = re.findall(r"!\[[^\]]*\]\(\.\./assets/papers/([^)]+)\)", page.partition(ep.FIGURES_HEADING)[2])
    assert shown == [f"{e}/{png.name}" for e, png in plots], "stale Figures section: python -m evaluate_papers figures"
    for e, png in plots:
        assert (ROOT / "docs" / "assets" / "papers" / e / png.name).read_bytes() == png.read_bytes()


def test_papers__publish_reaches_the_experiments_it_runs(monkeypatch, tmp_path):
    """publish=true writes each experiment into the checked-in results/: evaluate.py must be told so (it refuses a
    checked-in out= without publish=true), and without publish it is not."""
    seen = []
    monkeypatch.setattr(ep.evaluate_cli, "run", lambda cfg: seen.append(bool(cfg.publish)))
    monkeypatch.setattr(ep, "compare_experiment", lambda *a, **k: [])
    (tmp_path / "oinc").mkdir()
    for publish in (True, False):
        ep.run_experiment("oinc", "oinc_table2", {}, quick=True, results=tmp_path, publish=publish)
    assert seen == [True, False]
