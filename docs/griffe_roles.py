"""A griffe extension for the API reference (mkdocs.yml): the suite's docstrings name objects with Sphinx roles
(``:func:`make_policy```) and reST's ``::`` before a literal block, which markdown would print verbatim; this turns
each role into inline code (``make_policy``) and ``text::`` into ``text:``. It also puts a blank line before a bullet
list that directly follows a paragraph or a code fence (GitHub renders such a list, Python-Markdown runs it into the
paragraph)."""

from __future__ import annotations

import re
from typing import Any

import griffe

#: ``text::`` ending a line (reST: a literal block follows)
LITERAL_MARKER = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)
#: :func:`x`, :class:`~a.b.X`, :data:`X`, :mod:`m`, :meth:`C.m`, :attr:`a`, :exc:`E`
ROLE = re.compile(r":(?:py:)?(?:func|class|data|mod|meth|attr|exc|obj|const):`~?([^`]+)`")


#: a bullet list item
BULLET = re.compile(r"^\s*[*-] \S")
FENCE = re.compile(r"^\s*(```|~~~)")


def separate_lists(text: str) -> str:
    """``text`` with a blank line before each bullet list that follows a non-list line (outside code fences)."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        starts_list = BULLET.match(line) and out and out[-1].strip() and not BULLET.match(out[-1]) \
            and not out[-1].startswith((" ", "\t"))
        if starts_list and not in_fence:
            out.append("")
        if FENCE.match(line):
            in_fence = not in_fence
        out.append(line)
    return "\n".join(out)


def rewrite(text: str) -> str:
    """Roles -> inline code, ``text::`` -> ``text:``, lists separated (see the module docstring)."""
    return separate_lists(LITERAL_MARKER.sub(":", ROLE.sub(r"`\1`", text)))


class SphinxRolesAsCode(griffe.Extension):
    """Apply :func:`rewrite` to every docstring."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
