"""edge-sched-gym under a name no other package uses: ``import edge_sched_gym`` registers the suite's env ids.

    import gymnasium as gym
    env = gym.make("edge_sched_gym:UEC-v0")         # imports this package first, then makes the env

The suite keeps the generic top-level packages ``envs``, ``offline`` and ``agents`` (the layout its users
work with). A different ``envs`` can get in their way: a folder named ``envs/`` in the working directory, or
another distribution named ``envs``. Importing this package makes sure the ``envs`` that registers the ids is
the suite's:

* a foreign ``envs`` earlier on ``sys.path`` (e.g. the working directory's): the suite's is loaded from
  where this package is installed, with a warning that the other one is shadowed in this process;
* a foreign ``envs`` already imported: ImportError naming its file (import ``edge_sched_gym`` first);
* the suite's ``envs`` files overwritten or removed (both distributions install into the same folder):
  ImportError with the reinstall command for a wheel or for a clone.

The entry points train and evaluate with the packaged configs (``edge_sched_gym/conf/``)::

    edge-sched-train env=uec-v0 algo=sac             # = python -m edge_sched_gym.train = python train.py (clone)
    edge-sched-evaluate env=uec-v0                   # = python -m edge_sched_gym.evaluate = python evaluate.py
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType

#: The marker ``envs.SUITE`` carries in the suite's own ``envs``.
SUITE = "edge-sched-gym"
#: Where the suite's top-level packages are installed: the clone, or the environment's site-packages.
INSTALL_ROOT = Path(__file__).resolve().parents[1]
#: The Hydra configs of train.py and evaluate.py (package data, so the wheel's entry points have them too).
CONF_DIR = Path(__file__).resolve().parent / "conf"


def reinstall_hint() -> str:
    """The command that restores the suite's files, for a clone or for a wheel install."""
    if (INSTALL_ROOT / "pyproject.toml").is_file():
        return f"in the clone {INSTALL_ROOT}: `pip install -e .`"
    return "`pip install --force-reinstall --no-deps edge-sched-gym` (or the same with the wheel file you installed)"


def _is_suite(module: ModuleType) -> bool:
    return getattr(module, "SUITE", None) == SUITE


def load_envs() -> ModuleType:
    """The suite's ``envs`` package, imported (which registers the env ids); see the module docstring."""
    loaded = sys.modules.get("envs")
    if loaded is not None:
        if _is_suite(loaded):
            return loaded
        raise ImportError(
            f"a different package named 'envs' ({getattr(loaded, '__file__', None) or loaded}) is already imported "
            "in this process, so edge-sched-gym's cannot register its envs. Import edge_sched_gym before it."
        )
    ours = INSTALL_ROOT / "envs" / "__init__.py"
    if not ours.is_file() or f'SUITE = "{SUITE}"' not in ours.read_text(encoding="utf-8", errors="replace"):
        raise ImportError(
            f"edge-sched-gym's 'envs' package at {ours.parent} is missing or was overwritten (another "
            f"distribution named 'envs' installs into the same folder). Run `pip uninstall envs`, then {reinstall_hint()}."
        )
    spec = importlib.util.find_spec("envs")
    found = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    if found == ours.resolve():
        return importlib.import_module("envs")
    where = found.parent if found is not None else "a namespace folder"
    warnings.warn(
        f"a different 'envs' ({where}) comes first on sys.path; edge_sched_gym loads its own from {ours.parent}, "
        "so the other one cannot be imported in this process",
        stacklevel=3,
    )
    # import the suite's package from its file under the name 'envs'; its submodules then resolve through
    # its own __path__, whatever else sys.path holds
    spec = importlib.util.spec_from_file_location("envs", ours, submodule_search_locations=[str(ours.parent)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["envs"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["envs"]
        raise
    return module


_envs = load_envs()
#: The suite's env ids (from the one problem registry, :data:`envs.problems.PROBLEMS`).
ENV_IDS: tuple[str, ...] = _envs.ENV_IDS

__all__ = ["CONF_DIR", "ENV_IDS", "INSTALL_ROOT", "SUITE", "load_envs", "reinstall_hint", "score"]


def __getattr__(name: str) -> object:
    """``edge_sched_gym.score`` (and ``Score``), imported on first use so that ``import edge_sched_gym`` stays
    light (scoring needs the offline policies and the learners' loaders)."""
    if name in ("score", "Score"):
        module = importlib.import_module("edge_sched_gym.score")  # which sets this package's ``score`` to the module
        globals()["score"] = module.score  # the function, from now on (the module is callable too)
        return getattr(module, name)
    raise AttributeError(f"module 'edge_sched_gym' has no attribute {name!r}")
