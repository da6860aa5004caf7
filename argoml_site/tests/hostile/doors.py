"""Every door a tenant's input comes in by, found by walking what our processes serve and run, and one
table per kind of door saying what each reads. The hostile-input suite sends each door the corpus of what
it reads; a door no table classifies fails the suite (docs/security.md, "Bounded work").

The doors, and where they are found:
- the REST API: every operation (method, path, content type) of the OpenAPI schema the web process serves;
- the web pages: every URL pattern of the web URLconf outside the API and the admin (their query
  parameters are found by watching which ones a page reads, see `recorded_parameters`);
- the webhook listener: every URL pattern of its URLconf (admission reviews, TrainJob progress reports);
- the TensorBoard origin: every URL pattern of its URLconf (the proxy: a ticket, a pass, a path);
- management commands: every command of our apps (`manage.py help --commands`, our apps only);
- controllers: every registered controller (its kind, and the tenant-writable objects it reads).
"""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.management import get_commands

from argoml_site.tests import endpoints

from . import corpus


class Reads(enum.Enum):
    """What a door reads of a tenant's, which decides the corpus it is sent."""

    JSON_DOCUMENT = "json-document"  # a JSON body holding one of `Door.documents`
    YAML_DOCUMENT = "yaml-document"  # a YAML text (a form field, an upload, a file) holding one
    FORM_FIELDS = "form-fields"  # a flat form (urlencoded or multipart): strings by field name
    QUERY = "query"  # path and query parameters only
    CLUSTER_OBJECT = "cluster-object"  # objects in the cluster a tenant wrote (controllers)
    NOTHING = "nothing"  # no input of a tenant's: `why` says so


@dataclass(frozen=True)
class Door:
    """One door: its key (how the suite names it), what it reads, the documents it accepts, and for a door
    that reads nothing of a tenant's, why."""

    key: str
    reads: Reads
    documents: tuple[str, ...] = ()
    why: str = ""


class Unclassified(Exception):
    """A door no table classifies: add it to the table of its kind (docs/security.md says how)."""


def _classified(key: str, table: Mapping[str, Door], where: str) -> Door:
    door = table.get(key)
    if door is None:
        raise Unclassified(f"{key} is not classified in {where} (argoml_site/tests/hostile/doors.py)")
    return door


# --- The REST API ------------------------------------------------------------------------------------

JOB_KINDS = tuple(kind.name for kind in corpus.V1_JOBS)
JSON = "application/json"
YAML = "application/yaml"
FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")

#: Operations with a body, by "METHOD path": the documents its JSON or YAML body holds (a YAML body also
#: gets the alias bombs). Form bodies of the same operations get the flat-form corpus, every operation its
#: parameters' corpus.
API_BODIES: dict[str, tuple[str, ...]] = {
    "POST /api/jobs/": JOB_KINDS,
    "POST /api/hyperparams/": ("HyperparamWorkflow",),
    "POST /api/trainjobs/": ("TrainJob",),
    "POST /api/tensorboards/": ("TensorboardRequest",),
    "POST /api/pipelines/transpile": ("PipelineRequest",),
    "POST /api/pipelines/submit": ("PipelineRequest",),
    "POST /api/token/": ("TokenRequest",),
}


@dataclass(frozen=True)
class Operation:
    """One operation of the served schema."""

    method: str
    path: str
    content_types: tuple[str, ...]
    parameters: tuple[Mapping[str, Any], ...]
    request_schema: Mapping[str, Mapping[str, Any]]  # content type -> schema of its body

    @property
    def name(self) -> str:
        return f"{self.method} {self.path}"


def operations(schema: Mapping[str, Any]) -> list[Operation]:
    """Every operation of an OpenAPI schema, its body's schemas resolved one level (components)."""
    components = schema.get("components", {}).get("schemas", {})
    found = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            content = (operation.get("requestBody") or {}).get("content") or {}
            bodies = {
                ctype: _resolved(spec.get("schema") or {}, components) for ctype, spec in content.items()
            }
            found.append(
                Operation(
                    method.upper(),
                    path,
                    tuple(content),
                    tuple(operation.get("parameters") or ()),
                    bodies,
                )
            )
    return found


def _resolved(schema: Mapping[str, Any], components: Mapping[str, Any]) -> Mapping[str, Any]:
    reference = schema.get("$ref")
    if reference:
        return components[reference.rsplit("/", 1)[-1]]
    return schema


