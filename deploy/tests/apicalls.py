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
import inspect
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]

#: KubeClient method → the Kubernetes verb it sends (and the subresource it implies) on the resource type
#: given as its first argument.
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
#: KubeClient methods bound to one resource: the (group, resource, verb) each may send. The service proxy
#: is authorized with the verb of the request's method: the TensorBoard proxy sends GET, HEAD and POST.
FIXED_CALLS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "logs": (("", "pods/log", "get"),),
    "proxy_service": (("", "services/proxy", "get"), ("", "services/proxy", "create")),
}
#: Methods that reach the API without a resource type: forbidden outside kube/client.py.
UNTYPED_METHODS = {"request", "raw_get", "_send"}
#: How our code names a KubeClient where it calls one: `client`, `self._client`, `get_client()`, …
CLIENT_RECEIVER = re.compile(r"(^|[._])client(\(.*\))?$")
MAX_DEPTH = 8
PARTIAL_NAMES = {"partial", "functools.partial"}


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
    areas: frozenset[str] = frozenset()

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


def production_modules(packages: Iterable[str], root: Path = REPO) -> Iterator[tuple[str, Path]]:
    """(dotted name, path) of every module of `packages` under `root`, tests and migrations excluded."""
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
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

    def function_key(self, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> str:
        """`module:Class.function` of a definition (`module:<module>` for module-level code)."""
        # The qualified name of a statement inside the function includes the function itself.
        return f"{self.name}:{self.qualname(function.body[0]) if function else '<module>'}"

    def enclosing_class(self, node: ast.AST) -> ast.ClassDef | None:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, ast.ClassDef):
            current = self.parents.get(current)
        return current


def load_modules(packages: Iterable[str], root: Path = REPO) -> dict[str, Module]:
    modules = {}
    for name, path in production_modules(packages, root):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        modules[name] = Module(name, tree, parents)
    return modules


def returns_kube_client(value: Any) -> bool:
    """Whether `value` is the KubeClient class or a function annotated to return one (get_client, …)."""
    if inspect.isclass(value):
        return value.__name__ == "KubeClient"
    annotation = getattr(value, "__annotations__", {}).get("return") if callable(value) else None
    return getattr(annotation, "__name__", annotation) == "KubeClient"


def talks_to_kube_client(module: Module) -> bool:
    """Whether the module imports the KubeClient class or a function that returns one, so a `client` in it
    may be a KubeClient (a Redis client in a module that imports neither is not)."""
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if alias.name in ("KubeClient", "get_client"):
                return True
            if returns_kube_client(getattr(module.object, alias.asname or alias.name, None)):
                return True
    return False


def find_call_sites(modules: dict[str, Module]) -> list[CallSite]:
    known = set(CLIENT_VERBS) | set(FIXED_CALLS) | UNTYPED_METHODS
    sites = []
    for module in modules.values():
        if module.name == "kube.client" or not talks_to_kube_client(module):
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr in known and CLIENT_RECEIVER.search(ast.unparse(node.func.value)):
                sites.append(CallSite(module.name, module.qualname(node), node.lineno, node.func.attr, node))
    return sorted(sites, key=lambda site: (site.module, site.line))


def unclassified_client_methods() -> list[str]:
    """Public KubeClient methods this module cannot turn into API calls (a new verb to teach it)."""
    from kube.client import KubeClient

    known = set(CLIENT_VERBS) | set(FIXED_CALLS) | UNTYPED_METHODS
    methods = inspect.getmembers(KubeClient, inspect.isfunction)
    return sorted({name for name, _ in methods if not name.startswith("_")} - known)


# -- resolving expressions to values ------------------------------------------------------------------
Scope = tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef | None]


