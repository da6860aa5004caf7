"""Tenant isolation, proved for every endpoint the web process serves.

Tenant A (namespace team-a) owns one of everything a page or the API lists. For every URL pattern (found by
walking the URLconf, classified in `endpoints.TABLE`), callers who are not A — anonymous, a user with no
grant, a viewer and an editor of another namespace, and a viewer of team-a where A's objects must not
change — try A's objects by id, uid, name and path tricks, with filters, ordering, exports, plots, logs and
counts. Each must be refused (401/403/404, or a redirect to sign-in) with nothing of A's in the body.
A control persona (A's editor) reads the same paths and does see A's objects, so every attack aims true.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, path
from rest_framework.authtoken.models import Token

import kube.client
from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from garbage.models import GCRun
from hyperparam.models import Trial
from kube.resources import POD
from trainer.progress import reporting
from trainer.progress import server as trainer_statusserver
from trainer.tests import progress
from webhooks.models import InjectionRule

from . import endpoints
from .endpoints import Endpoint, Kind, Rule

# Each test runs in a savepoint inside the module's transaction (see `world`), so requests change nothing.
pytestmark = pytest.mark.django_db

NAMESPACE_A = "zq-alpha-ns"  # distinctive: "team-a" is in the API's own examples
NAMESPACE_B = "team-b"

# Personas that are not tenant A. `viewer-of-a` may read A's objects, so only its writes are attacks.
STRANGERS = ("outsider", "viewer-elsewhere", "editor-elsewhere")
# Editors of team-b: work that names no namespace (Kind.EDITOR_WORK) is theirs to ask for.
EDITORS_ELSEWHERE = ("editor-elsewhere", "viewer-of-a")
PERSONAS = ("anonymous", *STRANGERS, "viewer-of-a")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
ANONYMOUS_API = {401, 403}
REFUSED = {403, 404, 405}
# Pages outside /dashboard/ and /admin/: an anonymous visitor is sent to sign in, as on the dashboard.
PAGES = {"", "api/docs/"}
#: Routes under which everything is a page (an anonymous visitor is sent to sign in)
PAGE_PREFIXES = ("admin/", "dashboard/")
OBJECT_VARIANTS = ("pk", "uid", "name", "encoded-slash", "dot-dot", "also")
LIST_QUERIES = {
    "plain": "",
    "namespace-filter": f"namespace={NAMESPACE_A}",
    "name-filter": "name={name}",
    "search": "search={name}",
    "ordering": "ordering=-namespace",
    "deleted": f"deleted=true&namespace={NAMESPACE_A}",
    "source": "source_name={name}&kind=TFJob",
}
# A manifest of tenant A's namespace, for every write that names a namespace in its body.
HOSTILE_BODY = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "namespace": NAMESPACE_A,
    "metadata": {"name": "zz-hostile", "namespace": NAMESPACE_A},
    "spec": {"tfReplicaSpecs": {}},
    "workflow": "zq-alpha-workflow",
    "pipeline": {},
    "config": {},
}
# The same body naming no namespace: for work any editor may ask for (Kind.EDITOR_WORK).
UNNAMED_BODY = {key: value for key, value in HOSTILE_BODY.items() if key not in ("namespace", "metadata")}
HOSTILE_MANIFEST = f"""apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: zz-hostile
  namespace: {NAMESPACE_A}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{{name: tensorflow, image: example.io/x:1}}]
"""


@dataclass(frozen=True)
class Attempt:
    """One request, described without ids (they exist only once the data is seeded)."""

    label: str
    method: str
    variant: str = "pk"  # how the path names the target: pk, uid, name, encoded-slash, dot-dot, also
    query: str = ""
    body: str = ""  # "", "hostile-json", "unnamed-json", "hostile-form", "move-namespace"


@dataclass
class Seed:
    """Tenant A's rows and every string that would betray them."""

    objects: dict[str, Any] = field(default_factory=dict)
    markers: set[str] = field(default_factory=set)


