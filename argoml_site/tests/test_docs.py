"""The documentation cites only pages a reader of this repository has: every `*.md` file that the README or a
page of docs/ names (in a link or in text) exists here, beside the page or from the repository's root."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# A file name ending in .md, not part of a longer word or path (a URL's path is skipped below).
CITED = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.md)(?![\w/-])")
URL = re.compile(r"https?://\S+")
# Pages of other projects that a page quotes by name, not files of ours.
OTHER_PROJECTS = {("pipelines.md", "docs/argo.md")}  # magnus-extensions' page on Argo


def cited_files(page: Path) -> set[str]:
    return set(CITED.findall(URL.sub("", page.read_text())))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_page_a_doc_cites_is_in_the_repository(page):
    missing = [
        name
        for name in sorted(cited_files(page))
        if (page.name, name) not in OTHER_PROJECTS
        and not (page.parent / name).exists()
        and not (REPO / name).exists()
    ]
    assert missing == [], f"{page.relative_to(REPO)} cites files this repository does not have"


def test_the_check_sees_a_citation_of_a_missing_page(tmp_path):
    page = tmp_path / "install.md"
    page.write_text("five kinds of process (ARCHITECTURE.md §6); see [security](security.md#limits)\n")
    assert cited_files(page) == {"ARCHITECTURE.md", "security.md"}