def api_doors(schema: Mapping[str, Any]) -> Iterator[tuple[Door, Operation]]:
    """A door per (operation, content type), and one per operation for its parameters."""
    for operation in operations(schema):
        yield Door(f"{operation.name} ?query", Reads.QUERY), operation
        for content_type in operation.content_types:
            key = f"{operation.name} {content_type}"
            if operation.name not in API_BODIES:
                raise Unclassified(f"{key}: a body no entry of API_BODIES describes")
            if content_type == JSON:
                yield Door(key, Reads.JSON_DOCUMENT, API_BODIES[operation.name]), operation
            elif content_type == YAML:
                yield Door(key, Reads.YAML_DOCUMENT, API_BODIES[operation.name]), operation
            elif content_type in FORMS:
                yield Door(key, Reads.FORM_FIELDS), operation
            else:
                raise Unclassified(f"{key}: a content type the suite does not know")


# --- Web pages ----------------------------------------------------------------------------------------

#: Pages that take a tenant's document in a form; every other page is attacked through its parameters.
PAGE_FORMS: dict[str, tuple[str, ...]] = {
    "dashboard:submit": (*JOB_KINDS, "HyperparamWorkflow", "TrainJob"),
}
#: URL names the suite leaves to others, and why.
PAGES_ELSEWHERE: dict[str, str] = {
    "api-token": "the API's sign-in: a REST operation, attacked with the API",
    "schema": "the OpenAPI schema: takes no input (attacked with its parameters as a REST operation)",
}


def pages() -> Iterator[tuple[Door, endpoints.Endpoint]]:
    """Every pattern of the web URLconf outside the API, the admin and the webhooks."""
    for endpoint in endpoints.endpoints():
        route = endpoint.route
        if route.startswith(("api/", endpoints.ADMIN_PREFIX)) and not route.startswith("api/docs"):
            continue
        rule = endpoints.classify(endpoint)
        if rule.kind is endpoints.Kind.NOT_ON_WEB:
            continue
        if endpoint.key in PAGES_ELSEWHERE:
            continue
        documents = PAGE_FORMS.get(endpoint.key, ())
        if rule.kind is endpoints.Kind.SUBMIT_FORM and not documents:
            raise Unclassified(f"page {endpoint.key} takes a document: say which in PAGE_FORMS")
        reads = Reads.YAML_DOCUMENT if documents else Reads.QUERY
        yield Door(f"page {endpoint.key}", reads, documents), endpoint


# --- The webhook listener ---------------------------------------------------------------------------

CLUSTER_KINDS = (*JOB_KINDS, "HyperparamWorkflow", "TrainJob", "Tensorboard")
#: The listener's patterns, by URL name.
WEBHOOKS: dict[str, Door] = {
    "webhooks-validate": Door("webhooks-validate", Reads.JSON_DOCUMENT, ("AdmissionReview",)),
    "webhooks-mutate": Door("webhooks-mutate", Reads.JSON_DOCUMENT, ("AdmissionReview",)),
    "trainer-trainjob-status": Door("trainer-trainjob-status", Reads.JSON_DOCUMENT, ("ProgressReport",)),
    "healthz": Door("healthz", Reads.NOTHING, why="a probe: reads no input"),
    "readyz": Door("readyz", Reads.NOTHING, why="a probe: reads no input"),
}


def webhook_doors(urlconf: Any = "argoml_site.webhook_urls") -> Iterator[tuple[Door, endpoints.Endpoint]]:
    for endpoint in endpoints.endpoints(urlconf):
        yield _classified(endpoint.key, WEBHOOKS, "WEBHOOKS"), endpoint


# --- The TensorBoard origin ----------------------------------------------------------------------------

#: Its patterns (argoml_site/tensorboard_urls.py), by URL name. Each reads its `ticket` parameter and its
#: pass cookie (signed, at most 1,024 characters: hostile ones in dashboard/tests/test_tensorboard_origin.py)
#: and a path checked for climbing segments; the rest of the query goes to the TensorBoard pod unread.
TENSORBOARD_ORIGIN: dict[str, Door] = {
    name: Door(name, Reads.QUERY) for name in ("tensorboard-proxy-root", "tensorboard-proxy")
}


def tensorboard_origin_doors(
    urlconf: Any = "argoml_site.tensorboard_urls",
) -> Iterator[tuple[Door, endpoints.Endpoint]]:
    for endpoint in endpoints.endpoints(urlconf):
        yield _classified(endpoint.key, TENSORBOARD_ORIGIN, "TENSORBOARD_ORIGIN"), endpoint


