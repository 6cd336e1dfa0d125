"""The README and docs link only to what exists, and cite no document outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "CHANGELOG.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: Design records of the project's authors, not shipped with it: a reader cannot open them.
OUTSIDE = re.compile(r"ARCHITECTURE\.md|CONVENTIONS\.md|\bseeds?/|\bseed \d{3}\b|\bADR[- ]?\d", re.IGNORECASE)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists() or anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_reference_to_documents_outside_the_repository(page: Path) -> None:
    assert OUTSIDE.findall(page.read_text()) == []


def test_the_readme_starts_with_the_quickstart() -> None:
    """What it is, install, a five-step quickstart, then links: the first view code comes early."""
    readme = (ROOT / "README.md").read_text()
    headings = re.findall(r"^## (.+)$", readme, re.MULTILINE)
    assert headings[:2] == ["Installing in your site", "Quickstart"]
    steps = re.findall(
        r"^### (\d)\. ", readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0], re.MULTILINE
    )
    assert steps == ["1", "2", "3", "4", "5"]
    assert readme.index("def converse(") < len(readme) // 2
