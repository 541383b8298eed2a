"""The house's rules, checked on the source: imports run one way, no import circles, no sys.path edits,
and every list of problems derives from the one problem registry."""

from __future__ import annotations

import ast
import itertools
import subprocess
from pathlib import Path

import pytest
import yaml

import envs
from envs.problems import PROBLEMS

ROOT = Path(__file__).resolve().parents[1]
#: envs ← offline ← agents ← entry points: a module may import only from its own layer or lower ones.
LAYERS = {"envs": 0, "offline": 1, "agents": 2, "edge_sched_gym": 3, "train": 3, "evaluate": 3, "evaluate_papers": 3,
          "benchmarks": 3}
SUITE_PACKAGES = ("envs", "offline", "agents")


def source_files() -> list[Path]:
    files = [ROOT / "train.py", ROOT / "evaluate.py", ROOT / "evaluate_papers.py"]
    for folder in (*SUITE_PACKAGES, "edge_sched_gym", "benchmarks"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def walk_outside_main_guard(tree: ast.AST):
    """Every node except those under ``if __name__ == "__main__":`` (a script re-importing itself under
    its module name, so launchers can pickle its functions, is not an import circle)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test).replace("'", '"') == '__name__ == "__main__"':
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def imported_modules(path: Path) -> set[str]:
    """Every suite module ``path`` imports anywhere (top level, inside functions, under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in walk_outside_main_guard(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if is_module(candidate) else base)
    return {name for name in found if name.split(".")[0] in LAYERS and is_module(name)}


GRAPH = {module_name(p): imported_modules(p) for p in source_files()}


def test_house__imports_run_one_way():
    backward = [
        f"{source} imports {target}"
        for source, targets in GRAPH.items()
        for target in targets
        if LAYERS[target.split(".")[0]] > LAYERS[source.split(".")[0]]
    ]
    assert not backward, "imports must run envs <- offline <- agents <- entry points:\n" + "\n".join(backward)


def test_house__the_import_direction_check_sees_a_backward_import(tmp_path):
    """The check is not vacuous: a function-level import of agents from offline is found."""
    fake = ROOT / "offline" / "_house_probe.py"
    fake.write_text("def f():\n    from agents.loading import resolve_policy\n    return resolve_policy\n")
    try:
        assert "agents.loading" in imported_modules(fake)
    finally:
        fake.unlink()


def test_house__no_import_circles():
    """No module reaches itself through suite imports (delayed imports count: they only hide a circle)."""
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH.get(node, ())):
            if state.get(nxt) == 1:
                circles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)
    # a package __init__ importing its own submodules is how packages export names, not a circle
    real = [c for c in circles if not any(b.startswith(a + ".") and is_module(a) and
                                          (ROOT.joinpath(*a.split(".")) / "__init__.py").is_file()
                                          for a, b in itertools.pairwise(c))]
    assert not real, "import circles:\n" + "\n".join(" -> ".join(c) for c in real)


def test_house__no_file_edits_sys_path():
    offenders = [
        str(p.relative_to(ROOT)) for p in [*source_files(), *(ROOT / "tests").rglob("*.py")]
        if p != Path(__file__) and ("sys.path.insert" in p.read_text() or "sys.path.append" in p.read_text())
    ]
    assert not offenders


def test_house__env_configs_are_the_registry_s_problems():
    configs = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "edge_sched_gym" / "conf" / "env").glob("*.yaml")}
    assert set(configs) == {p.config for p in PROBLEMS.values()}
    for problem in PROBLEMS.values():
        assert configs[problem.config]["id"] == problem.env_id
    assert tuple(PROBLEMS) == envs.ENV_IDS


@pytest.mark.parametrize("env_id", list(PROBLEMS))
def test_house__every_problem_has_the_same_shape(env_id):
    """envs/<p>/ exports Env, Scenario, Instance; offline/<p>/ is a package with policies and evaluation."""
    import importlib

    problem = PROBLEMS[env_id]
    package = importlib.import_module(f"envs.{problem.package}")
    env_class = problem.entry_point.rpartition(":")[2]
    for name in (env_class, "Scenario", "Instance"):
        assert name in package.__all__, f"envs.{problem.package} does not export {name}"
    offline_dir = ROOT / "offline" / problem.package
    for module in ("__init__", "policies", "evaluation"):
        assert (offline_dir / f"{module}.py").is_file(), f"offline/{problem.package}/{module}.py is missing"
    assert problem.preset_names(), f"{env_id} names no scenario presets"
    for folder in ("tests",):
        assert (ROOT / folder / problem.package).is_dir()


def test_house__a_foreign_envs_package_is_refused_with_a_clear_error(tmp_path):
    """The public index has an unrelated 'envs' package; if it shadows ours, offline says so at import."""
    import os
    import subprocess
    import sys

    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "__init__.py").write_text("VALUE = 'someone else'\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", "import offline"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "is not edge-sched-gym's" in result.stderr and "pip uninstall envs" in result.stderr


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_house__edge_sched_gym_makes_the_suite_s_envs_next_to_a_foreign_envs_folder(tmp_path):
    """issue 28 F9: a user's own envs/ in the working directory comes first on sys.path; the clash-proof import
    still registers and makes the suite's envs, and says which package it shadows."""
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "__init__.py").write_text("VALUE = 'someone else'\n")
    result = _python("import gymnasium as gym\nenv = gym.make('edge_sched_gym:UEC-v0')\nimport envs\n"
                     "print(env.reset(seed=0)[0].shape, envs.SUITE)", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "edge-sched-gym"
    assert "comes first on sys.path" in result.stderr and str(tmp_path / "envs") in result.stderr


def test_house__edge_sched_gym_refuses_an_already_imported_foreign_envs(tmp_path):
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "__init__.py").write_text("VALUE = 'someone else'\n")
    result = _python("import envs\nimport edge_sched_gym", tmp_path)
    assert result.returncode != 0
    assert "already imported" in result.stderr and "Import edge_sched_gym before it" in result.stderr
