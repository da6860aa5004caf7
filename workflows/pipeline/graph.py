"""Shape checks on step graphs: every edge lands on a step, every step is reachable, and nothing loops."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from .errors import Problems

Edges = Callable[[str], Iterable[tuple[str, str]]]


def check_edges_exist(
    steps: Mapping[str, object], edges: Edges, describe: Callable[[str], str], problems: Problems
) -> None:
    """Every ``next``/``on_failure``/``depends`` names a step of the same graph."""
    for name in steps:
        for field_name, target in edges(name):
            if target not in steps:
                problems.add(describe(name), field_name, f"'{target}' is not a step here{_known(steps)}")


def reachable_from(start: str, steps: Mapping[str, object], edges: Edges) -> list[str]:
    """The steps reachable from ``start``, in the order a breadth-first walk meets them."""
    order = [start]
    seen = {start}
    for name in order:
        for _, target in edges(name):
            if target in steps and target not in seen:
                seen.add(target)
                order.append(target)
    return order


def find_cycle(steps: Mapping[str, object], edges: Edges) -> tuple[list[str], str] | None:
    """A cycle as (the steps around it, the field that closes it), or None; Argo DAGs cannot loop."""
    visiting: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str) -> tuple[list[str], str] | None:
        state[name] = "visiting"
        visiting.append(name)
        for field_name, target in edges(name):
            if target not in steps:
                continue
            if state.get(target) == "visiting":
                return [*visiting[visiting.index(target) :], target], field_name
            if target not in state:
                found = visit(target)
                if found:
                    return found
        visiting.pop()
        state[name] = "done"
        return None

    for name in steps:
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


def _known(steps: Mapping[str, object]) -> str:
    names = sorted(steps)
    return f" (steps: {', '.join(names)})" if len(names) <= 12 else ""
