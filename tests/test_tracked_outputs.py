"""Commands with an ``out=`` key never write a checked-in path without ``publish=true`` (issue 37, item 4).

Each command below is given a git-tracked ``out=`` (an existing checked-in file, or a new path under a folder of
checked-in files) without ``publish=true``: it must exit with one ``error:`` naming ``out`` and ``publish=true``,
before its work starts (the function doing the work is replaced by one that fails the test) and without
touching the path.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tracked(path: str) -> bool:
    """Whether ``path`` (relative to the clone) is a git-tracked file or a folder holding tracked files."""
    try:
        listed = subprocess.run(["git", "ls-files", "--", path], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    return bool(listed.stdout.strip())


def _run_cli(module: str, schema: str) -> Callable[[list[str]], Any]:
    """The module's ``python -m`` entry: ``run_cli(main, <schema>, doc, argv)``."""
    import importlib

    from agents.cli import run_cli

    mod = importlib.import_module(module)
    return lambda argv: run_cli(mod.main, getattr(mod, schema), mod.__doc__, argv)


def _main(module: str) -> Callable[[list[str]], Any]:
    import importlib

    return importlib.import_module(module).main


#: (module, entry, argv, the tracked path written to, the functions that do the work)
CASES = [
    ("benchmarks.corais_model_size", _main, ["out=results/corais/model_size.csv"], "results/corais/model_size.csv",
     ["_main"]),
    ("benchmarks.corais_kick_guidance", _main, ["out=results/corais/kick_guidance.csv"],
     "results/corais/kick_guidance.csv", ["_main"]),
    ("benchmarks.corais_calibration", _main, ["versions=v1", "scales=10-5-100", "instances=1",
                                              "out=results/corais/calibration.csv"], "results/corais/calibration.csv",
     ["calibrate"]),
    ("benchmarks.plot_curves", _main, ["runs=[runs]", "out=docs/img/learning_curve_uec.png"],
     "docs/img/learning_curve_uec.png", ["plot", "expand_runs"]),
    ("agents.oinc.table2", lambda m: _run_cli(m, "Table2Config"), ["runs=[runs/x]", "out=results/oinc/table2_sacd"],
     "results/oinc/table2_sacd", ["expand_runs"]),
    ("agents.aset.study", lambda m: _run_cli(m, "StudyConfig"), ["runs=[runs/x]", "out=results/aset/dqn_study"],
     "results/aset/dqn_study", ["expand_runs"]),
    ("offline.render", _main, ["out=docs/img"], "docs/img", ["save_episode_picture"]),
    ("offline.ladder", _main, ["fingerprints", "out=results/ladder"], "results/ladder", ["write_fingerprints"]),
    ("offline.ladder", _main, ["submit", "rows.csv", "out=results/ladder/new_board"], "results/ladder/new_board",
     ["submit"]),
]


def _snapshot(path: Path) -> object:
    if path.is_file():
        return path.read_bytes(), path.stat().st_mtime_ns
    if path.is_dir():
        return sorted((str(p.relative_to(path)), p.stat().st_mtime_ns) for p in path.rglob("*"))
    return None


@pytest.mark.parametrize(("module", "entry", "argv", "target", "work"), CASES,
                         ids=[f"{c[0]}:{c[2][-1]}" for c in CASES])
def test_tracked_outputs__a_tracked_out_without_publish_is_refused_before_any_work(module, entry, argv, target, work,
                                                                                  monkeypatch, capsys):
    import importlib

    tracked_parent = next(p for p in (Path(target), *Path(target).parents) if _tracked(str(p)) or p == Path("."))
    if tracked_parent == Path("."):
        pytest.skip(f"{target} is not under a git-tracked path here (no git, or an installed copy)")
    mod = importlib.import_module(module)
    for name in work:
        def started(*_: Any, _name: str = name, **__: Any) -> None:
            raise AssertionError(f"{module}.{_name} ran although out= was refused")

        monkeypatch.setattr(mod, name, started)
    monkeypatch.chdir(ROOT)  # relative out= paths are read from the clone's root
    path = ROOT / target
    before = _snapshot(path)
    status: Any = None
    try:
        status = entry(module)(list(argv))
    except SystemExit as stop:
        status = stop.code
    err = capsys.readouterr().err + (status if isinstance(status, str) else "")
    assert status not in (None, 0), "a tracked out= without publish=true was accepted"
    assert "out=" in err and "publish=true" in err and "checked-in" in err, err
    assert "Traceback" not in err
    assert _snapshot(path) == before


@pytest.mark.parametrize(("module", "schema", "folder"), [("agents.aset.study", "StudyConfig", ("aset", "dqn_study")),
                                                          ("agents.oinc.table2", "Table2Config", ("oinc", "table2_sacd"))])
def test_tracked_outputs__studies_default_to_outputs_and_publish_to_results(module, schema, folder):
    import importlib

    from offline.provenance import ROOT as CLONE
    from offline.provenance import default_output, in_clone

    mod = importlib.import_module(module)
    config = getattr(mod, schema)
    assert mod.output_folder(config(runs=["x"])) == default_output(*folder)
    assert "outputs" in default_output(*folder).parts
    if in_clone():
        assert mod.output_folder(config(runs=["x"], publish=True)) == CLONE / "results" / Path(*folder)


@pytest.mark.parametrize("module", ["benchmarks.corais_model_size", "benchmarks.corais_kick_guidance"])
def test_tracked_outputs__benchmark_csvs_publish_to_their_checked_in_file(module, tmp_path):
    import importlib

    options = importlib.import_module(module).Options
    (tmp_path / "model_best.pt").write_bytes(b"")  # corais_model_size checks its runs hold a model
    extra = {"runs": [str(tmp_path)]} if "runs" in options.__dataclass_fields__ else {}
    assert options(**extra).out.startswith("outputs/corais/")
    assert options(**extra, publish=True).out.startswith("results/corais/")
    assert options(**extra, out=str(tmp_path / "x.csv")).out == str(tmp_path / "x.csv")


def test_tracked_outputs__an_untracked_out_is_accepted(tmp_path):
    from agents.aset.study import StudyConfig, output_folder

    assert output_folder(StudyConfig(runs=["x"], out=str(tmp_path / "study"))) == tmp_path / "study"