class Resolver:
    """Names the values an expression can hold at a call site (see the module docstring)."""

    def __init__(self, modules: dict[str, Module], hints: dict[tuple[str, str], Callable[[], Iterable[Any]]]):
        self.modules = modules
        self.hints = hints
        self._callers: dict[str, list[tuple[Module, ast.Call]]] = {}
        self._call_index: dict[str, list[tuple[Module, ast.Call]]] | None = None

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
        for caller_module, call in self.calls_of(module, function, is_method):
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

    def calls_of(
        self, module: Module, function: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool
    ) -> list[tuple[Module, ast.Call]]:
        """Every call of `function` in our modules (found once, then remembered)."""
        key = module.function_key(function)
        if key not in self._callers:
            self._callers[key] = list(self._find_calls(module, function, is_method))
        return self._callers[key]

    def _find_calls(
        self, module: Module, function: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool
    ) -> Iterator[tuple[Module, ast.Call]]:
        target = None if is_method else getattr(module.object, function.name, None)
        for caller, node in self._calls_by_name().get(function.name, []):
            func = node.func
            if is_method:
                on_self = isinstance(func, ast.Attribute) and ast.unparse(func.value) in ("self", "cls")
                if caller is module and on_self:
                    yield caller, node
                continue
            try:
                callee = self.values(func, (caller, caller.enclosing_function(node)), MAX_DEPTH - 2)
            except (Unresolved, AttributeError):
                continue
            if target is not None and any(value is target for value in callee):
                yield caller, node

    def _calls_by_name(self) -> dict[str, list[tuple[Module, ast.Call]]]:
        """Every call in our modules, by the name it calls (`f(…)`, `x.f(…)`, `partial(f, …)`: "f")."""
        if self._call_index is None:
            self._call_index = {}
            for caller in self.modules.values():
                for found in ast.walk(caller.tree):
                    if not isinstance(found, ast.Call):
                        continue
                    node = _as_direct_call(found)
                    if node is not found:  # scope look-ups of the prepared call go through the real one
                        caller.parents[node] = caller.parents[found]
                    if isinstance(node.func, ast.Name | ast.Attribute):
                        self._call_index.setdefault(_callee_name(node.func), []).append((caller, node))
        return self._call_index


def _as_direct_call(call: ast.Call) -> ast.Call:
    """`functools.partial(f, a, k=b)` read as the call `f(a, k=b)` it prepares; other calls as they are."""
    if ast.unparse(call.func) in PARTIAL_NAMES and call.args:
        direct = ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords)
        return ast.copy_location(direct, call)
    return call


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
    if site.method in FIXED_CALLS:
        site.calls.update(ApiCall(*fixed) for fixed in FIXED_CALLS[site.method])
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


# -- who runs which code --------------------------------------------------------------------------------
AreaTable = list[tuple[str, frozenset[str]]]


def pattern_areas(key: str, table: AreaTable) -> frozenset[str]:
    """The areas of the first `module:function` pattern of the table matching `key` (none: empty)."""
    for pattern, names in table:
        if fnmatch.fnmatchcase(key, pattern):
            return names
    return frozenset()


def function_areas(
    module: Module,
    function: ast.FunctionDef | ast.AsyncFunctionDef | None,
    resolver: Resolver,
    table: AreaTable,
    seen: set[str],
) -> frozenset[str]:
    """Where a function runs: its own pattern's areas, plus those of every function that calls it (so a
    helper shared by a view and a task is granted to both processes)."""
    key = module.function_key(function)
    own = pattern_areas(key, table)
    if function is None or key in seen:
        return own
    seen.add(key)
    inherited: set[str] = set(own)
    is_method = module.enclosing_class(function) is not None
    for caller_module, call in resolver.calls_of(module, function, is_method):
        caller = caller_module.enclosing_function(call)
        inherited |= function_areas(caller_module, caller, resolver, table, seen)
    return frozenset(inherited)


def attribute(sites: Iterable[CallSite], resolver: Resolver, table: AreaTable) -> None:
    for site in sites:
        module = resolver.modules[site.module]
        site.areas = function_areas(module, module.enclosing_function(site.node), resolver, table, set())


def api_call_sites(
    hints: dict[tuple[str, str], Callable[[], Iterable[Any]]], table: AreaTable
) -> list[CallSite]:
    """Every KubeClient call site of our apps, with the API calls it makes and the areas that run it."""
    modules = load_modules(project_packages())
    resolver = Resolver(modules, hints)
    sites = find_call_sites(modules)
    for site in sites:
        resolve_site(site, resolver)
    attribute(sites, resolver, table)
    return sites


def main() -> None:
    import django

    from .rbac_model import CODE_AREAS, HINTS

    django.setup()
    for site in api_call_sites(HINTS, CODE_AREAS):
        described = ", ".join(sorted(map(str, site.calls))) or site.problem
        print(f"{site.where:<70} {','.join(sorted(site.areas or ['?'])):<18} {described}")


if __name__ == "__main__":
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
    main()
