"""Which Kubernetes API calls does our code make? Derived from the source, for the RBAC test.

Every call to the cluster goes through `kube.client.KubeClient` (an import-linter contract keeps it so), so
the calls are the call sites of its verbs. This module finds them statically in the production modules
(tests, migrations and the simulator excluded) and resolves each call's resource argument to the
`ResourceType` values it can hold: module constants are evaluated by importing the module, and names are
followed through assignments, `for` loops, dict and tuple literals, attributes, and the arguments that the
function's callers pass (across modules). The few calls whose resource comes from a runtime registry
(the informers of the registered controllers, the framework of a training job) are resolved by HINTS,
which read those same registries. A call site nothing resolves is reported, never skipped: the RBAC test
fails until HINTS or the code say what it touches.

Why static and not recorded from the test suites against kubesim: a recording only sees the paths the
tests happen to run, mixes in the tests' own set-up calls, and cannot tell which process made a call.

Run it to print the table: `.venv/bin/python -m deploy.tests.apicalls`.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]

#: KubeClient method → the Kubernetes verb it sends (and the subresource it implies).
CLIENT_VERBS: dict[str, tuple[str, str]] = {
    "get": ("get", ""),
    "list": ("list", ""),
    "list_pages": ("list", ""),
    "watch": ("watch", ""),
    "create": ("create", ""),
    "replace": ("update", ""),
    "patch": ("patch", ""),
    "patch_status": ("patch", "status"),
    "delete": ("delete", ""),
}
#: Methods that reach the API without a resource type: forbidden outside kube/client.py.
UNTYPED_METHODS = {"request", "raw_get", "_send"}
#: How our code names a KubeClient where it calls one.
CLIENT_RECEIVERS = {"client", "self.client", "self._client", "get_client()"}
MAX_DEPTH = 8


@dataclass(frozen=True, order=True)
class ApiCall:
    """One permission an RBAC rule can grant: a verb on a resource (`tfjobs`, `tfjobs/status`) of a group."""

    group: str
    resource: str
    verb: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}.{self.group or 'core'}"


@dataclass
class CallSite:
    """One call of a KubeClient verb in the source, and what it was resolved to."""

    module: str
    function: str  # qualified within the module: "Collection.handle", "<module>"
    line: int
    method: str
    node: ast.Call
    calls: set[ApiCall] = field(default_factory=set)
    problem: str = ""

    @property
    def where(self) -> str:
        return f"{self.module}:{self.function} (line {self.line})"

    @property
    def key(self) -> str:
        return f"{self.module}:{self.function}"


class Unresolved(Exception):
    """An expression whose possible values the resolver cannot name."""


# -- modules ------------------------------------------------------------------------------------------
def project_packages() -> list[str]:
    """Our Django apps (INSTALLED_APPS entries that are folders of this repository)."""
    from django.conf import settings

    return [app for app in settings.INSTALLED_APPS if "." not in app and (REPO / app).is_dir()]


def production_modules(packages: Iterable[str]) -> Iterator[tuple[str, Path]]:
    """(dotted name, path) of every module of `packages`, tests and migrations excluded."""
    for package in packages:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if "tests" in parts or "migrations" in parts:
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


@dataclass
class Module:
    name: str
    tree: ast.Module
    parents: dict[ast.AST, ast.AST]
    _object: ModuleType | None = None

    @property
    def object(self) -> ModuleType:
        if self._object is None:
            self._object = importlib.import_module(self.name)
        return self._object

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
            current = self.parents.get(current)
        return current

    def qualname(self, node: ast.AST) -> str:
        names = []
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(current.name)
            current = self.parents.get(current)
        return ".".join(reversed(names)) or "<module>"

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, ast.ClassDef):
            current = self.parents.get(current)
        return current


def load_modules(packages: Iterable[str]) -> dict[str, Module]:
    modules = {}
    for name, path in production_modules(packages):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        modules[name] = Module(name, tree, parents)
    return modules


def talks_to_kube_client(module: Module) -> bool:
    """Whether the module imports kube.client (so a `client` in it may be a KubeClient)."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            absolute = node.module == "kube.client"
            relative = node.level == 1 and node.module == "client" and module.name.startswith("kube.")
            if absolute or relative:
                return True
        if isinstance(node, ast.Import) and any(alias.name == "kube.client" for alias in node.names):
            return True
    return False


def find_call_sites(modules: dict[str, Module]) -> list[CallSite]:
    sites = []
    for module in modules.values():
        if module.name == "kube.client" or not talks_to_kube_client(module):
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            receiver = ast.unparse(node.func.value)
            if receiver not in CLIENT_RECEIVERS:
                continue
            method = node.func.attr
            if method in CLIENT_VERBS or method in UNTYPED_METHODS:
                sites.append(CallSite(module.name, module.qualname(node), node.lineno, method, node))
    return sorted(sites, key=lambda site: (site.module, site.line))


# -- resolving expressions to values ------------------------------------------------------------------
Scope = tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef | None]


