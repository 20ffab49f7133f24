"""README.md stays short and every relative markdown link of README.md and docs/ resolves.

A link `[text](target)` outside fenced code blocks whose target is not a URL or a pure anchor
must name an existing file or directory, relative to the page that holds it (`#anchor` and
`?query` parts are ignored).
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README_MAX_LINES = 250
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def doc_pages() -> list[pathlib.Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def relative_links(text: str) -> list[str]:
    """Targets of the relative links of markdown `text`, fenced code blocks left out."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    targets = [m.group(1) for m in LINK.finditer(prose)]
    return [t for t in targets if not EXTERNAL.match(t) and not t.startswith("#")]


def broken_links(page: pathlib.Path) -> list[str]:
    broken = []
    for target in relative_links(page.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not (page.parent / path).exists():
            broken.append(f"{page.relative_to(ROOT)}: {target}")
    return broken


def test_relative_links_resolve():
    broken = [b for page in doc_pages() for b in broken_links(page)]
    assert not broken, "broken relative links:\n" + "\n".join(broken)


def test_link_check_sees_links_and_skips_code():
    text = "[a](docs/x.md) [b](https://e.org) [c](#top) ![i](img.png)\n```\n[d](no.md)\n```\n"
    assert relative_links(text) == ["docs/x.md", "img.png"]


def test_readme_is_short_and_links_the_guide():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    assert "docs/README.md" in relative_links(text)
