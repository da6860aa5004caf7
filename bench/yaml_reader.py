"""What the bounded YAML reader costs: `workflows.safeyaml.load_all` (event scan, then the C safe loader)
against the C safe loader alone, on a large legitimate Workflow, and how fast a bomb is refused.

    .venv/bin/python bench/yaml_reader.py [--steps 8000] [--repeat 5]

The Workflow has `--steps` sequential steps, each a template with a container, args and a scalar anchor
reused by alias (as Argo users write images). Prints the text size, best-of-N times of both readers, the
overhead ratio, and the time to refuse a nine-level billion-laughs document (10^9 leaves expanded).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import limits
from workflows import safeyaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def workflow_text(steps: int) -> str:
    lines = [
        "apiVersion: argoproj.io/v1alpha1",
        "kind: Workflow",
        "metadata: {generateName: big-}",
        "spec:",
        "  entrypoint: main",
        "  templates:",
        "  - name: main",
        "    steps:",
    ]
    lines += [f"    - - {{name: s{n}, template: t{n}}}" for n in range(steps)]
    for n in range(steps):
        image = "&image python:3.11" if n == 0 else "*image"
        lines += [
            f"  - name: t{n}",
            "    container:",
            f"      image: {image}",
            f"      args: [train.py, --shard, '{n}', --epochs, '3']",
            "      resources: {limits: {cpu: 500m, memory: 1Gi}}",
        ]
    return "\n".join(lines) + "\n"


def bomb() -> str:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, 10)]
    return "\n".join(lines) + "\n"


def best(repeat: int, call) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    text = workflow_text(args.steps)
    plain = best(args.repeat, lambda: list(yaml.load_all(text, Loader=LOADER)))
    # Bounds wide enough for any --steps: the bench measures the scan, not the refusal.
    large = 64 * 1024 * 1024
    with limits.overridden(yaml_bytes=large, yaml_values=10_000_000, yaml_expanded_bytes=large):
        bounded = best(args.repeat, lambda: safeyaml.load_all(text))
    print(f"settings: steps={args.steps} repeat={args.repeat} libyaml={LOADER is not yaml.SafeLoader}")
    print(f"document: {len(text) / 1e6:.2f} MB")
    print(f"C safe loader alone:       {plain * 1000:8.1f} ms")
    print(f"safeyaml (scan + load):    {bounded * 1000:8.1f} ms  ({bounded / plain:.2f}x)")

    bomb_text = bomb()

    def refuse() -> None:
        try:
            safeyaml.load_all(bomb_text)
        except safeyaml.YamlRefused:
            return
        raise AssertionError("the bomb was not refused")

    print(f"bomb ({len(bomb_text)} bytes, 10^9 leaves) refused in {best(args.repeat, refuse) * 1e6:.0f} µs")


if __name__ == "__main__":
    main()
