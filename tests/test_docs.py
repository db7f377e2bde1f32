"""The README is a map and docs/ holds the rest: every relative link resolves, the README stays short,
and every docs page is reachable from it. Plain text checks, no jax: well under a second."""

from __future__ import annotations

import re
from pathlib import Path


def repo_root() -> Path:
    """The folder holding pyproject.toml, found by walking up (tests may sit one folder deeper)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").exists():
            return folder
    raise FileNotFoundError(f"no pyproject.toml above {__file__}")


ROOT = repo_root()
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
HISTORY = sorted((ROOT / "docs" / "history").glob("*.md"))  # what was tried and measured before: linked from pages
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
README_MAX_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)  # fenced code blocks
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # [text](target "title")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """The markdown without code blocks and code spans, where `[x](y)` is code, not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    slugs: set[str] = set()
    for title in HEADING.findall(FENCE.sub("", page.read_text())):
        base = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
        slug, n = base, 1
        while slug in slugs:
            slug, n = f"{base}-{n}", n + 1
        slugs.add(slug)
    return slugs


def links(text: str) -> list[str]:
    """Relative link targets of a page's text (external, mailto and same-page #anchor links left out)."""
    return [target for target in LINK.findall(prose(text)) if not re.match(r"^(https?:|mailto:|#)", target)]


def broken_links(page: Path, text: str | None = None) -> list[str]:
    """Each link of `page` (or of `text` as if it were at `page`) whose file, or whose #anchor in a
    markdown file, does not exist."""
    broken = []
    for target in links(page.read_text() if text is None else text):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve()
        if not resolved.exists():
            broken.append(f"{target} (no {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved})")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target} (no heading #{anchor} in {resolved.relative_to(ROOT)})")
    return broken


def test_every_relative_link_resolves():
    pages = [README, CONTRIBUTING, *PAGES, *HISTORY]
    broken = {page.relative_to(ROOT).as_posix(): broken_links(page) for page in pages}
    assert not {page: b for page, b in broken.items() if b}


def test_the_readme_is_a_map_not_the_manual():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines: move sections to docs/ (at most {README_MAX_LINES})"
    )


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README.read_text())}
    assert PAGES, "no docs/*.md pages found"
    assert not [page.name for page in [*PAGES, CONTRIBUTING] if page.resolve() not in linked]


def test_every_history_page_is_linked_from_the_page_it_explains():
    linked = {
        (page.parent / target.partition("#")[0]).resolve() for page in PAGES for target in links(page.read_text())
    }
    assert HISTORY and not [page.name for page in HISTORY if page.resolve() not in linked]


def test_every_docs_page_starts_with_a_title_and_a_sentence():
    for page in PAGES:
        head = page.read_text().split("\n", 3)
        assert head[0].startswith("# ") and not head[1].strip() and head[2].strip(), page.name


def test_the_checker_finds_a_broken_link_and_a_missing_anchor():
    text = (  # read as if it were a page in docs/, so its relative paths mean what they would there
        "# Probe\n\n[ok](../README.md) [ok](tests.md#notebooks) [web](https://example.com) [self](#probe)\n"
        "[gone](../jaxrl/no_such_module.py) [bad anchor](tests.md#no-such-heading)\n"
        "`[code](not/a/link.md)`\n\n```\n[fenced](not/a/link.md)\n```\n"
    )
    broken = broken_links(ROOT / "docs" / "probe.md", text)
    assert [b.split(" ")[0] for b in broken] == ["../jaxrl/no_such_module.py", "tests.md#no-such-heading"]
