"""Finished sweep points, kept so that an interrupted experiment resumes where it stopped.

evaluate.py runs a sweep point by point into ``<out>/<sweep>/<value>/``. When a point has finished, its summary
rows go to ``point.json`` in that folder with what decided them: a fingerprint of the point's resolved config, and
the code that ran it (a hash of every one of this project's source files the process had imported, of the
package data under envs/, offline/ and agents/, and the versions of the numerical libraries). A later run with the
same ``out=`` (the papers' runner always uses the same folders) reuses every point whose config matches and whose
recorded files are unchanged on disk, and runs the others. Commits that leave a point's code alone (docs, another
problem's modules) keep it, so a full-size experiment can be spread over several sessions or machines, and a killed
run loses at most the point it was running. ``reuse=false`` runs every point again. The file is written atomically
(a temporary file, then a rename), so a point killed while it is being saved is simply run again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from offline.provenance import ROOT

POINT_FILE = "point.json"
#: bumped when the file's layout changes (older files are then not reused)
FORMAT = 2
#: folders whose non-Python files (models, instance data) can change a point's rows
DATA_FOLDERS = ("envs", "offline", "agents")
#: sweep points reused by this process so far (the papers' runner reports how much of a run was reused)
REUSED: list[int] = [0]
#: libraries whose version can change a point's rows
LIBRARIES = ("numpy", "scipy", "highspy", "numba", "torch", "gymnasium", "stable_baselines3")


def code_version(root: Path = ROOT) -> str:
    """The commit of ``root`` and, when tracked files differ from it, a hash of the difference; the package version
    outside a git clone. Recorded with a point as provenance (reuse is decided by :func:`unchanged`)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode == 0:
            diff = subprocess.run(["git", "diff", "HEAD", "--no-ext-diff", "--binary"], cwd=root,
                                  capture_output=True, timeout=30)
            changes = hashlib.sha256(diff.stdout).hexdigest()[:16] if diff.stdout else ""
            return head.stdout.strip() + (f"+{changes}" if changes else "")
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"edge-sched-gym {version('edge-sched-gym')}"
    except PackageNotFoundError:
        return "unknown"


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:20]
    except OSError:
        return None


def _other_problem(relative: str, package: str | None) -> bool:
    """Whether ``relative`` lies in another problem's folder (``envs|offline|agents/<other>/``) than ``package``."""
    if package is None:
        return False
    from envs.problems import PROBLEMS

    parts = relative.split("/")
    others = {problem.package for problem in PROBLEMS.values()} - {package}
    return len(parts) > 2 and parts[0] in DATA_FOLDERS and parts[1] in others


def code_state(root: Path = ROOT, env_id: str | None = None) -> dict[str, Any]:
    """What the code that ran a point consists of: a hash per project source file imported so far (called after the
    point ran, so every module it used is included), per package data file, and the numerical libraries'
    versions. With ``env_id``, the folders of the other problems are left out: problems never import each other
    (the house's one folder per problem, imports running envs ← offline ← agents), so the registry's importing
    them all does not make them a point's code."""
    import sys

    package = None
    if env_id is not None:
        from envs.problems import get_problem

        package = get_problem(env_id).package
    root = root.resolve()
    files: dict[str, str | None] = {}
    for module in list(sys.modules.values()):
        location = getattr(module, "__file__", None)
        if not location or not location.endswith(".py"):
            continue
        path = Path(location).resolve()
        if (root in path.parents and path.is_file() and "site-packages" not in path.parts
                and ".venv" not in path.parts):
            files[path.relative_to(root).as_posix()] = _digest(path)
    for folder in DATA_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
                files[path.relative_to(root).as_posix()] = _digest(path)
    files = {name: digest for name, digest in files.items() if not _other_problem(name, package)}
    return {"files": dict(sorted(files.items())), "libraries": library_versions()}


def library_versions() -> dict[str, str | None]:
    """The installed version of each of :data:`LIBRARIES` (None if absent)."""
    from importlib.metadata import PackageNotFoundError, version

    libraries: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            libraries[name] = version(name.replace("_", "-"))
        except PackageNotFoundError:
            libraries[name] = None
    return libraries


def unchanged(state: Any, root: Path = ROOT) -> bool:
    """Whether every file recorded in ``state`` (from :func:`code_state`) still has its hash and the libraries have
    the same versions. A data file added since (a newly shipped model) does not count: a point reads one only if
    its config names it, and then the config differs."""
    if not isinstance(state, dict) or not isinstance(state.get("files"), dict):
        return False
    if state.get("libraries") != library_versions():
        return False
    return all(_digest(root / name) == digest for name, digest in state["files"].items())


def fingerprint(point: DictConfig) -> str:
    """A hash of a point's resolved config (the keys that cannot change its rows left out); the code is checked
    apart, file by file (:func:`unchanged`)."""
    config = OmegaConf.to_container(point, resolve=True)
    for key in ("out", "progress", "publish", "reuse", "hydra"):
        config.pop(key, None)
    text = json.dumps({"config": config, "format": FORMAT}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def load_point(folder: Path, key: str, root: Path = ROOT) -> list[dict[str, Any]] | None:
    """The rows of the finished point in ``folder`` if its fingerprint is ``key`` and the code it recorded is
    unchanged (:func:`unchanged`); None otherwise (no file, another config or code, an unreadable file)."""
    path = folder / POINT_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("fingerprint") != key or not isinstance(data.get("rows"), list):
        return None
    if data.get("format") != FORMAT or not unchanged(data.get("code_state"), root):
        return None
    return data["rows"]


def save_point(folder: Path, key: str, rows: list[dict[str, Any]], code: str, root: Path = ROOT,
               before: dict[str, Any] | None = None, env_id: str | None = None) -> Path:
    """Write ``rows`` as the finished point of ``folder`` (atomically), with the state of the code that ran it.
    ``before``: :func:`code_state` taken when the point started; a file edited while the point ran (its hash now
    differs) leaves the point unreusable, since the process may have run either version."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / POINT_FILE
    tmp = path.with_name(f".{POINT_FILE}.{os.getpid()}.tmp")
    state: dict[str, Any] | None = code_state(root, env_id)
    if before is not None and any(state["files"].get(name, digest) != digest
                                  for name, digest in before["files"].items()):
        print(f"[points] code changed on disk while {folder} ran: saved, but it will be run again", flush=True)
        state = None
    tmp.write_text(json.dumps({"fingerprint": key, "code": code, "format": FORMAT, "code_state": state,
                               "rows": rows}, default=_plain))
    os.replace(tmp, path)
    return path


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