def attempts(endpoint: Endpoint, rule: Rule, persona: str) -> list[Attempt]:
    """What `persona` tries against an endpoint of this kind."""
    kind = rule.kind
    if kind in (Kind.PUBLIC, Kind.LOGIN, Kind.ASSET):
        return [Attempt("get", "GET")] if persona == "anonymous" else []
    if kind == Kind.TOKEN:  # a wrong password, as anyone may send
        return [Attempt("post", "POST", body="hostile-form")] if persona == "anonymous" else []
    if kind == Kind.ADMIN:  # every non-staff user is refused alike, so one stranger stands for all
        return [Attempt("get", "GET")] if persona in ("anonymous", "outsider") else []
    if persona == "anonymous":
        return [Attempt(method.lower(), method) for method in ("GET", "POST")] + (
            [Attempt("delete", "DELETE")] if kind in (Kind.OBJECT, Kind.CREATE_LIST) else []
        )
    if kind == Kind.NOT_ON_WEB:
        return [Attempt("post", "POST", body="hostile-json")]
    if persona == "viewer-of-a":
        return _writes(endpoint, rule)
    if kind in (Kind.SIGNED_IN, Kind.OPERATOR, Kind.SELF):
        return [Attempt("get", "GET")]
    if kind == Kind.OVERVIEW:
        return [Attempt("get-plain", "GET")]
    if kind in (Kind.LIST, Kind.CREATE_LIST):
        reads = [Attempt(f"get-{label}", "GET", query=query) for label, query in LIST_QUERIES.items()]
        return reads + _writes(endpoint, rule)
    if kind == Kind.SUBMIT_FORM:
        return [Attempt("get", "GET"), *_writes(endpoint, rule)]
    if kind in (Kind.SIGN_OUT, Kind.SUBMIT, Kind.EDITOR_WORK):
        return _writes(endpoint, rule)
    variants = [variant for variant in OBJECT_VARIANTS if variant != "also" or rule.also]
    reads = [Attempt(f"get-{variant}", "GET", variant=variant) for variant in variants]
    reads.append(Attempt("get-namespace-query", "GET", query=f"namespace={NAMESPACE_A}"))
    if kind in (Kind.ACTION, Kind.READ_ACTION):
        reads = [Attempt(f"post-{variant}", "POST", variant=variant) for variant in variants]
    return reads + _writes(endpoint, rule)


def _writes(endpoint: Endpoint, rule: Rule) -> list[Attempt]:
    """The writes a non-editor of team-a tries: every unsafe method, with A's namespace in the body."""
    kind = rule.kind
    if kind in (Kind.CREATE_LIST, Kind.SUBMIT):
        return [Attempt("post-namespace-in-body", "POST", body="hostile-json")]
    if kind == Kind.EDITOR_WORK:  # naming A's namespace, and naming none (refused without an editor grant)
        return [
            Attempt("post-namespace-in-body", "POST", body="hostile-json"),
            Attempt("post-no-namespace", "POST", body="unnamed-json"),
        ]
    if kind == Kind.SUBMIT_FORM:
        return [Attempt("post-manifest", "POST", body="hostile-form")]
    if kind == Kind.ACTION:
        return [Attempt("post", "POST")]
    if kind == Kind.OBJECT and endpoint.route.startswith("api/"):
        writes = [Attempt(method.lower(), method) for method in ("POST", "PUT", "PATCH", "DELETE")]
        writes.append(Attempt("patch-move-namespace", "PATCH", body="move-namespace"))
        return writes
    return []


def case_id(endpoint: Endpoint, persona: str, attempt: Attempt) -> str:
    return f"{endpoint.route}|{persona}|{attempt.label}"


