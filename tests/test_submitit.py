"""A 2-job sweep through Hydra's submitit launcher on this machine (issue 28 F11): ``hydra/launcher=submitit_local``
is the code path of ``submitit_slurm`` (the jobs are pickled, submitted, run in their own processes and their
results collected), so a sweep that passes here fails on a cluster only for cluster reasons."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="hydra-submitit-launcher is not installed")

ROOT = Path(__file__).resolve().parents[1]
TINY = ["steps=100", "algo.learning_starts=50", "algo.batch_size=16", "eval.episodes=1", "eval.freq=100",
        "checkpoint_freq=100", "eval.reference=false", "eval.bound=false", "progress=false"]


# slow (11 s): the launcher's own processes; python -m pytest -m slow runs it
@pytest.mark.slow
def test_submitit_local__a_two_seed_sweep_runs_one_job_per_seed(tmp_path):
    out = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "-m", "env=uec-v0", "algo=sac", "seed=0,1", *TINY, f"out={out}",
         "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10", "hydra.launcher.cpus_per_task=1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = sorted(p for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert [p.name.split("__")[:3] for p in runs] == [["uec-v0", "sac", "0"], ["uec-v0", "sac", "1"]]
    for run in runs:
        assert (run / "model.zip").is_file()
        assert yaml.safe_load((run / "config.yaml").read_text())["seed"] == int(run.name.split("__")[2])
    jobs = [p for p in (out / ".submitit").iterdir() if p.is_dir() and p.name.isdigit()]
    assert len(jobs) == 2, "submitit keeps one log folder per job"
