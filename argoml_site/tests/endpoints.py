"""Every URL pattern the web process serves, found by walking the URLconf, and the one table that says what
kind of endpoint each is. The tenant suite attacks each endpoint according to its kind, so a new endpoint is
covered the moment it is classified, and the suite fails until it is (see docs/security.md)."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.exceptions import Resolver404


class Kind(enum.Enum):
    """What an endpoint is, which decides who may call it and how it is attacked."""

    PUBLIC = "public"  # health and readiness: anyone, no details in the body
    LOGIN = "login"  # a sign-in page: anyone may see the form
    ASSET = "asset"  # pinned front-end libraries from Python packages; no tenant data
    SIGN_OUT = "sign-out"  # ends the caller's own session
    SELF = "self"  # the caller's own grants (/api/namespaces/)
    SIGNED_IN = "signed-in"  # any signed-in user, no tenant data (API root, schema, docs)
    OPERATOR = "operator"  # Prometheus figures: the metrics token or a staff session only
    TOKEN = "token"  # the API's sign-in: a password for a token; anyone may try (throttled, locked)
    OVERVIEW = "overview"  # counts and recent items over the caller's namespaces
    LIST = "list"  # a list of namespaced rows, with filters; GET only
    CREATE_LIST = "create-list"  # an API list that also creates (POST with a namespace in the body)
    OBJECT = "object"  # one namespaced row by pk: read (and, on the API, delete)
    BY_NAME = "by-name"  # one namespaced row by namespace + name in the path
    EXPORT = "export"  # CSV of a row's children
    PLOT = "plot"  # JSON figures of a row's children
    LOGS = "logs"  # a replica's logs (read from the cluster)
    ACTION = "action"  # POST on one row that changes the cluster: editors only
    READ_ACTION = "read-action"  # POST on one row that a viewer may do (opening a TensorBoard)
    SUBMIT_FORM = "submit-form"  # the dashboard's Submit page: the namespace is in the posted manifest
    SUBMIT = "submit"  # API verb with the namespace in the body
    # Work that creates nothing, done only for a caller who may submit its result: an editor of some
    # namespace, decided before the body is read, and of the one the body names, if any (pipeline transpile)
    EDITOR_WORK = "editor-work"
    ADMIN = "admin"  # the Django admin: staff only
    NOT_ON_WEB = "not-on-web"  # must not be served by the web process at all (admission webhooks)


@dataclass(frozen=True)
class Rule:
    """How to classify one endpoint, and which seeded object its `pk` (and `replica_pk`) name."""

    kind: Kind
    target: str = ""  # key of the seeded object the path's pk names: job, sweep, tensorboard, gc-run
    also: str = ""  # another seeded object the same path must refuse (a cluster-wide GC run)


# Keyed by URL name (namespace:name); an admin page is classified by its prefix below.
TABLE: dict[str, Rule] = {
    "home": Rule(Kind.SIGNED_IN),
    "api-token": Rule(Kind.TOKEN),
    "healthz": Rule(Kind.PUBLIC),
    "readyz": Rule(Kind.PUBLIC),
    "metrics": Rule(Kind.OPERATOR),
    "schema": Rule(Kind.SIGNED_IN),
    "swagger-ui": Rule(Kind.SIGNED_IN),
    "api-root": Rule(Kind.SIGNED_IN),
    "namespace-list": Rule(Kind.SELF),
    "job-list": Rule(Kind.CREATE_LIST, "job"),
    "job-detail": Rule(Kind.OBJECT, "job"),
    "hyperparam-list": Rule(Kind.CREATE_LIST, "sweep"),
    "hyperparam-detail": Rule(Kind.OBJECT, "sweep"),
    "hyperparam-trials": Rule(Kind.OBJECT, "sweep"),
    "hyperparam-trials-csv": Rule(Kind.EXPORT, "sweep"),
    "tensorboard-list": Rule(Kind.CREATE_LIST, "tensorboard"),
    "tensorboard-detail": Rule(Kind.OBJECT, "tensorboard"),
    "tensorboard-open": Rule(Kind.READ_ACTION, "tensorboard"),
    "trainjob-list": Rule(Kind.CREATE_LIST, "trainjob"),
    "trainjob-detail": Rule(Kind.OBJECT, "trainjob"),
    "trainjob-updates": Rule(Kind.OBJECT, "trainjob"),
    "trainingruntime-list": Rule(Kind.LIST, "runtime"),
    "pipeline-transpile": Rule(Kind.EDITOR_WORK),
    "pipeline-submit": Rule(Kind.SUBMIT),
    "webhooks-validate": Rule(Kind.NOT_ON_WEB),
    "webhooks-mutate": Rule(Kind.NOT_ON_WEB),
    "trainer-trainjob-status": Rule(Kind.NOT_ON_WEB),
    "dashboard:overview": Rule(Kind.OVERVIEW),
    "dashboard:login": Rule(Kind.LOGIN),
    "dashboard:logout": Rule(Kind.SIGN_OUT),
    "dashboard:vendored": Rule(Kind.ASSET),
    "dashboard:jobs": Rule(Kind.LIST, "job"),
    "dashboard:job": Rule(Kind.OBJECT, "job"),
    "dashboard:job-events": Rule(Kind.LOGS, "job"),
    "dashboard:job-stop": Rule(Kind.ACTION, "job"),
    "dashboard:job-resubmit": Rule(Kind.ACTION, "job"),
    "dashboard:job-tensorboard": Rule(Kind.ACTION, "job"),
    "dashboard:replica-logs": Rule(Kind.LOGS, "job"),
    "dashboard:job-by-name": Rule(Kind.BY_NAME, "job"),
    "dashboard:trainjobs": Rule(Kind.LIST, "trainjob"),
    "dashboard:trainjob": Rule(Kind.OBJECT, "trainjob"),
    "dashboard:trainjob-plots": Rule(Kind.PLOT, "trainjob"),
    "dashboard:trainjob-events": Rule(Kind.LOGS, "trainjob"),
    "dashboard:trainjob-stop": Rule(Kind.ACTION, "trainjob"),
    "dashboard:trainjob-tensorboard": Rule(Kind.ACTION, "trainjob"),
    "dashboard:trainjob-pod-logs": Rule(Kind.LOGS, "trainjob"),
    "dashboard:sweeps": Rule(Kind.LIST, "sweep"),
    "dashboard:sweep": Rule(Kind.OBJECT, "sweep"),
    "dashboard:sweep-tab": Rule(Kind.OBJECT, "sweep"),
    "dashboard:sweep-plots": Rule(Kind.PLOT, "sweep"),
    "dashboard:sweep-csv": Rule(Kind.EXPORT, "sweep"),
    "dashboard:sweep-trainjob-plots": Rule(Kind.PLOT, "sweep"),
    "dashboard:sweep-tensorboard": Rule(Kind.ACTION, "sweep"),
    "dashboard:sweep-stop": Rule(Kind.ACTION, "sweep"),
    "dashboard:sweep-by-name": Rule(Kind.BY_NAME, "sweep"),
    "dashboard:tensorboards": Rule(Kind.LIST, "tensorboard"),
    "dashboard:tensorboard-open": Rule(Kind.READ_ACTION, "tensorboard"),
    "dashboard:tensorboard-stop": Rule(Kind.ACTION, "tensorboard"),
    "dashboard:gc": Rule(Kind.LIST, "gc-run"),
    "dashboard:gc-run": Rule(Kind.OBJECT, "gc-run", also="gc-run-cluster"),
    "dashboard:submit": Rule(Kind.SUBMIT_FORM),
}
ADMIN_PREFIX = "admin/"
ADMIN_PUBLIC = {"admin:login": Rule(Kind.LOGIN), "admin:logout": Rule(Kind.SIGN_OUT)}


class Unclassified(Exception):
    """An endpoint the table does not classify: add it to TABLE (docs/security.md says how)."""


@dataclass(frozen=True)
class Endpoint:
    """One URL pattern: its name (None for unnamed patterns), its full route, and its view."""

    name: str | None
    route: str
    view: object

    @property
    def key(self) -> str:
        return self.name or self.route


def walk(
    patterns: Iterable[URLPattern | URLResolver], prefix: str = "", namespace: str = ""
) -> Iterator[Endpoint]:
    """Every pattern under `patterns`, depth first, with its namespaced name and its full route."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or ""
            joined = f"{namespace}:{inner}" if namespace and inner else namespace or inner
            yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), joined)
        else:
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
            yield Endpoint(name=name, route=prefix + str(pattern.pattern), view=pattern.callback)