def cases() -> Iterator[Any]:
    """One test per endpoint and persona (its attempts run in a loop)."""
    for endpoint in endpoints.endpoints():
        try:
            rule = endpoints.classify(endpoint)
        except endpoints.Unclassified:
            continue  # test_every_endpoint_is_classified names it
        for persona in PERSONAS:
            tried = attempts(endpoint, rule, persona)
            if tried:
                yield pytest.param(endpoint, rule, persona, tried, id=f"{endpoint.route}|{persona}")


# --- the seeded world: one dataset for the module, rolled back at its end ---------------------------------


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker) -> Iterator[Seed]:
    """Tenant A's data in every model a page or the API lists, and the personas' users and tokens."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            yield seed()
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def seed() -> Seed:
    world = Seed()
    job = factories.job("zq-alpha-job", NAMESPACE_A, phase="Failed", state_message="zq-alpha-secret-message")
    replica = factories.replica(job, "worker", 0)
    sweep = factories.sweep(
        "zq-alpha-sweep", NAMESPACE_A, workflows=[{"name": "zq-alpha-workflow"}], best_parameters={"lr": "7"}
    )
    trials = factories.trial_rows(sweep, 3)
    for trial in trials:
        trial.params = {"lr": trial.params["lr"], "optimizer": "zqadamopt"}
        trial.message = "zq-alpha-trial-message"
    Trial.objects.bulk_create(trials)
    tensorboard = factories.tensorboard("zq-alpha-tb", NAMESPACE_A, source_name="zq-alpha-sweep")
    gc_run = factories.gc_run(NAMESPACE_A, [(NAMESPACE_A, "zq-alpha-gc-pod")], note="zq-alpha-gc-note")
    cluster_run = factories.gc_run(
        "",
        [(NAMESPACE_A, "zq-alpha-cluster-pod")],
        failures=[{"what": f"delete Pod {NAMESPACE_A}/zq-alpha-failed-pod", "error": "Forbidden"}],
        note="zq-alpha-cluster-note",
    )
    GCRun.objects.filter(pk=cluster_run.pk).update(scanned=987654)
    rule = InjectionRule.objects.create(name="zq-alpha-rule", namespaces=[NAMESPACE_A])
    runtime = factories.runtime("zq-alpha-runtime", NAMESPACE_A)
    train_job = factories.train_job(
        "zq-alpha-tj", NAMESPACE_A, runtime_name="zq-alpha-runtime", runtime_kind="TrainingRuntime",
        runtime_generation=1, state_message="zq-alpha-tj-message",
        labels={"argoml.io/hyperparam-workflow-uid": sweep.uid},  # one of the sweep's trials
    )  # fmt: skip
    train_job_pod = factories.train_job_pod(train_job, "node", 0, node="zq-alpha-node")
    factories.status_updates(train_job, 2, zqalphametric="0.5")
    world.objects = {
        "job": job,
        "replica": replica,
        "sweep": sweep,
        "tensorboard": tensorboard,
        "gc-run": gc_run,
        "gc-run-cluster": cluster_run,
        "rule": rule,
        "trainjob": train_job,
        "trainjob-pod": train_job_pod,
        "runtime": runtime,
    }
    for row in (job, replica, sweep, tensorboard, train_job, runtime):
        world.markers |= {row.name, row.uid}
    world.markers |= {
        "zq-alpha-secret-message",
        "zq-alpha-workflow",
        "zqadamopt",
        "zq-alpha-trial-message",
        "zq-alpha-gc-pod",
        "zq-alpha-gc-note",
        "zq-alpha-cluster-pod",
        "zq-alpha-failed-pod",
        "zq-alpha-cluster-note",
        "987654",
        "zq-alpha-rule",
        "zq-alpha-tj-message",
        "zq-alpha-node",
        "zqalphametric",
        NAMESPACE_A,
    }
    world.objects["clients"] = {
        persona: _client(user, token) for persona, (user, token) in _personas().items()
    }
    world.objects["clients"]["anonymous"] = Client(raise_request_exception=False)
    return world


def _personas() -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    user_model = get_user_model()
    grants = {
        "owner": [(NAMESPACE_A, Role.EDITOR)],
        "outsider": [],
        "viewer-elsewhere": [(NAMESPACE_B, Role.VIEWER)],
        "editor-elsewhere": [(NAMESPACE_B, Role.EDITOR)],
        "viewer-of-a": [(NAMESPACE_A, Role.VIEWER), (NAMESPACE_B, Role.EDITOR)],
    }
    users = {}
    for persona, granted in grants.items():
        user = user_model.objects.create_user(f"tenant-{persona}", password=uuid.uuid4().hex)
        for namespace, role in granted:
            NamespaceGrant.objects.create(user=user, namespace=namespace, role=role)
        users[persona] = (user, Token.objects.create(user=user).key)
    return users


def _client(user: Any, token: str) -> Client:
    """A signed-in session for the dashboard and a token for the API (DRF tries the token first)."""
    client = Client(headers={"Authorization": f"Token {token}"}, raise_request_exception=False)
    client.force_login(user)
    return client


def client_for(world: Seed, persona: str) -> Client:
    return world.objects["clients"][persona]


# --- building and sending one attempt ----------------------------------------------------------------------


def path_values(endpoint: Endpoint, rule: Rule, world: Seed, variant: str) -> dict[str, object]:
    """Values for every path parameter: the target's pk (or its uid, name, a path trick), team-a, ..."""
    target = world.objects.get(rule.target or "job")
    name = getattr(target, "name", "zq-alpha-job")
    by_variant = {
        "pk": target.pk,
        "uid": getattr(target, "uid", target.pk),
        "name": name,
        "encoded-slash": f"{NAMESPACE_A}%2F{name}",
        "dot-dot": f"..%2F..%2F{NAMESPACE_A}%2F{name}",
        "also": world.objects[rule.also].pk if rule.also else None,
    }
    suffix_format = "<drf_format_suffix" in endpoint.route
    return {
        "pk": by_variant[variant],
        "replica_pk": world.objects["replica"].pk,
        "pod_pk": world.objects["trainjob-pod"].pk,
        "namespace": NAMESPACE_A,
        "kind": "TFJob",
        "name": "htmx.min.js" if endpoint.name == "dashboard:vendored" else name,
        "tab": "trials",
        "format": ".json" if suffix_format else "json",
        "object_id": world.objects["job"].pk,
        "id": world.objects["job"].pk,
        "content_type_id": 1,
        "app_label": "jobs",
        "url": "no-such-page/",
    }


