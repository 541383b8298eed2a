"""Finished sweep points, kept so that an interrupted experiment resumes where it stopped.

evaluate.py runs a sweep point by point into ``<out>/<sweep>/<value>/``. When a point has finished, its summary
rows go to ``point.json`` in that folder with a fingerprint of what decided them: the point's resolved config and the
code (the commit, plus a hash of the uncommitted changes to tracked files). A later run with the same ``out=`` (the
papers' runner always uses the same folders) reuses every point whose fingerprint matches and runs the others, so a
full-size experiment can be spread over several sessions or machines, and a killed run loses at most the point it
was running. ``reuse=false`` runs every point again. The file is written atomically (a temporary file, then a
rename), so a point killed while it is being saved is simply run again.
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
FORMAT = 1


def code_version(root: Path = ROOT) -> str:
    """The commit of ``root`` and, when tracked files differ from it, a hash of the difference (so an edit of the
    code is a different version); the package version outside a git clone."""
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


def fingerprint(point: DictConfig, code: str) -> str:
    """A hash of a point's resolved config (the keys that cannot change its rows left out) and the code version."""
    config = OmegaConf.to_container(point, resolve=True)
    for key in ("out", "progress", "publish", "reuse", "hydra"):
        config.pop(key, None)
    text = json.dumps({"config": config, "code": code, "format": FORMAT}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def load_point(folder: Path, key: str) -> list[dict[str, Any]] | None:
    """The rows of the finished point in ``folder`` if its fingerprint is ``key``; None otherwise (no file, another
    config or code, an unreadable file)."""
    path = folder / POINT_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("fingerprint") != key or not isinstance(data.get("rows"), list):
        return None
    return data["rows"]


def save_point(folder: Path, key: str, rows: list[dict[str, Any]], code: str) -> Path:
    """Write ``rows`` as the finished point of ``folder`` (atomically)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / POINT_FILE
    tmp = path.with_name(f".{POINT_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"fingerprint": key, "code": code, "format": FORMAT, "rows": rows}, default=_plain))
    os.replace(tmp, path)
    return path


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