# --- Management commands --------------------------------------------------------------------------

#: Our apps' commands: the documents a command reads from the file it is given, or why it reads nothing
#: of a tenant's.
COMMANDS: dict[str, Door] = {
    "render_job": Door("render_job", Reads.YAML_DOCUMENT, JOB_KINDS),
    "render_hyperparam": Door("render_hyperparam", Reads.YAML_DOCUMENT, ("HyperparamWorkflow",)),
    "transpile": Door("transpile", Reads.YAML_DOCUMENT, ("Pipeline",)),
    "argo_lint": Door("argo_lint", Reads.YAML_DOCUMENT, ("Workflow",)),
    "fetch_tensorboard_logs": Door(
        "fetch_tensorboard_logs",
        Reads.NOTHING,
        why="runs in a TensorBoard pod on the plan our controller wrote from a bounded Tensorboard; the "
        "artifacts it unpacks are bounded in entries and bytes (tensorboard/unpack.py, test_unpack.py)",
    ),
    "install_runtimes": Door(
        "install_runtimes", Reads.NOTHING, why="installs the runtimes shipped in trainer/runtimes/"
    ),
    "gc": Door("gc", Reads.NOTHING, why="an operator's command; --namespace is checked as a name"),
    "install_crds": Door("install_crds", Reads.NOTHING, why="installs our own CRDs"),
    "render_crds": Door("render_crds", Reads.NOTHING, why="writes our own CRDs"),
    "run_controllers": Door("run_controllers", Reads.NOTHING, why="starts the controllers (see controllers)"),
    "devstack": Door("devstack", Reads.NOTHING, why="starts the local stack"),
    "ping_worker": Door("ping_worker", Reads.NOTHING, why="sends one task to a worker"),
    "dev_webhooks": Door("dev_webhooks", Reads.NOTHING, why="starts the local webhook listener"),
    "dev_artifacts": Door(
        "dev_artifacts",
        Reads.NOTHING,
        why="reads the dev stack's own artifact keys file (two `name: value` lines) into a Secret",
    ),
    "render_webhooks": Door("render_webhooks", Reads.NOTHING, why="writes our webhook configurations"),
    "webhook_certs": Door("webhook_certs", Reads.NOTHING, why="makes the listener's certificates"),
}


def command_doors() -> Iterator[Door]:
    """Every management command of our apps (the apps at the top of this repository)."""
    ours = {config.name for config in apps.get_app_configs() if Path(config.path).parent == corpus.REPO}
    for command, app in sorted(get_commands().items()):
        if app in ours:
            yield _classified(command, COMMANDS, "COMMANDS")


# --- Controllers --------------------------------------------------------------------------------------

#: Every controller, by the kind of its keys: the documents of its kind that a tenant writes.
CONTROLLERS: dict[str, tuple[str, ...]] = {
    **{kind: (kind,) for kind in JOB_KINDS},
    **{f"{kind}.kubeflow.org": (kind,) for kind in JOB_KINDS},
    "HyperparamWorkflow": ("HyperparamWorkflow",),
    "TrainJob": ("TrainJob",),
    "Tensorboard": ("Tensorboard",),
    "TrainingRuntime": ("TrainingRuntime",),
    "ClusterTrainingRuntime": ("TrainingRuntime",),
}


#: Every optional controller on: a deployment that serves every kind (Kubeflow's v1 group, Trainer).
EVERY_CONTROLLER = {"JOBS_KUBEFLOW_V1": "true", "TRAINER_ENABLED": "true"}


@cache
def controller_kinds() -> tuple[str, ...]:
    """The kinds of every controller a deployment with every option on registers, asked of a process that
    starts with those settings (registration happens when the apps' controllers modules are imported)."""
    script = (
        "import django, json; django.setup(); from kube.controller.registry import registry; "
        "print(json.dumps([controller.kind for controller in registry.controllers()]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **EVERY_CONTROLLER, "DJANGO_SETTINGS_MODULE": "argoml_site.settings"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return tuple(json.loads(result.stdout.strip().splitlines()[-1]))


def controller_doors() -> Iterator[Door]:
    for kind in controller_kinds():
        documents = CONTROLLERS.get(kind)
        if documents is None:
            raise Unclassified(f"the controller of {kind} is not classified in CONTROLLERS")
        yield Door(f"controller {kind}", Reads.CLUSTER_OBJECT, documents)
