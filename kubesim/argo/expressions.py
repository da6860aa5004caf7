"""The two small languages of Argo templates: `when` conditions and DAG `depends` expressions (pure).

`when` follows govaluate as Argo uses it: bare words are strings, numbers compare as numbers, with
== != < > <= >= =~ !~ && || ! and parentheses. `depends` combines task results (`A`, `A.Succeeded`,
`A.Failed`, `A.Errored`, `A.Skipped`, `A.Omitted`, `A.Daemoned`, `A.AnySucceeded`, `A.AllFailed`) with
&& || ! and parentheses; a bare `A` means `(A.Succeeded || A.Skipped || A.Daemoned)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kubesim.argo.values import WorkflowError

_TOKEN = re.compile(
    r"\s*(?:(?P<op>&&|\|\||==|!=|<=|>=|=~|!~|[()<>!])|(?P<quoted>'[^']*'|\"[^\"]*\")|(?P<word>[^\s()<>!=&|'\"]+))"
)
_COMPARISONS = ("==", "!=", "<", ">", "<=", ">=", "=~", "!~")
RESULTS = ("Succeeded", "Failed", "Errored", "Skipped", "Omitted", "Daemoned", "AnySucceeded", "AllFailed")


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise WorkflowError(f"Invalid expression {text!r}: unexpected {text[position:]!r}")
        position = match.end()
        kind = match.lastgroup or ""
        value = match.group(kind)
        tokens.append((kind, value[1:-1] if kind == "quoted" else value))
    return tokens


class _Parser:
    """Precedence climbing over: or → and → comparison → unary → atom."""

    def __init__(self, text: str, word: Callable[[str], Any]) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.position = 0
        self.word = word

    def parse(self) -> Any:
        value = self._or()
        if self.position != len(self.tokens):
            raise WorkflowError(
                f"Invalid expression {self.text!r}: unexpected {self.tokens[self.position][1]!r}"
            )
        return value

    def _peek(self) -> str | None:
        if self.position < len(self.tokens) and self.tokens[self.position][0] == "op":
            return self.tokens[self.position][1]
        return None

    def _or(self) -> Any:
        return self._logical("||", self._and, decided_by=True)

    def _and(self) -> Any:
        return self._logical("&&", self._comparison, decided_by=False)

    def _logical(self, symbol: str, operand: Callable[[], Any], *, decided_by: bool) -> Any:
        """Operands joined by `symbol`, left to right; a left side whose truth is `decided_by` is the answer
        without looking at the right side's truth (as `||` and `&&` short-circuit)."""
        value = operand()
        while self._peek() == symbol:
            self.position += 1
            right = operand()
            truth = _truth(value, self.text)
            value = truth if truth is decided_by else _truth(right, self.text)
        return value

    def _comparison(self) -> Any:
        left = self._unary()
        operator = self._peek()
        if operator in _COMPARISONS:
            self.position += 1
            return _compare(left, operator, self._unary())
        return left

    def _unary(self) -> Any:
        if self._peek() == "!":
            self.position += 1
            return not _truth(self._unary(), self.text)
        return self._atom()

    def _atom(self) -> Any:
        if self.position >= len(self.tokens):
            raise WorkflowError(f"Invalid expression {self.text!r}: it ends too early")
        kind, value = self.tokens[self.position]
        self.position += 1
        if kind == "op" and value == "(":
            inner = self._or()
            if self._peek() != ")":
                raise WorkflowError(f"Invalid expression {self.text!r}: missing ')'")
            self.position += 1
            return inner
        if kind == "op":
            raise WorkflowError(f"Invalid expression {self.text!r}: unexpected {value!r}")
        return value if kind == "quoted" else self.word(value)


def _truth(value: Any, text: str) -> bool:
    if isinstance(value, bool):
        return value
    raise WorkflowError(f"Expected boolean evaluation for '{text}'. Got {value}")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _compare(left: Any, operator: str, right: Any) -> bool:
    if operator in ("=~", "!~"):
        found = re.search(str(right), str(left)) is not None
        return found if operator == "=~" else not found
    a, b = _number(left), _number(right)
    if a is None or b is None:
        a, b = str(left), str(right)  # type: ignore[assignment]
    return {
        "==": a == b,
        "!=": a != b,
        "<": a < b,  # type: ignore[operator]
        ">": a > b,  # type: ignore[operator]
        "<=": a <= b,  # type: ignore[operator]
        ">=": a >= b,  # type: ignore[operator]
    }[operator]


def _when_word(word: str) -> Any:
    if word in ("true", "false"):
        return word == "true"
    return word


def evaluate_when(text: str) -> bool:
    """Whether a (substituted) `when` condition holds; an empty condition holds."""
    if not text.strip():
        return True
    return _truth(_Parser(text, _when_word).parse(), text)


def depends_tasks(text: str) -> list[str]:
    """The task names a `depends` expression refers to, in order of appearance."""
    names: list[str] = []
    for kind, value in _tokens(text):
        if kind == "word":
            name = _split_result(value)[0]
            if name not in names:
                names.append(name)
    return names


def _split_result(word: str) -> tuple[str, str | None]:
    name, _, result = word.rpartition(".")
    if name and result in RESULTS:
        return name, result
    return word, None


def evaluate_depends(text: str, result_of: Callable[[str, str], bool]) -> bool:
    """Evaluate `depends` with `result_of(task, result)` answering e.g. ("train", "Succeeded")."""

    def word(value: str) -> bool:
        name, result = _split_result(value)
        if result is None:
            return result_of(name, "Succeeded") or result_of(name, "Skipped") or result_of(name, "Daemoned")
        return result_of(name, result)

    return _truth(_Parser(text, word).parse(), text)


def dependencies_expression(task: dict[str, Any], continue_on: Callable[[str], dict[str, Any]]) -> str:
    """The `depends` equivalent of a `dependencies` list; `continue_on(dep)` is that task's continueOn."""
    terms = []
    for dependency in task.get("dependencies") or []:
        options = [f"{dependency}.Succeeded", f"{dependency}.Skipped", f"{dependency}.Daemoned"]
        tolerated = continue_on(dependency)
        if tolerated.get("failed"):
            options.append(f"{dependency}.Failed")
        if tolerated.get("error"):
            options.append(f"{dependency}.Errored")
        terms.append("(" + " || ".join(options) + ")")
    return " && ".join(terms)
