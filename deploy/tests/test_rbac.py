"""RBAC is least privilege: each process is granted exactly the API calls its code makes.

The calls are derived from the source (apicalls.py: every KubeClient call site, its verb and the resource
types it can touch); rbac_model.py says which process runs which code. The grants are read from the
rendered manifests: a workload's entrypoint command names its process, its ServiceAccount leads through
the bindings to the rules. A call the code makes without a grant fails here, and so does a grant no code
uses.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import pytest

from .apicalls import (
    ApiCall,
    CallSite,
    Resolver,
    api_call_sites,
    find_call_sites,
    load_modules,
    unclassified_client_methods,
)
from .apicalls import resolve_site as resolve
from .manifests import NAMESPACE, Manifest, kustomize_build, load_values, of_kind, pod_specs, render_chart
from .rbac_model import CODE_AREAS, HINTS, PROCESS_AREAS, needs_call

#: Trainer's public ConfigMap's binding (trainer.installCRDs), the one binding to a Group.
PUBLIC_BINDING = "kubeflow-trainer-public"
#: Resources granted only in the release's namespace (a Role), never cluster-wide...
NAMESPACED_ONLY = {"leases", "secrets"}
#: ...except these verbs, which read nothing: the operator creates each MPIJob's SSH key Secret.
CLUSTER_WIDE_VERBS = {"secrets": {"create"}}


@pytest.fixture(scope="module")
def call_sites() -> list[CallSite]:
    return api_call_sites(HINTS, CODE_AREAS)


def needed_by_process(
    sites: Iterable[CallSite], gang_scheduler: str = "none", kubeflow: bool = False, trainer: bool = False
) -> dict[str, set[ApiCall]]:
    needed: dict[str, set[ApiCall]] = {process: set() for process in PROCESS_AREAS}
    for site in sites:
        for process, runs in PROCESS_AREAS.items():
            if site.areas & runs:
                needed[process] |= {
                    c
                    for c in site.calls
                    if needs_call(c.group, c.resource, gang_scheduler, kubeflow, trainer)
                }
    return needed


def rule_calls(rule: Manifest) -> set[ApiCall]:
    return {
        ApiCall(group, resource, verb)
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
    }


def grants(manifests: list[Manifest]) -> dict[str, dict[str, set[ApiCall]]]:
    """ServiceAccount → {"cluster": calls granted cluster-wide, "namespace": calls granted in a namespace}."""
    roles = {(r["kind"], r["metadata"]["name"]): r for r in of_kind(manifests, "Role", "ClusterRole")}
    granted: dict[str, dict[str, set[ApiCall]]] = defaultdict(lambda: {"cluster": set(), "namespace": set()})
    for binding in of_kind(manifests, "RoleBinding", "ClusterRoleBinding"):
        role = roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]
        scope = "cluster" if binding["kind"] == "ClusterRoleBinding" else "namespace"
        if binding["metadata"]["name"] == PUBLIC_BINDING:
            continue  # every authenticated user's, not a process's (test_chart_trainer.py)
        for subject in binding["subjects"]:
            assert subject["kind"] == "ServiceAccount", f"{binding['metadata']['name']}: binds {subject}"
            for rule in role.get("rules", []):
                granted[subject["name"]][scope] |= rule_calls(rule)
    return granted


def processes(manifests: list[Manifest]) -> dict[str, tuple[str, bool]]:
    """Entrypoint command → (ServiceAccount, token mounted) of every workload."""
    found = {}
    for workload, pod in pod_specs(manifests):
        command = pod["containers"][0]["args"][0]
        account = pod.get("serviceAccountName", "default")
        previous = found.setdefault(command, (account, pod.get("automountServiceAccountToken", True)))
        assert previous[0] == account, f"{workload['metadata']['name']}: {command} runs as two accounts"
    return found


def describe(calls: Iterable[ApiCall]) -> str:
    return ", ".join(map(str, sorted(calls))) or "nothing"


RENDERINGS = {
    "chart defaults": lambda: render_chart(),
    "chart production values": lambda: render_chart(load_values("production")),
    "chart without Helm hooks": lambda: render_chart({"webhooks": {"certJob": {"helmHooks": False}}}),
    "kustomize base": lambda: kustomize_build(),
    "chart with volcano": lambda: render_chart({"jobs": {"gangScheduler": "volcano"}}),
    "chart with scheduler-plugins": lambda: render_chart({"jobs": {"gangScheduler": "scheduler-plugins"}}),
    "chart with Kubeflow v1 kinds": lambda: render_chart({"kubeflow": {"installCRDs": True}}),
    "chart with Trainer's kinds and runtimes": lambda: render_chart(
        {"trainer": {"installCRDs": True, "installRuntimes": True}}
    ),
}
#: The renderings that serve Kubeflow's v1 kinds (kubeflow.installCRDs).
KUBEFLOW_RENDERINGS = {"chart with Kubeflow v1 kinds"}
#: The renderings that serve Kubeflow Trainer's kinds (trainer.installCRDs).
TRAINER_RENDERINGS = {"chart with Trainer's kinds and runtimes"}
#: The gang scheduler of the renderings that name one (jobs.gangScheduler); the others have none.
GANG_SCHEDULERS = {"chart with volcano": "volcano", "chart with scheduler-plugins": "scheduler-plugins"}


def test_every_kube_client_method_has_a_known_verb():
    assert not unclassified_client_methods(), "teach deploy/tests/apicalls.py the verb of these methods"


def test_every_api_call_in_the_code_is_resolved_to_resource_types(call_sites):
    problems = [f"{site.where}: {site.problem}" for site in call_sites if site.problem]
    assert not problems, "\n".join(problems)
    assert len(call_sites) > 30, "the scan found suspiciously few call sites"


def test_every_api_call_is_attributed_to_the_processes_that_make_it(call_sites):
    unattributed = [site.where for site in call_sites if not site.areas]
    assert not unattributed, "say in deploy/tests/rbac_model.py CODE_AREAS which process runs: " + ", ".join(
        unattributed
    )


@pytest.mark.parametrize("rendering", list(RENDERINGS))
def test_each_process_is_granted_exactly_the_api_calls_its_code_makes(rendering, call_sites):
    manifests = RENDERINGS[rendering]()
    needed = needed_by_process(
        call_sites,
        GANG_SCHEDULERS.get(rendering, "none"),
        kubeflow=rendering in KUBEFLOW_RENDERINGS,
        trainer=rendering in TRAINER_RENDERINGS,
    )
    granted = grants(manifests)
    mismatches = []
    for process, (account, token_mounted) in processes(manifests).items():
        assert process in PROCESS_AREAS, f"{process}: an entrypoint command rbac_model.py does not know"
        scopes = granted.get(account, {"cluster": set(), "namespace": set()})
        has = scopes["cluster"] | scopes["namespace"]
        missing, unused = needed[process] - has, has - needed[process]
        if missing:
            mismatches.append(f"{process} ({account}) lacks: {describe(missing)}")
        if unused:
            mismatches.append(f"{process} ({account}) is granted but never uses: {describe(unused)}")
        if has and not token_mounted:
            mismatches.append(f"{process} ({account}) is granted calls but mounts no token")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("rendering", list(RENDERINGS))
def test_rbac_has_no_wildcards_and_keeps_leases_and_secrets_in_the_release_namespace(rendering):
    manifests = RENDERINGS[rendering]()
    for role in of_kind(manifests, "Role", "ClusterRole"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule.get(field, []), f"{role['metadata']['name']}: {field} has a wildcard"
            assert not rule.get("nonResourceURLs"), f"{role['metadata']['name']}: grants non-resource URLs"
            if role["kind"] == "ClusterRole":
                for resource in set(rule["resources"]) & NAMESPACED_ONLY:
                    allowed = CLUSTER_WIDE_VERBS.get(resource, set())
                    assert set(rule["verbs"]) <= allowed, f"{role['metadata']['name']}: {rule}"
            elif role["metadata"]["name"] != PUBLIC_BINDING:  # in Trainer's namespace, as upstream
                assert role["metadata"]["namespace"] == NAMESPACE
    for binding in of_kind(manifests, "RoleBinding"):
        if binding["metadata"]["name"] != PUBLIC_BINDING:
            assert binding["metadata"]["namespace"] == NAMESPACE


def test_the_lease_and_the_webhook_secret_are_the_only_ones_their_processes_may_read_or_write():
    manifests = render_chart()
    config = of_kind(manifests, "ConfigMap")[0]["data"]
    by_name = {role["metadata"]["name"]: role for role in of_kind(manifests, "Role")}
    for role, name in (
        ("argoml-leader-election", config["KUBE_LEADER_ELECTION_LEASE_NAME"]),
        ("argoml-webhook-certs", "argoml-webhook-tls"),
    ):
        rules = by_name[role]["rules"]
        restricted = {verb for rule in rules if rule.get("resourceNames") == [name] for verb in rule["verbs"]}
        unrestricted = {verb for rule in rules if not rule.get("resourceNames") for verb in rule["verbs"]}
        assert restricted == {"get", "update"}, role
        assert unrestricted == {"create"}, f"{role}: only a create cannot be limited to a name"


def test_beat_and_migrations_have_no_api_access_and_mount_no_token():
    manifests = render_chart()
    granted = grants(manifests)
    for process in ("beat", "migrate"):
        account, token_mounted = processes(manifests)[process]
        assert not token_mounted
        assert account not in granted


# -- the scanner itself must be able to fail -------------------------------------------------------------
def scan_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> list[CallSite]:
    """Scan one throwaway module, written as an app package would be, with the real resolver."""
    package = tmp_path / "scanme"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "reconcile.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = load_modules(["scanme"], root=tmp_path)
    resolver = Resolver(modules, {})
    sites = find_call_sites(modules)
    for site in sites:
        resolve(site, resolver)
    return sites


def test_the_scanner_follows_a_resource_through_parameters_and_loops(tmp_path, monkeypatch):
    sites = scan_source(
        tmp_path,
        monkeypatch,
        """
        from kube.client import get_client
        from kube.resources import POD, SECRET, SERVICE

        CHILDREN = {"Pod": POD, "Service": SERVICE}

        def _remove(client, rtype, name):
            client.delete(rtype, name, "ns")

        def sweep():
            client = get_client()
            for kind, rtype in CHILDREN.items():
                _remove(client, rtype, kind)
            get_client().replace(SECRET, {}, subresource="status")
        """,
    )
    assert {str(call) for site in sites for call in site.calls} == {
        "delete pods.core",
        "delete services.core",
        "update secrets/status.core",
    }


def test_the_scanner_reports_a_call_it_cannot_resolve(tmp_path, monkeypatch):
    sites = scan_source(
        tmp_path,
        monkeypatch,
        """
        from kube.client import get_client

        def anything(make_type):
            get_client().get(make_type(), "name")
        """,
    )
    assert len(sites) == 1
    assert "cannot tell what" in sites[0].problem