class Resolver:
    """Names the values an expression can hold at a call site (see the module docstring)."""

    def __init__(self, modules: dict[str, Module], hints: dict[tuple[str, str], Callable[[], Iterable[Any]]]):
        self.modules = modules
        self.hints = hints

    def values(self, expr: ast.expr, scope: Scope, depth: int = 0) -> list[Any]:
        if depth > MAX_DEPTH:
            raise Unresolved(f"{ast.unparse(expr)}: followed too far")
        module = scope[0]
        hint = self.hints.get((module.name, ast.unparse(expr)))
        if hint is not None:
            return list(hint())
        if isinstance(expr, ast.Constant):
            return [expr.value]
        if isinstance(expr, ast.Name):
            return self._name(expr.id, scope, depth)
        if isinstance(expr, ast.Attribute):
            return [getattr(base, expr.attr) for base in self.values(expr.value, scope, depth + 1)]
        if isinstance(expr, ast.Subscript):
            return [item for base in self.values(expr.value, scope, depth + 1) for item in _contents(base)]
        if isinstance(expr, ast.Tuple | ast.List | ast.Set):
            return [tuple(itertools.chain(*(self.values(elt, scope, depth + 1) for elt in expr.elts)))]
        raise Unresolved(f"{ast.unparse(expr)}: an expression the resolver does not follow")

    def elements(self, expr: ast.expr, scope: Scope, depth: int) -> list[Any]:
        """What iterating over `expr` yields."""
        if isinstance(expr, ast.Tuple | ast.List | ast.Set):
            return [value for elt in expr.elts for value in self.values(elt, scope, depth + 1)]
        method = expr.func.attr if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) else ""
        if method in ("values", "items", "keys") and isinstance(expr, ast.Call) and not expr.args:
            assert isinstance(expr.func, ast.Attribute)
            bases = self.values(expr.func.value, scope, depth + 1)
            return [item for base in bases for item in getattr(base, method)()]
        return [item for base in self.values(expr, scope, depth + 1) for item in base]

    def _name(self, name: str, scope: Scope, depth: int) -> list[Any]:
        module, function = scope
        if function is None or not _is_local(name, function):
            if not hasattr(module.object, name):
                raise Unresolved(f"{name}: not a global of {module.name}")
            return [getattr(module.object, name)]
        found: list[Any] = []
        for node in ast.walk(function):
            assigns = isinstance(node, ast.Assign) and any(_binds(target, name) for target in node.targets)
            annotated = isinstance(node, ast.AnnAssign | ast.NamedExpr) and _binds(node.target, name)
            if (assigns or annotated) and node.value is not None:
                found += self.values(node.value, scope, depth + 1)
            elif isinstance(node, ast.For | ast.comprehension) and _binds(node.target, name):
                for item in self._items(node.iter, scope, depth + 1):
                    found += self._select(node.target, name, item, scope, depth + 1)
        if name in _parameters(function):
            found += self._arguments(name, scope, depth)
        return found

    def _items(self, iterable: ast.expr, scope: Scope, depth: int) -> list[ast.expr | Evaluated]:
        """The items of a loop's iterable: element expressions while it is a literal (so unpacking a tuple
        evaluates only the part that is asked for), values once it is not."""
        if isinstance(iterable, ast.Tuple | ast.List | ast.Set):
            return list(iterable.elts)
        function = scope[1]
        if isinstance(iterable, ast.Name) and function is not None and _is_local(iterable.id, function):
            sources = _assigned(iterable.id, function)
            if sources and all(isinstance(source, ast.Tuple | ast.List | ast.Set) for source in sources):
                return [item for source in sources for item in self._items(source, scope, depth + 1)]
        return [Evaluated(value) for value in self.elements(iterable, scope, depth)]

    def _select(
        self, target: ast.expr, name: str, item: ast.expr | Evaluated, scope: Scope, depth: int
    ) -> list[Any]:
        """The values `name` takes when `target` is bound to `item`."""
        if isinstance(target, ast.Name):
            return [item.value] if isinstance(item, Evaluated) else self.values(item, scope, depth + 1)
        assert isinstance(target, ast.Tuple | ast.List)
        position, part = next((i, elt) for i, elt in enumerate(target.elts) if _binds(elt, name))
        if isinstance(item, ast.Tuple | ast.List):
            return self._select(part, name, item.elts[position], scope, depth + 1)
        values = [item.value] if isinstance(item, Evaluated) else self.values(item, scope, depth + 1)
        return [
            selected
            for value in values
            for selected in self._select(part, name, Evaluated(tuple(value)[position]), scope, depth + 1)
        ]

    def _arguments(self, name: str, scope: Scope, depth: int) -> list[Any]:
        """Every value the callers of the enclosing function pass as parameter `name`."""
        module, function = scope
        assert function is not None
        is_method = module.enclosing_class(function) is not None
        params = [arg.arg for arg in (*function.args.posonlyargs, *function.args.args)]
        if is_method:
            params = params[1:]
        found: list[Any] = []
        callers = 0
        for caller_module, call in self._calls_of(module, function, is_method):
            callers += 1
            caller_scope = (caller_module, caller_module.enclosing_function(call))
            argument = _argument(call, params, name)
            if argument is None:
                default = _default(function, name)
                if default is None:
                    raise Unresolved(f"{name}: a call at line {call.lineno} passes nothing for it")
                found += self.values(default, (module, None), depth + 1)
            else:
                found += self.values(argument, caller_scope, depth + 1)
        if not callers:
            raise Unresolved(f"{name}: a parameter of {function.name}, which nothing in our code calls")
        return found

    def _calls_of(
        self, module: Module, function: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool
    ) -> Iterator[tuple[Module, ast.Call]]:
        target = None if is_method else getattr(module.object, function.name, None)
        for caller in self.modules.values():
            for node in ast.walk(caller.tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if is_method:
                    on_self = isinstance(func, ast.Attribute) and ast.unparse(func.value) in ("self", "cls")
                    if caller is module and on_self and _callee_name(func) == function.name:
                        yield caller, node
                    continue
                if isinstance(func, ast.Name | ast.Attribute) and _callee_name(func) == function.name:
                    try:
                        callee = self.values(func, (caller, caller.enclosing_function(node)), MAX_DEPTH - 2)
                    except (Unresolved, AttributeError):
                        continue
                    if target is not None and any(value is target for value in callee):
                        yield caller, node


def _callee_name(func: ast.Name | ast.Attribute) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr


def _contents(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    raise Unresolved(f"cannot index {type(value).__name__}")


def _binds(target: ast.expr, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, ast.Tuple | ast.List):
        return any(_binds(elt, name) for elt in target.elts)
    return False


@dataclass(frozen=True)
class Evaluated:
    """A value already computed (as opposed to an expression still to resolve)."""

    value: Any


def _assigned(name: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The expressions assigned to `name` in the function (plain assignments only)."""
    return [
        node.value
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and any(_binds(target, name) for target in node.targets)
    ]


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = function.args
    return {arg.arg for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def _is_local(name: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if name in _parameters(function):
        return True
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(_binds(target, name) for target in node.targets):
            return True
        if isinstance(node, ast.AnnAssign | ast.NamedExpr | ast.For | ast.comprehension) and _binds(
            node.target, name
        ):
            return True
    return False


def _argument(call: ast.Call, params: list[str], name: str) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if name in params and params.index(name) < len(call.args):
        argument = call.args[params.index(name)]
        if isinstance(argument, ast.Starred):
            raise Unresolved(f"{name}: passed inside *args at line {call.lineno}")
        return argument
    return None


def _default(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.expr | None:
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
        if arg.arg == name:
            return default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg == name:
            return kw_default
    return None


# -- call sites → API calls ---------------------------------------------------------------------------
def resolve_site(site: CallSite, resolver: Resolver) -> None:
    """Fill `site.calls` (or `site.problem`)."""
    from kube.resources import ResourceType

    if site.method in UNTYPED_METHODS:
        site.problem = f"{site.method}() names no resource type; use a typed verb"
        return
    verb, implied_subresource = CLIENT_VERBS[site.method]
    module = resolver.modules[site.module]
    scope: Scope = (module, module.enclosing_function(site.node))
    call = site.node
    resource_expr = call.args[0] if call.args else _keyword(call, "rtype")
    try:
        if resource_expr is None:
            raise Unresolved("no resource type argument")
        rtypes = resolver.values(resource_expr, scope)
        subresources = [implied_subresource]
        subresource_expr = _keyword(call, "subresource")
        if subresource_expr is not None:
            subresources = [value or "" for value in resolver.values(subresource_expr, scope)]
    except (Unresolved, AttributeError, KeyError, TypeError) as error:
        site.problem = f"cannot tell what {ast.unparse(call)[:100]} touches: {error}"
        return
    wrong = [value for value in rtypes if not isinstance(value, ResourceType)]
    if wrong or not rtypes:
        site.problem = f"the resource argument resolved to {wrong or 'nothing'}, not ResourceTypes"
        return
    for rtype, subresource in itertools.product(rtypes, subresources):
        resource = f"{rtype.plural}/{subresource}" if subresource else rtype.plural
        site.calls.add(ApiCall(rtype.group, resource, verb))


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def api_call_sites(hints: dict[tuple[str, str], Callable[[], Iterable[Any]]]) -> list[CallSite]:
    modules = load_modules(project_packages())
    resolver = Resolver(modules, hints)
    sites = find_call_sites(modules)
    for site in sites:
        resolve_site(site, resolver)
    return sites


# -- who runs which code --------------------------------------------------------------------------------
def code_areas(site: CallSite, areas: list[tuple[str, frozenset[str]]]) -> frozenset[str] | None:
    """The areas of the first `module:function` pattern matching the site (None: no pattern does)."""
    for pattern, names in areas:
        if fnmatch.fnmatchcase(site.key, pattern):
            return names
    return None


def main() -> None:
    import django

    from .rbac_model import CODE_AREAS, HINTS

    django.setup()
    for site in api_call_sites(HINTS):
        areas = code_areas(site, CODE_AREAS)
        described = ", ".join(sorted(map(str, site.calls))) or site.problem
        print(f"{site.where:<70} {','.join(sorted(areas or ['?'])):<18} {described}")


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
    main()
