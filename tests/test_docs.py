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
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