def build_path(endpoint: Endpoint, rule: Rule, world: Seed, attempt: Attempt) -> str:
    values = path_values(endpoint, rule, world, attempt.variant)
    if attempt.variant in ("pk", "also"):
        built = endpoints.concrete_path(endpoint, values)
    else:  # path tricks need not resolve; whatever answers must still refuse
        built = "/" + endpoints.template(endpoint.route).format_map(endpoints._Values(values))
    target = world.objects.get(rule.target or "job")
    query = attempt.query.format(name=getattr(target, "name", ""))
    return f"{built}?{query}" if query else built


def send(client: Client, method: str, url: str, body: str) -> Any:
    if body == "hostile-json":
        return client.generic(method, url, json.dumps(HOSTILE_BODY), content_type="application/json")
    if body == "unnamed-json":
        return client.generic(method, url, json.dumps(UNNAMED_BODY), content_type="application/json")
    if body == "move-namespace":
        moved = {"namespace": NAMESPACE_B, "metadata": {"namespace": NAMESPACE_B}}
        return client.generic(method, url, json.dumps(moved), content_type="application/json")
    if body == "hostile-form":
        return getattr(client, method.lower())(url, {"manifest": HOSTILE_MANIFEST, "action": "create"})
    return client.generic(method, url)


def leaked(world: Seed, response: Any, sent: str) -> list[str]:
    """A's strings in the response that the caller did not send itself."""
    text = b"".join(response.streaming_content) if response.streaming else response.content
    body = text.decode("utf-8", "replace") + " ".join(f"{k}: {v}" for k, v in response.headers.items())
    return sorted(marker for marker in world.markers if marker in body and marker not in sent)


