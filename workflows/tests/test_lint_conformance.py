"""Every document of Argo's own examples lints clean: the linter never rejects what Argo accepts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from workflows.lint import LINTED_KINDS, TemplateIndex, lint_document, load_file

# The corpus lives beside the checkout (../shared/conformance); it is never copied into the repository.
EXAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "argo-examples"
EXAMPLE_FILES = sorted(EXAMPLES.rglob("*.yaml"))


@pytest.fixture(scope="module")
def example_templates() -> TemplateIndex:
    """The examples' WorkflowTemplates and ClusterWorkflowTemplates, loaded first as Argo's tests do."""
    return TemplateIndex.from_documents(document for path in EXAMPLE_FILES for document in load_file(path))


def test_the_corpus_of_argo_examples_is_beside_the_checkout():
    assert len(EXAMPLE_FILES) == 217, f"expected Argo's 217 example files in {EXAMPLES}"


def test_the_corpus_holds_the_documents_its_readme_counts():
    kinds = Counter(document.get("kind") for path in EXAMPLE_FILES for document in load_file(path))
    assert {kind: kinds[kind] for kind in (*LINTED_KINDS, "WorkflowEventBinding")} == {
        "Workflow": 199,
        "WorkflowTemplate": 13,
        "ClusterWorkflowTemplate": 6,
        "CronWorkflow": 5,
        "WorkflowEventBinding": 2,
    }


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda path: str(path.relative_to(EXAMPLES)))
def test_every_argo_example_lints_clean(path: Path, example_templates: TemplateIndex):
    problems = [
        f"{result.kind}/{result.name}: {error.message}"
        for result in (lint_document(document, example_templates) for document in load_file(path))
        for error in result.errors
    ]
    assert problems == []


def test_all_225_argo_documents_are_linted_and_pass(example_templates: TemplateIndex):
    results = [
        lint_document(document, example_templates) for path in EXAMPLE_FILES for document in load_file(path)
    ]
    linted = [result for result in results if result.linted]
    assert len(linted) == 225
    assert all(result.ok for result in linted)
