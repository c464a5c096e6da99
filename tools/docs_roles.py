"""A griffe extension for the documentation build: docstrings here cross-reference with
reStructuredText roles (``:class:`~client_cache.SharedInformer```, what Python's own
tooling reads), which mkdocstrings would print as they are. :func:`markdown` rewrites each
role into an autorefs reference, a link when its target is documented and plain code
when it is not (a private module, the standard library), and each literal-block ``::``
into a colon. ``mkdocs.yml`` loads :class:`SphinxRoles`; ``tests/test_docs.py`` runs
:func:`markdown` over every docstring of the package and counts the markers left (none).
"""

from __future__ import annotations

import html
import re
from typing import Any

try:
    import griffe  # the [docs] extra; the tests import markdown() without it
except ImportError:  # pragma: no cover - the docs build has it
    griffe = None

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|data|attr|exc|obj|const|type):"
                  r"`(?P<body>[^`]+)`")
TITLED = re.compile(r"(?P<title>.*?)\s*<(?P<target>[^>]+)>$")
LITERAL = re.compile(r"(?<=\S)::$", re.M)  # "text::" opening a literal block
ALONE = re.compile(r"^(?P<indent>[ \t]*)::[ \t]*$", re.M)  # a "::" line of its own
LEFT = re.compile(r":(?:py:)?(?:class|meth|func|mod|data|attr|exc|obj|const|type):`|^\s*::\s*$",
                  re.M)


def _reference(match: re.Match[str]) -> str:
    body = match["body"].strip()
    titled = TITLED.fullmatch(body)
    if titled:
        title, target = titled["title"], titled["target"].lstrip("~.")
    else:
        target = body.lstrip("~.")
        title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
    code = f"<code>{html.escape(title)}</code>"
    return f'<autoref identifier="{html.escape(target)}" optional>{code}</autoref>'


def markdown(text: str) -> str:
    """``text`` with its roles as autorefs references and its ``::`` as colons."""
    text = ROLE.sub(_reference, text)
    text = ALONE.sub("", text)
    return LITERAL.sub(":", text)


def markers_left(text: str) -> list[str]:
    """The role openings and lone ``::`` lines :func:`markdown` left in ``text``."""
    return LEFT.findall(text)


class SphinxRoles(griffe.Extension if griffe is not None else object):  # type: ignore[misc]
    """Rewrites each loaded object's docstring with :func:`markdown`, and keeps a class's
    special members (``__init__``, ``__slots__``) out of the reference, which the
    ``public`` filter (a module's ``__all__``) would otherwise show."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._rewrite(pkg)

    def _rewrite(self, obj: griffe.Object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
        for name, member in list(obj.members.items()):
            if member.is_alias:
                continue  # rewritten where it is defined
            if obj.is_class and name.startswith("_") and name != "__init__":
                # removed, not marked private: a class re-exported by a package face is
                # shown through alias members griffe makes anew, which do not keep a
                # ``public = False`` (``__init__`` stays: it is merged into the class)
                del obj.members[name]
                continue
            self._rewrite(member)
