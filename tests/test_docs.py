"""README stays short, every relative link in README and docs/ resolves, every experiment is documented, and
the mkdocs-material site builds with ``mkdocs build --strict`` (when mkdocs is installed: the ``docs`` extra)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_MAX_LINES = 200

#: [text](target) and ![alt](target); the target ends at the first space (an optional "title" follows).
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def relative_links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link in ``path`` that is not external, outside code blocks and spans."""
    links, in_fence = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue  # http(s):, mailto:, ... and anchors within the page
            links.append((number, target))
    return links


def test_docs__readme_is_at_most_200_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move text to docs/"


def test_docs__every_relative_link_points_at_an_existing_file():
    broken = []
    for path in markdown_files():
        for number, target in relative_links(path):
            file = target.split("#", 1)[0]
            if not (path.parent / file).resolve().exists():
                broken.append(f"{path.relative_to(ROOT)}:{number}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_docs__the_link_checker_sees_links_and_skips_code(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("see [a](a.md#x) and ![img](img/b.png \"t\") and [web](https://x.org) and [here](#y)\n"
                    "`[not](code.md)`\n```\n[not](fenced.md)\n```\n")
    assert relative_links(page) == [(1, "a.md#x"), (1, "img/b.png")]


def test_docs__every_experiment_config_is_named_on_the_reproduce_page():
    page = (DOCS / "reproduce.md").read_text(encoding="utf-8")
    experiments = sorted(p.stem for p in (ROOT / "edge_sched_gym" / "conf" / "experiment").glob("*.yaml"))
    assert experiments, "edge_sched_gym/conf/experiment/ has no experiment configs"
    missing = [name for name in experiments if f"`{name}`" not in page]
    assert not missing, f"experiments not named (as `name`) in docs/reproduce.md: {missing}"


def test_docs__every_page_is_in_the_mkdocs_nav():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    missing = [page for page in pages if f": {page}" not in config]
    assert not missing, f"docs pages missing from mkdocs.yml's nav: {missing}"


def test_docs__mkdocs_build_strict_passes(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")  # the mkdocs-material theme: pip install ".[docs]"
    pytest.importorskip("mkdocstrings_handlers.python")  # the API reference (docs/api.md): pip install ".[docs]"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()


# ---------------------------------------------------------------- the API reference, the tutorial, the ladder plots

API_PAGE = DOCS / "api.md"
TUTORIAL = DOCS / "tutorial.md"
#: a ```python block immediately followed by the ```text block of its output
SNIPPET = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.S)


def test_docs__the_api_page_documents_what_a_user_calls():
    page = API_PAGE.read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: ([\w.]+)", page, re.M))
    expected = {"edge_sched_gym.score", "envs.problems", "envs.uec.env.UECEnv", "envs.oinc.env.OINCEnv",
                "envs.aset.env.ASETEnv", "envs.aset.env.ASETEnvV1", "envs.corais.env.CoRaiSEnv",
                "envs.corais.env.CoRaiSEnvV1", "offline.protocol", "offline.registry", "offline.runner.evaluate",
                "agents.loading.load_run_policy"}
    assert expected <= documented, f"docs/api.md lacks {sorted(expected - documented)}"
    from envs.problems import PROBLEMS  # every registered env's class is on the page

    entry_classes = {problem.entry_point.replace(":", ".") for problem in PROBLEMS.values()}
    assert entry_classes <= documented, f"env classes missing from docs/api.md: {sorted(entry_classes - documented)}"


def test_docs__every_api_identifier_resolves_statically():
    """mkdocstrings reads the sources with griffe, without importing them: each ``::: path`` must resolve so."""
    griffe = pytest.importorskip("griffe")
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    missing = []
    for path in re.findall(r"^::: ([\w.]+)", API_PAGE.read_text(encoding="utf-8"), re.M):
        module, _, rest = path.partition(".")
        try:
            obj = loader.load(module)
            for part in rest.split(".") if rest else []:
                obj = obj[part]
        except (KeyError, ImportError, griffe.AliasResolutionError) as err:
            missing.append(f"{path} ({err!r})")
    assert not missing, f"docs/api.md names objects griffe cannot find: {missing}"


def test_docs__the_griffe_extension_turns_sphinx_roles_into_code_and_separates_lists():
    pytest.importorskip("griffe")
    import importlib.util

    spec = importlib.util.spec_from_file_location("griffe_roles", DOCS / "griffe_roles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "see :func:`make_policy`, :class:`~offline.protocol.Policy` and :data:`PROBLEMS`, then::\n\n    code"
    assert module.rewrite(text) == "see `make_policy`, `offline.protocol.Policy` and `PROBLEMS`, then:\n\n    code"
    # a list straight after a code fence or a paragraph gets its blank line; items and continuations do not
    text = "```python\nx = 1\n```\n* a\n  more\n* b\ntext\n- c"
    assert module.rewrite(text) == "```python\nx = 1\n```\n\n* a\n  more\n* b\ntext\n\n- c"
    assert "griffe_roles.py:SphinxRolesAsCode" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def _tutorial_snippets() -> list[tuple[str, str]]:
    return SNIPPET.findall(TUTORIAL.read_text(encoding="utf-8"))


def test_docs__the_tutorial_scores_with_the_real_signature():
    """Every keyword the tutorial passes to edge_sched_gym.score is a parameter of it, and the pasted Score
    output has the fields its repr prints."""
    import inspect

    from edge_sched_gym.score import score

    text = TUTORIAL.read_text(encoding="utf-8")
    params = set(inspect.signature(score).parameters)
    used = set(re.findall(r"\b(split|quick|label|[a-z_]+)=", " ".join(re.findall(r"score\(([^)]*)\)", text))))
    assert used <= params, f"docs/tutorial.md passes {sorted(used - params)} to score(); it takes {sorted(params)}"
    scored = [out for code, out in _tutorial_snippets() if "score(" in code]
    assert scored and all(out.startswith("Score(") and "normalised" in out and "per decision" in out for out in scored)


@pytest.mark.parametrize("index", [0, 1])
def test_docs__the_tutorials_first_snippets_print_what_the_page_shows(index):
    """Make an env / run a policy: seeded, so the page's output is exactly what the code prints."""
    code, expected = _tutorial_snippets()[index]
    assert "score(" not in code  # the scoring snippets take ~40 s: their form is checked above
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == expected


def _ladder_row(set_label: str, rung: str, policy: str, score: float, half: float) -> dict:
    return {"set": set_label, "rung": rung, "policy": policy, "normalised": score, "normalised_lo": score - half,
            "normalised_hi": score + half}


def test_docs__the_ladder_plot_zooms_on_the_rows_near_the_strongest_heuristic(tmp_path):
    from offline.ladder import focus_window, plot_env

    rows = [_ladder_row("held_out_instances", "random", "random", 0.0, 0.1),
            _ladder_row("held_out_instances", "paper", "weak", 0.3, 0.05),
            _ladder_row("held_out_instances", "ours", "strong", 1.0, 0.04),
            _ladder_row("held_out_instances", "learner", "agent", 1.05, 0.03),
            _ladder_row("held_out_instances", "bound", "far_bound", 1.7, 0.1)]
    lo, hi = focus_window(rows)
    assert 0.3 < lo < 0.96 and 1.08 < hi < 1.7  # random, the weak baseline and the far bound are clipped
    assert hi - lo < 0.5  # the 0.9-1.1 region fills most of the axis, not a fifth of it
    lo1, hi1 = focus_window([_ladder_row("s", "ours", "a", 1.0, 0.0), _ladder_row("s", "ours", "b", 0.999, 0.0)])
    assert lo1 < 0.999 and hi1 > 1.0 and hi1 - lo1 >= 0.12  # ties still get a readable range
    path = tmp_path / "ladder.png"
    plot_env("Toy-v0", rows + [{**row, "set": "training_instance"} for row in rows], path)
    assert path.is_file() and path.stat().st_size > 10_000
