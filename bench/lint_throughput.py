"""Argo linter throughput: lint 1,000 example workflows and print documents per second.

    .venv/bin/python bench/lint_throughput.py [--documents 1000] [--repeat 3]

The documents cycle through Argo's own examples (ARGO_EXAMPLES_DIR, default
../shared/conformance/argo-examples beside the checkout; without them it says so and measures nothing),
with the WorkflowTemplates of that folder loaded first as a TemplateIndex, as an admission webhook holds them.
Prints the one-off cost of compiling the schema from hera's models, then best-of-N documents/s for the
whole batch and the slowest single document.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workflows.lint import LINTED_KINDS, TemplateIndex, lint_document, load_file  # noqa: E402
from workflows.lint.schema import document_schema  # noqa: E402

EXAMPLES = Path(os.environ.get("ARGO_EXAMPLES_DIR", REPO.parent / "shared" / "conformance" / "argo-examples"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    documents = [
        document
        for path in sorted(EXAMPLES.rglob("*.yaml"))
        for document in load_file(path)
        if isinstance(document, dict) and document.get("kind") in LINTED_KINDS
    ]
    if not documents:
        print(f"no Argo examples under {EXAMPLES} (set ARGO_EXAMPLES_DIR): nothing measured")
        return
    index = TemplateIndex.from_documents(documents)
    batch = list(itertools.islice(itertools.cycle(documents), args.documents))

    started = time.perf_counter()
    document_schema("Workflow")
    print(f"schema compiled from hera's models once: {time.perf_counter() - started:.3f} s")

    best = float("inf")
    slowest = 0.0
    invalid = 0
    for _ in range(args.repeat):
        started = time.perf_counter()
        for document in batch:
            began = time.perf_counter()
            result = lint_document(document, index)
            slowest = max(slowest, time.perf_counter() - began)
            invalid += not result.ok
        best = min(best, time.perf_counter() - started)
    print(f"examples: {len(documents)} distinct documents, {len(batch)} linted per run, {invalid} invalid")
    print(f"best of {args.repeat}: {best:.3f} s -> {len(batch) / best:,.0f} documents/s")
    print(f"slowest single document: {slowest * 1000:.2f} ms")


if __name__ == "__main__":
    main()
