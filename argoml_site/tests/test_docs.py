"""The documentation cites only pages a reader of this repository has: every `*.md` file that the README or a
page of docs/ names (in a link or in text) exists here, beside the page or from the repository's root, and
every link to a section finds its heading; and the docs name every setting the production code reads, so a
new setting without a word on it fails here."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import global_settings

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


# A Markdown link to a section: `[text](page.md#anchor)`, or `(#anchor)` on the same page.
SECTION_LINK = re.compile(r"\]\(((?:[\w.-]+/)*[\w-]+\.md)?#([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation but `-` and `_` dropped,
    spaces as `-` (a `#` line inside a fenced block is code, not a heading)."""
    text = FENCED.sub("", page.read_text())
    return {
        re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-") for title in HEADING.findall(text)
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_to_a_section_finds_its_heading(page):
    """The pointers the reference pages keep where figures were (docs/benchmarks.md#...) and every other
    link to a section land on a heading that exists."""
    broken = []
    for target, anchor in SECTION_LINK.findall(page.read_text()):
        linked = (
            page
            if not target
            else (page.parent / target if (page.parent / target).exists() else REPO / target)
        )
        if linked.exists() and anchor not in anchors(linked):
            broken.append(f"{target}#{anchor}")
    assert broken == [], f"{page.relative_to(REPO)} links to sections that do not exist"


def test_the_section_check_reads_headings_as_github_does(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n## The mirror's write path\n### Bounds on input (issue 27)\n```\n# not a heading\n```\n"
    )
    assert anchors(page) == {"title", "the-mirrors-write-path", "bounds-on-input-issue-27"}


# --- Every setting the code reads is documented ---------------------------------------------------------

#: argoml_site/env.py's typed readers: their first argument is the variable's name.
ENV_READERS = {"env_str", "env_bool", "env_int", "env_float", "env_list", "env_choice"}
SETTINGS_MODULE = REPO / "argoml_site" / "settings.py"


def production_modules() -> list[Path]:
    """The import-linter's root packages but the simulator, the deploy scripts and manage.py; no tests or
    migrations (they read settings a test sets, or a schema of the past)."""
    roots = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
    paths = [REPO / "manage.py", *(REPO / "deploy").glob("*.py")]
    for root in sorted(set(roots) - {"kubesim"}):
        paths.extend(REPO.joinpath(root).rglob("*.py"))
    return [path for path in paths if not {"tests", "migrations"} & set(path.relative_to(REPO).parts)]


def environment_reads(tree: ast.AST) -> Iterator[str]:
    """Variables read by name: `env_int("NAME", ...)`, `os.environ.get("NAME")`, `os.environ["NAME"]`,
    `os.getenv("NAME")`. A name built at run time (limits' `MAX_<FIELD>`) is test_limits.py's to check."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func
            called = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
            on_environ = isinstance(function, ast.Attribute) and _is_environ(function.value)
            if called in ENV_READERS or called == "getenv" or (called == "get" and on_environ):
                yield str(node.args[0].value)
        elif (
            isinstance(node, ast.Subscript)
            and _is_environ(node.value)
            and isinstance(node.slice, ast.Constant)
        ):
            if isinstance(node.ctx, ast.Load):
                yield str(node.slice.value)


def _is_environ(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def settings_reads(tree: ast.AST) -> Iterator[str]:
    """Django settings read by name: `settings.NAME` and `getattr(settings, "NAME", ...)`."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "settings"
        ):
            if node.attr.isupper():
                yield node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "settings"
            and isinstance(node.args[1], ast.Constant)
        ):
            yield str(node.args[1].value)


def settings_defined(tree: ast.Module) -> set[str]:
    """The names argoml_site/settings.py assigns at module level."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def undocumented_settings(modules: list[Path], docs_text: str) -> dict[str, list[str]]:
    """Each name a deployment can set that no page mentions, with the modules that read it.

    A deployment sets the environment variables the code reads; a Django setting the code reads is set
    through one of those when argoml_site/settings.py assigns it (or is a constant there), and is Django's
    own default otherwise; one that neither defines can only come from a settings override nobody is told
    about, so it must be documented by its own name.
    """
    defined = settings_defined(ast.parse(SETTINGS_MODULE.read_text()))
    readers: dict[str, list[str]] = {}
    for path in modules:
        tree = ast.parse(path.read_text(), str(path))
        wanted = set(environment_reads(tree))
        wanted.update(
            name
            for name in settings_reads(tree)
            if name not in defined and not hasattr(global_settings, name)
        )
        for name in wanted:
            readers.setdefault(name, []).append(
                str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
            )
    return {
        name: sorted(paths)
        for name, paths in sorted(readers.items())
        if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", docs_text)
    }


def test_every_setting_the_code_reads_is_documented():
    """README's "Configuration" and the pages of docs/ name every environment variable the production code
    reads and every Django setting it reads that settings.py does not define. A new one fails here until a
    page says what it does and its default (and whether it could be a constant instead)."""
    docs_text = "\n".join(page.read_text() for page in PAGES)
    undocumented = undocumented_settings(production_modules(), docs_text)
    assert undocumented == {}, f"no page of the docs names {', '.join(undocumented)}"


def test_the_settings_check_sees_each_way_of_reading_a_setting(tmp_path):
    module = tmp_path / "reader.py"
    module.write_text(
        "import os\n"
        "from django.conf import settings\n"
        'A = env_int("DOCUMENTED_ONE", 1)\n'
        'B = env_float("FROM_A_READER", 1.0)\n'
        'C = os.environ.get("FROM_ENVIRON_GET")\n'
        'D = os.environ["FROM_ENVIRON_ITEM"]\n'
        'E = os.getenv("FROM_GETENV")\n'
        'F = getattr(settings, "HIDDEN_BY_GETATTR", 3)\n'
        "G = settings.HIDDEN_BY_ATTRIBUTE\n"
        "H = settings.KUBE_WRITE_QPS, settings.DEBUG, settings.STATIC_URL  # settings.py's, Django's\n"
    )
    found = undocumented_settings([module], "`DOCUMENTED_ONE` does this")
    assert sorted(found) == [
        "FROM_A_READER",
        "FROM_ENVIRON_GET",
        "FROM_ENVIRON_ITEM",
        "FROM_GETENV",
        "HIDDEN_BY_ATTRIBUTE",
        "HIDDEN_BY_GETATTR",
    ]
