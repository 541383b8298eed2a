"""The wheel is complete (issue 28, F1-F3): built from this tree, installed into a fresh venv and used from a
temporary directory outside any clone, it makes every env, lists and loads the shipped agents, trains 100 steps
with the packaged configs and evaluates a shipped agent through the installed entry points.

The venv sees the system's site-packages (torch, SB3, ... are not downloaded again) but installs the wheel itself
with ``--no-deps``; the test checks that the suite's packages are imported from the venv, not from the clone. When
pytest itself runs in a venv (as README's set-up does), the new venv reads that venv's site-packages as well.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.name for p in (ROOT / "agents" / "pretrained").iterdir() if (p / "provenance.yaml").is_file())

CHECK_INSTALL = """
import json, sys
import gymnasium as gym
import edge_sched_gym, envs, offline, agents
from agents import pretrained
from offline.registry import make_policy
made = {}
for env_id in edge_sched_gym.ENV_IDS:
    env = gym.make("edge_sched_gym:" + env_id)
    env.reset(seed=0)
    made[env_id] = env.spec.id
agent_env = gym.make("UEC-v0")
policy = make_policy("UEC-v0", "pretrained:uec-v0-sac", agent_env)
obs, info = agent_env.reset(seed=0)
policy.reset(agent_env)
action = int(policy.act(obs, info))
print(json.dumps({"files": [m.__file__ for m in (edge_sched_gym, envs, offline, agents)], "made": made,
                  "agents": sorted(pretrained.available()), "action_ok": bool(info["action_mask"][action])}))
"""


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(venv bin folder, a working folder outside the clone, the environment to run in)."""
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    dist = base / "dist"
    # build from a copy of the working tree's files (tracked and not ignored): an in-tree build would leave build/
    # in the clone and package whatever a stale build/lib still holds
    source = base / "source"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(dist),
         str(source)], cwd=base, env=env)
    wheels = list(dist.glob("edge_sched_gym-*.whl"))
    assert len(wheels) == 1, wheels
    run([sys.executable, "-m", "venv", "--system-site-packages", str(base / "venv")], cwd=base, env=env)
    bin_dir = base / "venv" / "bin"
    if sys.prefix != sys.base_prefix:
        # pytest runs inside a venv: --system-site-packages gives the base interpreter's packages, not this venv's,
        # so the new venv also reads this one's site-packages (after its own; nested .pth files, such as the
        # clone's editable install, are not processed there)
        venv_site = run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=base, env=env).strip()
        outer = [p for p in site.getsitepackages() if Path(p).is_dir()]
        (Path(venv_site) / "outer-venv.pth").write_text("".join(f"{p}\n" for p in outer))
    run([str(bin_dir / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheels[0])],
        cwd=base, env=env)
    work = base / "work"
    work.mkdir()
    return bin_dir, work, env


def test_wheel__makes_every_env_and_loads_the_shipped_agents_outside_the_clone(installed):
    import json

    bin_dir, work, env = installed
    report = json.loads(run([str(bin_dir / "python"), "-c", CHECK_INSTALL], cwd=work, env=env).strip().splitlines()[-1])
    venv = bin_dir.parent.resolve()
    assert all(Path(f).resolve().is_relative_to(venv) for f in report["files"]), report["files"]
    import envs

    assert report["made"] == {env_id: env_id for env_id in envs.ENV_IDS}
    assert report["agents"] == SHIPPED
    assert report["action_ok"]


def test_wheel__entry_points_train_and_evaluate_with_the_packaged_configs(installed):
    bin_dir, work, env = installed
    out = run([str(bin_dir / "edge-sched-train"), "env=uec-v0", "algo=sac", "steps=100", "algo.learning_starts=50",
               "algo.batch_size=16", "eval.episodes=1", "eval.freq=100", "checkpoint_freq=100", "eval.reference=false",
               "eval.bound=false", "progress=false", "out=runs"], cwd=work, env=env)
    runs = list((work / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "model.zip").is_file() and (runs[0] / "config.yaml").is_file(), out
    out = run([str(bin_dir / "edge-sched-evaluate"), "env=uec-v0", "policies=[pretrained:uec-v0-sac,rescue]",
               "instances=1", "episodes=1", "progress=false", "out=evaluation"], cwd=work, env=env)
    assert (work / "evaluation" / "summary.csv").is_file(), out
    assert "uec-v0-sac" in (work / "evaluation" / "summary.csv").read_text(), out
    # the module form is the same program
    out = run([str(bin_dir / "python"), "-m", "edge_sched_gym.evaluate", "--help"], cwd=work, env=env)
    assert "experiment" in out and "env" in out
