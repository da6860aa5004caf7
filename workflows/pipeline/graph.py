"""Shape checks on step graphs: every edge lands on a step, every step is reachable, and nothing loops."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

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
    """A cycle as (the steps around it, the field that closes it), or None; Argo DAGs cannot loop.

    A depth-first walk with its own stack, not Python's: a chain of thousands of steps is a few hundred
    kilobytes of pipeline, and must not reach the interpreter's recursion limit."""
    state: dict[str, str] = {}
    for root in steps:
        if root in state:
            continue
        path: list[str] = [root]
        pending: list[Iterator[tuple[str, str]]] = [iter(edges(root))]
        state[root] = "visiting"
        while pending:
            advanced = False
            for field_name, target in pending[-1]:
                if target not in steps:
                    continue
                if state.get(target) == "visiting":
                    return [*path[path.index(target) :], target], field_name
                if target not in state:
                    state[target] = "visiting"
                    path.append(target)
                    pending.append(iter(edges(target)))
                    advanced = True
                    break
            if not advanced:
                state[path.pop()] = "done"
                pending.pop()
    return None


def _known(steps: Mapping[str, object]) -> str:
    names = sorted(steps)
    return f" (steps: {', '.join(names)})" if len(names) <= 12 else ""