def is_sign_in_redirect(response: Any, route: str) -> bool:
    if response.status_code != 302:
        return False
    location = response.headers.get("Location", "")
    return location.startswith("/admin/login/" if route.startswith("admin/") else "/dashboard/login/")


# --- the tests ---------------------------------------------------------------------------------------------


def test_every_endpoint_is_classified():
    assert endpoints.unclassified(endpoints.endpoints()) == []


urlpatterns: list[URLPattern] = [
    path("healthz", lambda request: None, name="healthz"),
    path("api/brand-new/<int:pk>/", lambda request, pk: None, name="brand-new-detail"),
]


def test_an_endpoint_the_table_does_not_classify_fails_the_suite():
    assert endpoints.unclassified(endpoints.endpoints(__name__)) == ["brand-new-detail"]
    with pytest.raises(endpoints.Unclassified, match="brand-new-detail"):
        endpoints.classify(endpoints.endpoints(__name__)[1])


def test_the_admin_is_classified_by_its_prefix_and_its_sign_in_page_is_public():
    admin_change = Endpoint(
        "admin:jobs_trainingjob_change", "admin/jobs/trainingjob/<path:object_id>/change/", None
    )
    assert endpoints.classify(admin_change).kind == Kind.ADMIN
    assert endpoints.classify(Endpoint("admin:login", "admin/login/", None)).kind == Kind.LOGIN


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        ("dashboard/jobs/<int:pk>/", "dashboard/jobs/{pk}/"),
        ("api/^jobs/(?P<pk>[^/.]+)\\.(?P<format>[a-z0-9]+)/?$", "api/jobs/{pk}.{format}/"),
        ("admin/^(?P<app_label>auth|jobs)/$", "admin/{app_label}/"),
        ("api/<drf_format_suffix:format>", "api/{format}"),
    ],
)
def test_a_route_becomes_a_template(route, expected):
    assert endpoints.template(route) == expected


def test_webhooks_are_not_served_by_the_web_process():
    served = [e.key for e in endpoints.endpoints() if endpoints.classify(e).kind == Kind.NOT_ON_WEB]
    assert served == []


def test_the_webhook_listener_serves_admission_reviews_progress_and_probes_only():
    """Its own URLconf, walked like the web server's: a new endpoint there fails this test until it is
    classified (the listener is reached by the API server and, for progress, by training pods proving
    themselves with a token: `test_only_a_trainjobs_own_pods_report_its_progress`)."""
    served = {endpoint.route: endpoint.key for endpoint in endpoints.endpoints("argoml_site.webhook_urls")}
    assert served == {
        "webhooks/validate": "webhooks-validate",
        "webhooks/mutate": "webhooks-mutate",
        "apis/trainer.kubeflow.org/v1alpha1/namespaces/<str:namespace>/trainjobs/<str:name>/status": (
            "trainer-trainjob-status"
        ),
        "healthz": "healthz",
        "readyz": "readyz",
    }


def test_the_tensorboard_origin_serves_the_proxy_only():
    """Its own URLconf (argoml_site/tensorboard_urls.py), walked like the web server's: a new pattern there
    fails this test. Who may read through it, by a pass of their own and a live grant, never by the
    dashboard's session: dashboard/tests/test_tensorboard_origin.py."""
    served = {
        endpoint.route: endpoint.key for endpoint in endpoints.endpoints("argoml_site.tensorboard_urls")
    }
    assert served == {
        "tensorboards/<k8s-namespace:namespace>/<k8s-name:name>/": "tensorboard-proxy-root",
        "tensorboards/<k8s-namespace:namespace>/<k8s-name:name>/<path:path>": "tensorboard-proxy",
    }
    assert not [e.key for e in endpoints.endpoints() if e.route.startswith("tensorboards/")]


