"""README's Quick-start commands leave ``git status`` clean in a fresh clone (issue 26): every generated file goes to a
git-ignored folder (runs/, outputs/) unless a command is given ``publish=true``.

The test clones this repository, lays the working tree's uncommitted changes over the clone (so it checks the code
as it is, and a pure clone in CI), commits them there, then runs each command of README's Quick-start block in the
clone at a tiny size (the overrides below: fewer steps, one instance and episode, one sweep point, one paper) and
checks ``git status --porcelain`` stays empty. A README command the table below does not know fails the test, so the
check follows the README.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAIN_TINY = ["steps=200", "algo.learning_starts=50", "algo.batch_size=16", "eval.episodes=1", "eval.freq=100",
              "checkpoint_freq=100", "eval.reference=false", "eval.bound=false", "progress=false"]
EVALUATE_TINY = ["instances=1", "episodes=1", "progress=false"]
#: extra overrides by (script, a distinguishing argument); the README's own arguments come first
TINY: dict[tuple[str, str], list[str]] = {
    ("train.py", "env=uec-v0"): TRAIN_TINY,
    ("train.py", "env=aset-v1"): [*TRAIN_TINY, "env.kwargs.horizon=20"],
    ("train.py", "algo=ppo_mask"): ["steps=512", "n_envs=4", "eval.episodes=1", "eval.freq=256", "checkpoint_freq=256",
                                    "eval.reference=false", "eval.bound=false", "progress=false"],
    ("evaluate.py", "env=uec-v0"): EVALUATE_TINY,
    ("evaluate.py", "experiment=rescue_fig7"): [
        *EVALUATE_TINY, "policies=[rescue,random]",
        "sweeps=[{name: arrival_probability, parameter: env.kwargs.scenario_overrides.mean_arrival_prob, "
        "values: [0.2]}]"],
    ("evaluate.py", "experiment=papers"): ["papers=[aset]", "progress=false"],
    ("evaluate.py", "env=corais-v1"): [*EVALUATE_TINY, "policies=[random1,list_greedy,corais_greedy]"],
    ("evaluate.py", "env=oinc-v0"): EVALUATE_TINY,
    ("evaluate.py", "env=aset-v1"): [*EVALUATE_TINY, "env.kwargs.horizon=5"],
    ("benchmarks/env_throughput.py", ""): ["seconds=0.05", "vector_seconds=0"],
}
SKIPPED = ("tensorboard",)  # a viewer, writes nothing


def quickstart_commands(readme: str) -> list[list[str]]:
    """The commands of README's Quick-start ``bash`` block (comments dropped)."""
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        line = re.split(r"\s{2,}#", line, maxsplit=1)[0].strip()
        if line and not line.startswith("#"):
            commands.append(shlex.split(line))
    return commands


def tiny_overrides(args: list[str]) -> list[str] | None:
    """The tiny-size overrides of one README command (None for a command that writes nothing)."""
    if args[0] in SKIPPED:
        return None
    assert args[0] == "python", args
    for (script, marker), extra in TINY.items():
        if args[1] == script and (not marker or marker in args[2:]):
            return extra
    raise AssertionError(f"README Quick-start command {' '.join(args)!r} has no tiny size in tests/test_quickstart.py")


def _git(clone: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True, check=True, env=env).stdout


def fresh_clone(target: Path) -> Path:
    """A clone of this repository with the working tree's uncommitted changes committed on top."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(target)], check=True)
    changed = _git(ROOT, "ls-files", "-m", "-o", "--exclude-standard").splitlines()
    deleted = set(_git(ROOT, "ls-files", "-d").splitlines())
    for name in changed:
        if name in deleted:
            (target / name).unlink(missing_ok=True)
            continue
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    _git(target, "add", "-A")
    if _git(target, "status", "--porcelain").strip():
        _git(target, "commit", "-q", "-m", "working tree")
    return target


def test_quickstart__readme_commands_all_have_a_tiny_size():
    commands = quickstart_commands((ROOT / "README.md").read_text())
    assert len(commands) >= 5
    for args in commands:
        tiny_overrides(args)


def test_quickstart__readme_commands_leave_a_fresh_clone_clean(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout")
    clone = fresh_clone(tmp_path / "clone")
    assert _git(clone, "status", "--porcelain") == ""
    env = {**os.environ, "PYTHONPATH": str(clone), "MPLBACKEND": "Agg"}
    commands = [(args, extra) for args in quickstart_commands((clone / "README.md").read_text())
                if (extra := tiny_overrides(args)) is not None]
    folders: dict[int, Path | str] = {}  # command index -> the run folder it printed

    def run(index: int) -> tuple[int, subprocess.CompletedProcess]:
        args, extra = commands[index]
        if any("<the run folder>" in a for a in args):  # the latest training command before it in README order
            folder = folders[max(i for i in folders if i < index)]
            args = [a.replace("runs/<the run folder>", str(folder)) for a in args]
        assert not any("<" in a for a in args), f"{args}: no run folder yet"
        return index, subprocess.run([sys.executable, *args[1:], *extra], cwd=clone, env=env, capture_output=True,
                                     text=True, timeout=600)

    # two at a time (the default test run is serial, so the second core is free); a command that needs a run
    # folder starts once the training commands before it have finished
    needs_folder = [i for i, (args, _) in enumerate(commands) if any("<the run folder>" in a for a in args)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        running = {pool.submit(run, i): i for i in range(len(commands)) if i not in needs_folder}
        finished: set[int] = set()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            beside = [" ".join(commands[i][0]) for i in running.values()]
            for future in done:
                running.pop(future)
                index, result = future.result()
                label = " ".join(commands[index][0])
                assert result.returncode == 0, f"{label}\n{result.stderr[-3000:]}"
                found = re.search(r"^run folder: (.+)$", result.stdout, flags=re.MULTILINE)
                if found:
                    path = Path(found.group(1))
                    folders[index] = path.relative_to(clone) if path.is_absolute() else found.group(1)
                finished.add(index)
                status = _git(clone, "status", "--porcelain")
                assert status == "", f"{label} (or one of {beside}) changed the checkout:\n{status}"
            for i in [i for i in needs_folder if all(j in finished for j in range(i))]:
                needs_folder.remove(i)
                running[pool.submit(run, i)] = i
    assert not needs_folder and len(finished) == len(commands)