def endpoints(urlconf: str | None = None) -> list[Endpoint]:
    return list(walk(get_resolver(urlconf).url_patterns))


def classify(endpoint: Endpoint, table: Mapping[str, Rule] = TABLE) -> Rule:
    """The endpoint's rule; the whole admin is staff-only except signing in and out."""
    if endpoint.name in ADMIN_PUBLIC:
        return ADMIN_PUBLIC[endpoint.name]
    if endpoint.route.startswith(ADMIN_PREFIX):
        return Rule(Kind.ADMIN)
    rule = table.get(endpoint.key)
    if rule is None:
        raise Unclassified(
            f"{endpoint.key} ({endpoint.route}) is not classified in argoml_site/tests/endpoints.py"
        )
    return rule


def unclassified(found: Iterable[Endpoint], table: Mapping[str, Rule] = TABLE) -> list[str]:
    """The keys of every endpoint the table leaves out."""
    missing = []
    for endpoint in found:
        try:
            classify(endpoint, table)
        except Unclassified:
            missing.append(endpoint.key)
    return missing


# A route as a template: `<int:pk>` and `(?P<pk>…)` become `{pk}`; regex anchors and escapes go.
_CONVERTER = re.compile(r"<(?:[\w-]+:)?(\w+)>")
_GROUP = re.compile(r"\(\?P<(\w+)>(?:[^()]|\([^()]*\))*\)")


def template(route: str) -> str:
    text = _CONVERTER.sub(r"{\1}", _GROUP.sub(r"{\1}", route))
    return text.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")


def concrete_path(endpoint: Endpoint, values: Mapping[str, object], urlconf: str | None = None) -> str:
    """The endpoint's path with `values` in its parameters, checked to resolve to this very pattern."""
    path = "/" + template(endpoint.route).format_map(_Values(values))
    try:
        match = get_resolver(urlconf).resolve(path)
    except Resolver404 as error:
        raise AssertionError(f"{path} does not resolve; pass values for {endpoint.route}") from error
    if match.route.replace("^", "") != endpoint.route.replace("^", ""):
        raise AssertionError(f"{path} resolves to {match.route}, not {endpoint.route}")
    return path


class _Values(dict[str, str]):
    def __init__(self, values: Mapping[str, object]) -> None:
        super().__init__({key: str(value) for key, value in values.items()})

    def __missing__(self, key: str) -> str:
        raise AssertionError(f"no value for the path parameter {key!r}")