@pytest.fixture
def trainjob_cluster(kubesim_factory, settings) -> Iterator[Any]:
    simulator = kubesim_factory(auth=True)
    settings.KUBECONFIG = str(simulator.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    settings.ROOT_URLCONF = settings.WEBHOOK_URLCONF
    kube.client.reset_client()
    yield simulator
    kube.client.reset_client()


def test_only_a_trainjobs_own_pods_report_its_progress(trainjob_cluster):
    """The progress endpoint's callers are pods, not users: anonymous, a pod that is not the job's, a pod
    of another job (with this job's audience or its own) and a pod of the same-named job of another
    namespace are all refused, and the TrainJob's status is untouched; the job's own pod is the control."""
    namespace_a = progress.prepare(trainjob_cluster)
    namespace_b = progress.namespace(trainjob_cluster)
    _, [own] = progress.train_job(namespace_a, "zq-alpha-trainjob")
    _, [sibling_job_pod] = progress.train_job(namespace_a, "zq-other-trainjob")
    _, [elsewhere] = progress.train_job(namespace_b, "zq-alpha-trainjob")
    stranger = kube.client.get_client().create(
        POD, progress.pod(namespace_a, "zq-stranger", {"app": "notebook"}, [])
    )
    audience = trainer_statusserver.token_audience(namespace_a, "zq-alpha-trainjob")
    url = trainer_statusserver.status_path(namespace_a, "zq-alpha-trainjob")
    body = json.dumps({"trainerStatus": {"progressPercentage": 7, "lastUpdatedTime": "2026-06-12T03:00:00Z"}})
    attempts = {
        "anonymous": (None, 401),
        "a pod that is not the job's": (progress.token(namespace_a, "zq-stranger", audience), 403),
        "a pod of another job, this job's audience": (
            progress.token(namespace_a, sibling_job_pod["metadata"]["name"], audience),
            403,
        ),
        "a pod of another job, its own audience": (
            progress.job_token(namespace_a, "zq-other-trainjob", sibling_job_pod["metadata"]["name"]),
            401,
        ),
        "the same-named job's pod of another namespace": (
            progress.token(namespace_b, elsewhere["metadata"]["name"], audience),
            403,
        ),
    }
    assert stranger["metadata"]["name"] == "zq-stranger"
    for persona, (token, expected) in attempts.items():
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
        response = Client().post(url, body, content_type="application/json", **headers)
        assert response.status_code == expected, persona
        assert b"zq-alpha" not in response.content, persona
    job = kube.client.get_client().get(reporting.TRAIN_JOB, "zq-alpha-trainjob", namespace_a)
    assert "trainerStatus" not in (job.get("status") or {})
    token = progress.job_token(namespace_a, "zq-alpha-trainjob", own["metadata"]["name"])
    response = Client().post(url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200


@pytest.mark.parametrize(("endpoint", "rule", "persona", "tried"), list(cases()))
def test_a_caller_who_is_not_tenant_a_gets_nothing_of_a(world, endpoint, rule, persona, tried):
    problems = []
    for attempt in tried:
        try:
            check_attempt(world, endpoint, rule, persona, attempt)
        except AssertionError as error:
            problems.append(f"{case_id(endpoint, persona, attempt)}: {str(error).splitlines()[0]}")
    assert not problems, "\n".join(problems)


def check_attempt(world: Seed, endpoint: Endpoint, rule: Rule, persona: str, attempt: Attempt) -> None:
    url = build_path(endpoint, rule, world, attempt)
    response = send(client_for(world, persona), attempt.method, url, attempt.body)
    sent = url + (json.dumps(HOSTILE_BODY) + HOSTILE_MANIFEST if attempt.body else "")
    status = response.status_code
    where = response.headers.get("Location")
    if rule.kind in (Kind.PUBLIC, Kind.LOGIN, Kind.ASSET):
        assert status in (200, 503) if rule.kind == Kind.PUBLIC else status == 200, status
        assert_no_details(response)
    elif rule.kind == Kind.TOKEN:
        assert status in (400, 401, 403, 429), status
    elif persona == "anonymous":
        if rule.kind == Kind.SIGN_OUT:
            assert status in (302, 405), status
        elif endpoint.route.startswith(PAGE_PREFIXES) or endpoint.route in PAGES:
            assert is_sign_in_redirect(response, endpoint.route), f"{status} {where}"
        else:
            assert status in ANONYMOUS_API | {404, 405}, status
    elif rule.kind == Kind.ADMIN:
        assert is_sign_in_redirect(response, endpoint.route), f"{status} {where}"
    elif rule.kind == Kind.NOT_ON_WEB:
        assert status == 404, status
    elif rule.kind == Kind.OPERATOR:
        assert status in (401, 403), status
    elif attempt.method == "GET" and rule.kind in (
        Kind.LIST, Kind.CREATE_LIST, Kind.OVERVIEW, Kind.SELF, Kind.SIGNED_IN, Kind.SUBMIT_FORM
    ):  # fmt: skip
        assert status in (200, 302, 400, 405), status
    elif attempt.variant == "also":
        # A cluster-wide GC run shows a tenant only its own namespaces' part (nothing, for a stranger);
        # its totals are staff's. The leak check below looks for both.
        assert status in REFUSED | {200}, status
    elif rule.kind == Kind.SUBMIT_FORM:
        assert status in (403, 422), status
    elif attempt.body == "unnamed-json" and persona in EDITORS_ELSEWHERE:
        assert status in (200, 400), status  # their own work; the leak check below still applies
    else:
        assert status in REFUSED, status
    found = leaked(world, response, sent)
    assert found == [], f"{status}: A's {found} in the answer"
    if rule.kind == Kind.OVERVIEW and status == 200:
        assert_counts_are_zero(response)


def assert_no_details(response: Any) -> None:
    """Public answers carry no connection details (hosts, users, URLs of the dependencies)."""
    body = response.content.decode("utf-8", "replace") if not response.streaming else ""
    database = settings.DATABASES["default"]
    secrets = [settings.REDIS_URL, database.get("HOST") or "", database.get("USER") or "", "Error"]
    assert [secret for secret in secrets if secret and secret in body] == []


def assert_counts_are_zero(response: Any) -> None:
    """The strangers have no objects of their own, so every count the overview shows is zero."""
    counts = [*response.context["job_counts"], *response.context["sweep_counts"]]
    assert [(phase, count) for phase, count in counts if count] == []
    assert list(response.context["tensorboards"]) == []


CONTROL_KINDS = (Kind.OBJECT, Kind.LIST, Kind.CREATE_LIST, Kind.EXPORT, Kind.PLOT)


def control_cases() -> Iterator[Any]:
    for endpoint in endpoints.endpoints():
        rule = endpoints.TABLE.get(endpoint.key)
        if rule is not None and rule.kind in CONTROL_KINDS:
            yield pytest.param(endpoint, rule, id=endpoint.route)


@pytest.mark.parametrize(("endpoint", "rule"), list(control_cases()))
def test_tenant_a_sees_its_own_objects_on_the_same_paths(world, endpoint, rule):
    """The control: the paths the strangers were refused do show A's objects to A, so the attacks aim true."""
    url = build_path(endpoint, rule, world, Attempt("get", "GET"))
    response = client_for(world, "owner").get(url)
    assert response.status_code == 200, response.status_code
    assert leaked(world, response, sent="") != []
