"""Where a generated number came from: the commit, the machine, the date and the command (one copy)."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

#: The repository root (the folder holding envs/, offline/, agents/); site-packages for a wheel install.
ROOT = Path(__file__).resolve().parent.parent


def in_clone(root: Path = ROOT) -> bool:
    """Whether the suite runs from a clone (checked-in results/, docs/ and README.md beside the packages)."""
    return (root / "pyproject.toml").is_file() and (root / "README.md").is_file()


def default_output(*parts: str) -> Path:
    """Where a command writes without ``out=``: the clone's git-ignored ``outputs/``, or, for an installed
    copy, ``outputs/`` in the working directory (never inside site-packages)."""
    return (ROOT if in_clone() else Path.cwd()) / "outputs" / Path(*parts)


def require_clone(what: str = "publish=true") -> Path:
    """The clone's root, for a command that refreshes checked-in files; ValueError for an installed copy."""
    if not in_clone():
        raise ValueError(f"{what} refreshes the checked-in files of a clone of edge-sched-gym, but this copy is "
                         f"installed in {ROOT}: run it in a clone (git clone ...; pip install -e .), or leave it out")
    return ROOT


def git_commit(root: Path = ROOT) -> str:
    """The short commit of ``root``, with ``+dirty`` when tracked files differ; ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return "unknown"
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def machine() -> str:
    """CPU architecture, core count and Python version."""
    return f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}"


def utc_now() -> str:
    return f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}"


def command_line(module: str | None = None) -> str:
    """The command that is running, as a user would type it (``python -m module args``)."""
    args = " ".join(shlex.quote(a) for a in sys.argv[1:])
    head = f"python -m {module}" if module else "python " + shlex.quote(Path(sys.argv[0]).name)
    return f"{head} {args}".strip()


def parse_key_values(argv: list[str], allowed: dict[str, str]) -> dict[str, str]:
    """``key=value`` arguments; raises ValueError naming an unknown key or a malformed argument and the valid
    keys (``allowed``: key -> one-line help), before anything runs."""
    out: dict[str, str] = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        key = key.lstrip("+")
        if not sep or not key:
            raise ValueError(f"argument {arg!r} is invalid: expected key=value with key in {sorted(allowed)}")
        if key not in allowed:
            raise ValueError(f"{key}={value!r} is not a known key; valid keys: {sorted(allowed)}")
        out[key] = value
    return out


def parse_bool(name: str, value: str | bool) -> bool:
    """``true``/``false`` (any case) as a bool; anything else raises naming ``name``."""
    if isinstance(value, bool):
        return value
    lowered = str(value).strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(f"{name}={value!r} is invalid: expected true or false")


def parse_count(name: str, value: str | int, minimum: int = 1) -> int:
    """An integer >= ``minimum``; anything else raises naming ``name``."""
    try:
        number = int(str(value))
    except ValueError:
        number = minimum - 1
    if number < minimum or str(value).strip().lstrip("+") != str(number):
        raise ValueError(f"{name}={value!r} is invalid: expected an integer >= {minimum}")
    return number


def check_writable_folder(key: str, folder: str | Path) -> None:
    """Raise ValueError ``<key>=<folder> is not writable: <why>`` unless files can be made under ``folder``.

    Probes by making (and removing) a temporary folder in ``folder`` or, when it does not exist yet, in
    its nearest existing parent, so nothing is left behind either way.
    """
    import tempfile

    path = Path(folder).expanduser()
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ValueError(f"{key}={folder} is not writable: {probe} is not a folder")
    try:
        Path(tempfile.mkdtemp(prefix=".write-probe-", dir=probe)).rmdir()
    except OSError as err:
        raise ValueError(f"{key}={folder} is not writable: cannot create files in {probe} ({err.strerror or err})") from None


def tracked_paths(root: Path = ROOT) -> set[Path] | None:
    """Every git-tracked file of the clone at ``root`` (absolute paths); None when ``root`` is not a git clone or
    git is not available."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    return {root / name for name in listed.stdout.decode(errors="replace").split("\0") if name}


def check_output_path(path: str | Path, *, publish: bool, key: str = "out", root: Path = ROOT) -> Path:
    """``path`` (an output file or folder) unless it is, or lies under, a git-tracked file or folder of the clone
    (a folder that holds tracked files, the clone's root itself aside): such a path needs ``publish=true``. Raises
    ValueError naming ``key`` before anything is computed or written; symbolic links are followed, so a link into
    the clone counts as the clone. Outside a clone (an installed copy) nothing is tracked."""
    if publish:
        return Path(path)
    root = root.resolve()
    target = Path(path).expanduser().resolve()
    if not target.is_relative_to(root) or target == root:
        return Path(path)
    tracked = tracked_paths(root)
    if tracked is None:  # no git: the clone's checked-in top-level entries count as tracked
        if not in_clone(root):
            return Path(path)
        tracked = {p for p in root.iterdir() if p.name not in ("runs", "outputs") and not p.name.startswith(".")}
    folders = {parent for t in tracked for parent in t.parents if parent != root and parent.is_relative_to(root)}
    for candidate in (target, *target.parents):
        if candidate == root:
            break
        if candidate in tracked or candidate in folders:
            what = "a checked-in file" if candidate in tracked else "a folder of checked-in files"
            raise ValueError(f"{key}={path} is invalid without publish=true: {candidate.relative_to(root)} is {what} "
                             f"of the clone; write under runs/ or outputs/ (git-ignored), or give publish=true to "
                             "change the checked-in files on purpose")
    return Path(path)
