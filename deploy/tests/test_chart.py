"""The Helm chart: it renders (Helm's own engine), validates against the Kubernetes 1.30+ schemas, applies
to kubesim with `kubectl apply --server-side`, and says what production needs (restricted pods, probes,
resources, disruption budgets, webhooks as the code declares them)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kube import ratelimit
from webhooks.configurations import (
    CONTAINER_PORT,
    WEBHOOK_POD_LABELS,
    Target,
    configurations,
    service_dns_names,
)

from .kubesim_apply import apply_server_side, install_third_party_crds, kubectl
from .manifests import (
    CHART,
    DEPLOY,
    REPO,
    Manifest,
    chart_crds,
    containers,
    is_hook,
    load_values,
    named,
    of_kind,
    pod_specs,
    render_against,
    render_chart,
    render_notes,
    schema_errors,
)

#: Value sets every test below renders: the defaults, the production example, CI's kind install, and the
#: switches that change which objects exist.
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "production": load_values("production"),
    "kind": load_values("kind"),
    "without Helm hooks": {"webhooks": {"certJob": {"helmHooks": False}}},
    "cert-manager self-signed": {"webhooks": {"certManager": {"enabled": True}}},
    "webhooks off, no RBAC objects": {"webhooks": {"enabled": False}, "rbac": {"create": False}},
    "chart-made secret, autoscaled workers, ingress": {
        "secrets": {
            "create": True,
            "values": {"SECRET_KEY": "k", "DATABASE_URL": "postgres://d", "REDIS_URL": "redis://r"},
        },
        "worker": {"autoscaling": {"enabled": True}},
        "ingress": {"enabled": True},
        "networkPolicy": {"egress": {"enabled": True}},
        "metrics": {"serviceMonitor": {"enabled": True}},
    },
    "Kubeflow v1 kinds": {"kubeflow": {"installCRDs": True}},
    "Trainer's kinds and runtimes": {"trainer": {"installCRDs": True, "installRuntimes": True}},
    "TrainJob progress": {"trainer": {"installCRDs": True, "progress": {"enabled": True}}},
    "metrics token from its own Secret": {
        "metrics": {"token": {"enabled": True}, "serviceMonitor": {"enabled": True}},
        "secrets": {"fromSecrets": {"METRICS_TOKEN": {"secretName": "argoml-metrics-token", "key": "token"}}},
    },
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def rendered(request) -> list[Manifest]:
    return render_chart(VARIANTS[request.param])


def env_of(container: Manifest) -> dict[str, str]:
    return {item["name"]: item.get("value", "") for item in container.get("env", [])}


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


# -- validity ---------------------------------------------------------------------------------------------
def test_every_rendered_manifest_validates_against_the_kubernetes_schemas(rendered):
    assert not schema_errors(rendered)


def test_the_crds_validate_too_and_are_the_generated_ones():
    assert not schema_errors(chart_crds())
    generated = sorted((DEPLOY / "crds").glob("*.yaml"))
    assert [path.name for path in sorted((CHART / "crds").glob("*.yaml"))] == [
        path.name for path in generated
    ]
    for path in generated:
        copy = CHART / "crds" / path.name
        assert copy.read_text() == path.read_text(), f"{copy} differs: cp deploy/crds/*.yaml {copy.parent}/"


def test_kubeflows_crds_are_the_generated_ones_and_installed_only_when_asked_and_kept_on_uninstall():
    generated = sorted((DEPLOY / "crds" / "kubeflow").glob("*.yaml"))
    assert [path.name for path in generated] == [
        "jaxjobs.kubeflow.org.yaml",
        "mpijobs.kubeflow.org.yaml",
        "mxjobs.kubeflow.org.yaml",
        "paddlejobs.kubeflow.org.yaml",
        "pytorchjobs.kubeflow.org.yaml",
        "tfjobs.kubeflow.org.yaml",
        "xgboostjobs.kubeflow.org.yaml",
    ]
    for path in generated:
        copy = CHART / "kubeflow-crds" / path.name
        assert copy.read_text() == path.read_text(), (
            f"{copy} differs: cp deploy/crds/kubeflow/*.yaml {copy.parent}/"
        )
    assert not of_kind(render_chart(), "CustomResourceDefinition")
    installed = of_kind(render_chart(VARIANTS["Kubeflow v1 kinds"]), "CustomResourceDefinition")
    assert [crd["spec"]["group"] for crd in installed] == ["kubeflow.org"] * len(generated)
    assert all(crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"} for crd in installed)


def test_the_operator_serves_kubeflows_group_and_is_granted_it_only_with_the_value():
    def kubeflow_rules(manifests):
        return [
            (role["metadata"]["name"], rule["verbs"])
            for role in of_kind(manifests, "ClusterRole")
            for rule in role["rules"]
            if "kubeflow.org" in rule["apiGroups"]
        ]

    def serves(manifests):
        (configmap,) = [m for m in of_kind(manifests, "ConfigMap") if "JOBS_KUBEFLOW_V1" in m.get("data", {})]
        return configmap["data"]["JOBS_KUBEFLOW_V1"]

    assert (serves(render_chart()), kubeflow_rules(render_chart())) == ("false", [])
    with_kubeflow = render_chart(VARIANTS["Kubeflow v1 kinds"])
    assert serves(with_kubeflow) == "true"
    assert {name.rsplit("-", 1)[1] for name, _verbs in kubeflow_rules(with_kubeflow)} == {
        "web",
        "reconcile",
        "tasks",
        "watch",
    }


def test_the_install_refuses_a_kubeflow_crd_another_operator_owns_saying_what_to_do(kubesim):
    import helm_python

    from argoml_site.crds import KUBEFLOW_RESOURCES

    theirs = KUBEFLOW_RESOURCES[0].manifest()
    theirs["metadata"]["labels"] = {}  # as Kubeflow's own manifests install it
    kubesim.store.create(theirs)
    with pytest.raises(helm_python.HelmError) as refused:
        render_against(kubesim, VARIANTS["Kubeflow v1 kinds"])
    message = str(refused.value)
    assert "kubeflow.installCRDs: CustomResourceDefinition tfjobs.kubeflow.org already exists" in message
    assert "Uninstall Kubeflow's training-operator (its jobs stay)" in message
    assert "kubectl label crd tfjobs.kubeflow.org app.kubernetes.io/part-of=argoml" in message
    assert render_against(kubesim, {})  # without the value the chart does not care


def test_the_install_adopts_kubeflow_crds_that_are_already_ours(kubesim):
    from argoml_site.crds import KUBEFLOW_RESOURCES

    for resource in KUBEFLOW_RESOURCES:
        kubesim.store.create(resource.manifest())  # labelled part-of: argoml, as render_crds writes them
    rendered = render_against(kubesim, VARIANTS["Kubeflow v1 kinds"])
    assert "tfjobs.kubeflow.org" in rendered["argoml/templates/kubeflow-crds.yaml"]


@pytest.mark.parametrize(
    "values", ["defaults", "production", "Kubeflow v1 kinds", "Trainer's kinds and runtimes"]
)
def test_helm_lint_finds_nothing_wrong(values):
    import helm_python

    report = helm_python.lint(str(CHART), VARIANTS[values], strict=True, kube_version="v1.30.0")
    problems = [message for message in report["messages"] if message["severity"] >= 2]
    assert not report["errors"], report
    assert not problems, report


@pytest.mark.parametrize(
    "values",
    [
        "defaults",
        "production",
        "cert-manager self-signed",
        "Kubeflow v1 kinds",
        "Trainer's kinds and runtimes",
    ],
)
def test_the_chart_applies_cleanly_to_kubesim_server_side_and_again_unchanged(kubesim, values):
    install_third_party_crds(kubesim)
    apply_server_side(kubesim, chart_crds(), "argoml")
    manifests = render_chart(VARIANTS[values])
    first = apply_server_side(kubesim, manifests, "argoml")
    assert first.count("serverside-applied") == len(manifests)
    # Applying the same release again is a no-op for every object, as a `helm upgrade` with no change is.
    before = {m["kind"] + "/" + m["metadata"]["name"]: rv for m, rv in stored_versions(kubesim, manifests)}
    apply_server_side(kubesim, manifests, "argoml")
    after = {m["kind"] + "/" + m["metadata"]["name"]: rv for m, rv in stored_versions(kubesim, manifests)}
    assert before == after
    listed = kubectl(kubesim, "get", "deployments,services,jobs", "-n", "argoml", "-o", "name").stdout.split()
    assert "deployment.apps/argoml-web" in listed
    assert "service/argoml-webhooks" in listed


def stored_versions(simulator, manifests: list[Manifest]) -> list[tuple[Manifest, str]]:
    versions = []
    for manifest in manifests:
        resource = simulator.store.registry.for_kind(manifest["apiVersion"], manifest["kind"])
        namespace = manifest["metadata"].get("namespace") if resource.namespaced else None
        stored = simulator.store.get(resource.key, manifest["metadata"]["name"], namespace)
        versions.append((manifest, stored["metadata"]["resourceVersion"]))
    return versions


# -- restricted pods --------------------------------------------------------------------------------------
def test_every_pod_and_container_runs_restricted(rendered):
    for workload, pod in pod_specs(rendered):
        name = workload["metadata"]["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for host_namespace in ("hostNetwork", "hostPID", "hostIPC"):
            assert not pod.get(host_namespace), f"{name}: {host_namespace}"
        assert not any("hostPath" in volume for volume in pod.get("volumes", [])), name
        for container in containers(pod):
            where = f"{name}/{container['name']}"
            context = container["securityContext"]
            assert context["runAsNonRoot"] is True, where
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"] == {"drop": ["ALL"]}, where
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}, where
            assert not context.get("privileged"), where


def test_the_writable_places_of_a_read_only_root_are_empty_dirs(rendered):
    for workload, pod in pod_specs(rendered):
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for container in containers(pod):
            mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
            for path in ("/tmp", "/var/run/argoml/metrics"):
                assert "emptyDir" in volumes[mounts[path]], f"{workload['metadata']['name']}: {path}"


def test_every_container_has_resource_requests_and_limits(rendered):
    for workload, pod in pod_specs(rendered):
        for container in containers(pod):
            resources = container["resources"]
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources[kind]), f"{workload['metadata']['name']}: {kind}"


def test_the_long_running_processes_are_probed(rendered):
    deployments = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in of_kind(rendered, "Deployment")
    }
    for name in ("argoml-web", "argoml-webhooks"):
        web = deployments[name]["containers"][0]
        assert web["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
        assert web["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
        assert web["startupProbe"]["httpGet"]["path"] == "/healthz"
    for name in ("argoml-controller", "argoml-worker"):
        container = deployments[name]["containers"][0]
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            # /healthz: /metrics needs the scrape token, which a probe does not carry.
            assert container[probe]["httpGet"] == {"path": "/healthz", "port": "metrics"}, f"{name} {probe}"
    # Beat has nothing to probe (it is PID 1; a crash restarts the container): documented, not forgotten.
    assert "livenessProbe" not in deployments["argoml-beat"]["containers"][0]


def test_the_processes_run_the_commands_of_the_architecture(default_manifests):
    commands = {
        w["metadata"]["name"]: pod["containers"][0]["args"] for w, pod in pod_specs(default_manifests)
    }
    assert commands["argoml-web"] == ["web"]
    assert commands["argoml-webhooks"] == ["webhooks"]
    assert commands["argoml-controller"] == ["controller"]
    assert commands["argoml-worker"] == ["worker"]
    assert commands["argoml-beat"] == ["beat"]
    assert commands["argoml-migrate-1"] == ["migrate"]
    entrypoint = (DEPLOY / "docker-entrypoint.sh").read_text()
    assert 'celery_worker controller reconcile --pool threads --controllers "$@"' in entrypoint
    assert 'celery_worker worker reconcile,default "$@"' in entrypoint
    assert "django_celery_beat.schedulers:DatabaseScheduler" in entrypoint


# -- replicas, disruption budgets, selectors ------------------------------------------------------------
def test_two_controllers_campaign_and_exactly_one_beat_runs(default_manifests):
    controller = named(default_manifests, "Deployment", "argoml-controller")
    beat = named(default_manifests, "Deployment", "argoml-beat")
    assert controller["spec"]["replicas"] == 2
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}


def test_every_budget_and_service_selects_the_pods_it_is_meant_for(rendered):
    pods = {
        d["metadata"]["name"].removeprefix("argoml-"): d["spec"]["template"]["metadata"]["labels"]
        for d in of_kind(rendered, "Deployment")
    }
    for budget in of_kind(rendered, "PodDisruptionBudget"):
        component = budget["metadata"]["name"].removeprefix("argoml-")
        assert selects(budget["spec"]["selector"]["matchLabels"], pods[component])
        assert [
            name
            for name, labels in pods.items()
            if selects(budget["spec"]["selector"]["matchLabels"], labels)
        ] == [component]
    services = {s["metadata"]["name"]: s["spec"]["selector"] for s in of_kind(rendered, "Service")}
    assert [c for c, labels in pods.items() if selects(services["argoml-web"], labels)] == ["web"]
    assert [c for c, labels in pods.items() if selects(services["argoml-webhooks"], labels)] == ["webhooks"]
    assert [c for c, labels in pods.items() if selects(WEBHOOK_POD_LABELS, labels)] == ["webhooks"], (
        "the webhook Service the code declares must select the listener's pods and no others"
    )
    assert sorted(c for c, labels in pods.items() if selects(services["argoml-metrics"], labels)) == [
        "controller",
        "worker",
    ]
    webhooks = named(rendered, "Service", "argoml-webhooks")["spec"]["ports"]
    assert webhooks == [{"name": "https", "port": 443, "targetPort": CONTAINER_PORT, "protocol": "TCP"}]


def test_network_policies_admit_only_the_web_and_metrics_ports(default_manifests):
    policies = {p["metadata"]["name"]: p["spec"] for p in of_kind(default_manifests, "NetworkPolicy")}
    deny = policies["argoml-default-deny"]
    assert "ingress" not in deny
    assert deny["policyTypes"] == ["Ingress"]
    assert policies["argoml-web"]["ingress"] == [{"ports": [{"port": 8443, "protocol": "TCP"}]}]
    # The webhook listener: the API server's likely sources (private ranges) by default, never anyone.
    assert (
        policies["argoml-webhooks"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "webhooks"
    )
    assert policies["argoml-webhooks"]["ingress"] == [
        {
            "ports": [{"port": 8443, "protocol": "TCP"}],
            "from": [
                {"ipBlock": {"cidr": "10.0.0.0/8"}},
                {"ipBlock": {"cidr": "172.16.0.0/12"}},
                {"ipBlock": {"cidr": "192.168.0.0/16"}},
            ],
        }
    ]
    assert policies["argoml-metrics"]["ingress"] == [{"ports": [{"port": 9100, "protocol": "TCP"}]}]
    for _, pod_labels in (
        (d, d["spec"]["template"]["metadata"]["labels"])
        for d in of_kind(default_manifests, "Deployment", "Job")
    ):
        assert selects(deny["podSelector"]["matchLabels"], pod_labels)


# -- webhooks and TLS ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("namespace", "release", "kubeflow", "trainer"),
    [
        ("argoml", "argoml", False, False),
        ("ml-platform", "prod", False, False),
        ("argoml", "argoml", True, False),
        ("argoml", "argoml", False, True),
    ],
)
def test_the_webhook_configurations_are_the_ones_the_code_declares(namespace, release, kubeflow, trainer):
    values = {"kubeflow": {"installCRDs": kubeflow}, "trainer": {"installCRDs": trainer}}
    manifests = render_chart(values, namespace=namespace, release=release)
    service = f"{release}-argoml" if release != "argoml" else "argoml"
    target = Target(namespace=namespace, service=f"{service}-webhooks")
    declared = configurations(target, kubeflow=kubeflow, trainer=trainer)
    for expected in declared:
        actual = named(manifests, expected["kind"], expected["metadata"]["name"])
        assert actual["webhooks"] == expected["webhooks"]
        assert expected["metadata"]["labels"].items() <= actual["metadata"]["labels"].items()


def test_with_cert_manager_the_certificate_names_the_webhook_service_and_its_ca_is_injected():
    manifests = render_chart(VARIANTS["cert-manager self-signed"])
    certificate = named(manifests, "Certificate", "argoml-webhooks")
    assert certificate["spec"]["dnsNames"] == service_dns_names(Target("argoml", "argoml-webhooks"))
    assert certificate["spec"]["secretName"] == "argoml-webhook-tls"
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        annotations = named(manifests, kind, "argoml")["metadata"]["annotations"]
        assert annotations == {"cert-manager.io/inject-ca-from": "argoml/argoml-webhooks"}
    assert not [job for job in of_kind(manifests, "Job") if "webhook-certs" in job["metadata"]["name"]]


def test_without_cert_manager_hooks_issue_the_secret_before_the_release_and_the_ca_after_it(
    default_manifests,
):
    jobs = {job["metadata"]["name"]: job for job in of_kind(default_manifests, "Job") if is_hook(job)}
    issue, inject = jobs["argoml-webhook-certs-secret"], jobs["argoml-webhook-certs"]
    assert issue["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert inject["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    issue_args = issue["spec"]["template"]["spec"]["containers"][0]["args"]
    assert issue_args[:7] == [
        "webhook-certs",
        "--namespace",
        "argoml",
        "--service",
        "argoml-webhooks",
        "--secret",
        "argoml-webhook-tls",
    ]
    assert "--skip-configurations" in issue_args
    assert "--skip-configurations" not in inject["spec"]["template"]["spec"]["containers"][0]["args"]
    # A pre-install hook runs before the release's other objects exist: it may use none of them.
    for job in jobs.values():
        pod = job["spec"]["template"]["spec"]
        assert "envFrom" not in pod["containers"][0]
        assert not [v for v in pod["volumes"] if "secret" in v or "projected" in v or "configMap" in v]
    hook_rbac = [m for m in default_manifests if is_hook(m) and m["kind"] != "Job"]
    assert {m["kind"] for m in hook_rbac} == {
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    }
    assert all(int(m["metadata"]["annotations"]["helm.sh/hook-weight"]) < 0 for m in hook_rbac)


def test_the_listener_pods_serve_the_webhook_certificate_to_the_hosts_the_api_server_uses(default_manifests):
    pod = named(default_manifests, "Deployment", "argoml-webhooks")["spec"]["template"]["spec"]
    tls = next(volume for volume in pod["volumes"] if volume["name"] == "tls")
    assert tls["secret"]["secretName"] == "argoml-webhook-tls"
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "tls")
    assert mount["mountPath"] == "/tls"
    assert "subPath" not in mount, "a subPath mount never sees a renewed certificate"
    env = env_of(pod["containers"][0])
    assert (env["GUNICORN_CERTFILE"], env["GUNICORN_KEYFILE"]) == ("/tls/tls.crt", "/tls/tls.key")
    hosts = env["ALLOWED_HOSTS"].split(",")
    assert Target("argoml", "argoml-webhooks").host in hosts
    assert hosts[-1] == "$(POD_IP)", "kubelet probes and Prometheus send the pod IP as Host"
    web_pod = named(default_manifests, "Deployment", "argoml-web")["spec"]["template"]["spec"]
    assert Target("argoml", "argoml-webhooks").host not in env_of(web_pod["containers"][0])["ALLOWED_HOSTS"]


def test_the_webhook_listener_may_only_read_pytorchjobs_and_take_progress_reports(default_manifests):
    """Its cluster calls: the scale check reads the job a Scale belongs to (webhooks/scaling.py); a TrainJob
    progress report is checked by TokenReview and the reporting pod, then written to the TrainJob's status
    (trainer/progress/reporting.py)."""
    pod = named(default_manifests, "Deployment", "argoml-webhooks")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "argoml-webhooks"
    assert pod["automountServiceAccountToken"] is True
    bound = [
        binding["roleRef"]["name"]
        for binding in of_kind(default_manifests, "RoleBinding", "ClusterRoleBinding")
        for subject in binding.get("subjects", ())
        if subject["name"] == "argoml-webhooks"
    ]
    assert bound == ["argoml-webhooks"]
    assert named(default_manifests, "ClusterRole", "argoml-webhooks")["rules"] == [
        {"apiGroups": ["argoml.io"], "resources": ["pytorchjobs"], "verbs": ["get"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
    ]
    assert env_of(pod["containers"][0])["KUBE_IN_CLUSTER"] == "true"
    with_trainer = render_chart({"trainer": {"installCRDs": True}})
    assert named(with_trainer, "ClusterRole", "argoml-webhooks")["rules"][3:] == [
        {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs/status"], "verbs": ["patch"]},
        {
            "apiGroups": ["trainer.kubeflow.org"],
            "resources": ["trainingruntimes", "clustertrainingruntimes"],
            "verbs": ["get"],
        },
    ]


def test_trainjob_progress_is_off_by_default():
    """As Trainer's TrainJobStatus feature gate: no status server injected, no pod let in to the listener."""
    manifests = render_chart()
    config = named(manifests, "ConfigMap", "argoml-config")["data"]
    assert "TRAINER_STATUS_SERVER_URL" not in config
    policy = named(manifests, "NetworkPolicy", "argoml-webhooks")["spec"]
    assert len(policy["ingress"]) == 1
    for name in ("argoml-controller", "argoml-worker"):
        volumes = named(manifests, "Deployment", name)["spec"]["template"]["spec"]["volumes"]
        assert "trainer-status-ca" not in [volume["name"] for volume in volumes]


def test_trainjob_progress_on_points_pods_at_the_listener_and_lets_them_in():
    manifests = render_chart({"trainer": {"progress": {"enabled": True}}})
    config = named(manifests, "ConfigMap", "argoml-config")["data"]
    assert config["TRAINER_STATUS_SERVER_URL"] == "https://argoml-webhooks.argoml.svc:443"
    assert config["TRAINER_STATUS_CA_CERT_PATH"] == "/var/run/argoml/trainer-status-ca/ca.crt"
    # The reconciles (controller, workers) read the CA they copy into each TrainJob's ConfigMap: only
    # ca.crt of the webhook Secret, never its key.
    for name in ("argoml-controller", "argoml-worker"):
        pod = named(manifests, "Deployment", name)["spec"]["template"]["spec"]
        [volume] = [v for v in pod["volumes"] if v["name"] == "trainer-status-ca"]
        assert volume["secret"]["secretName"] == "argoml-webhook-tls"
        assert volume["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
        [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "trainer-status-ca"]
        assert mount["mountPath"] == "/var/run/argoml/trainer-status-ca"
        assert "subPath" not in mount, "a subPath mount never sees a renewed CA"
    for name in ("argoml-web", "argoml-webhooks"):
        volumes = named(manifests, "Deployment", name)["spec"]["template"]["spec"]["volumes"]
        assert "trainer-status-ca" not in [volume["name"] for volume in volumes]
    policy = named(manifests, "NetworkPolicy", "argoml-webhooks")["spec"]
    assert policy["ingress"][1] == {
        "ports": [{"port": 8443, "protocol": "TCP"}],
        "from": [
            {
                "namespaceSelector": {},
                "podSelector": {"matchLabels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            }
        ],
    }


def test_the_ingress_never_routes_to_the_webhook_listener(production_manifests):
    backends = [
        path["backend"]["service"]["name"]
        for ingress in of_kind(production_manifests, "Ingress")
        for rule in ingress["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    assert backends
    assert "argoml-webhooks" not in backends


# -- configuration ------------------------------------------------------------------------------------------
def test_every_variable_the_chart_sets_is_one_the_processes_read(rendered):
    readers = "\n".join(
        path.read_text()
        for path in [
            REPO / "argoml_site" / "settings.py",
            DEPLOY / "gunicorn.conf.py",
            DEPLOY / "docker-entrypoint.sh",
        ]
    )
    names = set(of_kind(rendered, "ConfigMap")[0]["data"])
    for _, pod in pod_specs(rendered):
        for container in containers(pod):
            names |= set(env_of(container))
    known = {"POD_IP", "PROMETHEUS_MULTIPROC_DIR", "DEBUG"}  # Kubernetes' own, prometheus_client's
    unknown = sorted(
        name
        for name in names - known
        if not re.search(rf"\b{re.escape(name.removesuffix('_FILE'))}\b", readers)
        and name not in VARIANTS["production"]["config"]["extraEnv"]
    )
    assert not unknown, f"set by the chart but read by nothing: {unknown}"


def test_secrets_come_from_files_never_from_environment_values(rendered):
    for workload, pod in pod_specs(rendered):
        for container in containers(pod):
            env = env_of(container)
            for key in ("DATABASE_URL", "REDIS_URL"):
                assert key not in env, f"{workload['metadata']['name']}: {key} in the environment"
            if "SECRET_KEY" in env:  # only the webhook-certs and trainer-runtimes Jobs, which sign nothing
                name = workload["metadata"]["name"]
                assert "webhook-certs" in name or name.endswith("-trainer-runtimes"), name
                assert env["SECRET_KEY"].endswith("-signs-nothing")


def test_a_secret_key_can_come_from_another_secret(production_manifests):
    pod = named(production_manifests, "Deployment", "argoml-web")["spec"]["template"]["spec"]
    sources = next(v for v in pod["volumes"] if v["name"] == "secrets")["projected"]["sources"]
    by_path = {
        s["secret"]["items"][0]["path"]: (s["secret"]["name"], s["secret"]["items"][0]["key"])
        for s in sources
    }
    assert by_path == {
        "SECRET_KEY": ("argoml-secrets", "SECRET_KEY"),
        "DATABASE_URL": ("argoml-db-app", "uri"),
        "REDIS_URL": ("argoml-secrets", "REDIS_URL"),
    }


def test_a_config_change_rolls_the_pods():
    before = render_chart()
    after = render_chart({"config": {"logLevel": "DEBUG"}})
    for name in ("argoml-web", "argoml-webhooks", "argoml-controller", "argoml-worker", "argoml-beat"):
        old = named(before, "Deployment", name)["spec"]["template"]["metadata"]["annotations"][
            "checksum/config"
        ]
        new = named(after, "Deployment", name)["spec"]["template"]["metadata"]["annotations"][
            "checksum/config"
        ]
        assert old != new, name


def test_each_upgrade_migrates_in_a_new_job_and_every_process_waits_for_it():
    upgraded = render_chart(revision=7, is_upgrade=True)
    assert [job["metadata"]["name"] for job in of_kind(upgraded, "Job") if not is_hook(job)] == [
        "argoml-migrate-7"
    ]
    for deployment in of_kind(upgraded, "Deployment"):
        init = deployment["spec"]["template"]["spec"]["initContainers"]
        assert [c["args"] for c in init] == [["wait-for-migrations"]], deployment["metadata"]["name"]


def test_the_ingress_hosts_are_allowed_and_trusted_for_csrf(production_manifests):
    config = of_kind(production_manifests, "ConfigMap")[0]["data"]
    assert config["CSRF_TRUSTED_ORIGINS"] == "https://ml.example.com"
    web = named(production_manifests, "Deployment", "argoml-web")["spec"]["template"]["spec"]["containers"][0]
    assert "ml.example.com" in env_of(web)["ALLOWED_HOSTS"].split(",")
    ingress = named(production_manifests, "Ingress", "argoml")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "argoml-web", "port": {"name": "https"}}


def test_tensorboards_get_a_host_of_their_own_allowed_but_not_trusted_for_csrf(production_manifests):
    """docs/security.md, "The TensorBoard proxy": the web serves the proxy only on that host."""
    config = of_kind(production_manifests, "ConfigMap")[0]["data"]
    assert config["TENSORBOARD_BASE_URL"] == "https://tensorboards.ml.example.com"
    assert "tensorboards" not in config["CSRF_TRUSTED_ORIGINS"]
    web = named(production_manifests, "Deployment", "argoml-web")["spec"]["template"]["spec"]["containers"][0]
    assert "tensorboards.ml.example.com" in env_of(web)["ALLOWED_HOSTS"].split(",")
    rules = named(production_manifests, "Ingress", "argoml")["spec"]["rules"]
    assert [rule["host"] for rule in rules] == ["ml.example.com", "tensorboards.ml.example.com"]
    assert rules[1]["http"]["paths"][0]["backend"]["service"] == {
        "name": "argoml-web",
        "port": {"name": "https"},
    }
    assert (
        "TENSORBOARD_BASE_URL"
        not in of_kind(render_chart({"ingress": {"enabled": True}}), "ConfigMap")[0]["data"]
    )


@pytest.mark.parametrize(
    "values",
    [
        {"ingress": {"enabled": True, "hosts": [{"host": "ml.example.com", "paths": []}],
                     "tensorboardHost": "ml.example.com"}},
        {"ingress": {"enabled": True, "hosts": [{"host": "ml.example.com", "paths": []}]},
         "config": {"extraEnv": {"TENSORBOARD_BASE_URL": "https://ml.example.com"}}},
    ],
)  # fmt: skip
def test_tensorboards_on_a_dashboard_host_are_refused(values):
    import helm_python

    with pytest.raises(helm_python.HelmError, match="a host of their own"):
        render_chart(values)


@pytest.mark.parametrize(
    ("values", "env"),
    [
        ({}, ("none", "")),
        ({"jobs": {"gangScheduler": "volcano"}}, ("volcano", "")),
        (
            {"jobs": {"gangScheduler": "scheduler-plugins", "gangSchedulerName": "coscheduler"}},
            ("scheduler-plugins", "coscheduler"),
        ),
    ],
)
def test_the_gang_scheduler_reaches_the_operator_with_grants_for_its_pod_groups_only(values, env):
    manifests = render_chart(values)
    config = of_kind(manifests, "ConfigMap")[0]["data"]
    assert (config["JOBS_GANG_SCHEDULER"], config["JOBS_GANG_SCHEDULER_NAME"]) == env
    groups = {
        group
        for role in of_kind(manifests, "ClusterRole")
        for rule in role["rules"]
        if "podgroups" in rule["resources"]
        for group in rule["apiGroups"]
    }
    expected = {
        "none": set(),
        "volcano": {"scheduling.volcano.sh"},
        "scheduler-plugins": {"scheduling.x-k8s.io"},
    }
    assert groups == expected[env[0]]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"secrets": {"create": True}}, "secrets.values.SECRET_KEY is required when secrets.create is true"),
        (
            {"secrets": {"fromSecrets": {"DATABASE_URL": {"key": "uri"}}}},
            "secrets.fromSecrets.DATABASE_URL.secretName is required",
        ),
        (
            {"jobs": {"gangScheduler": "kueue"}},
            'jobs.gangScheduler="kueue" must be one of: none, volcano, scheduler-plugins',
        ),
    ],
)
def test_incomplete_values_stop_the_render_with_a_message_naming_the_field(values, message):
    import helm_python

    with pytest.raises(helm_python.HelmError, match=re.escape(message)):
        render_chart(values)


def test_the_notes_say_how_to_create_the_secret_and_upgrade_the_crds():
    notes = render_notes()
    assert "kubectl -n argoml create secret generic argoml-secrets" in notes
    assert "kubectl apply --server-side --force-conflicts -f crds/" in notes


def test_the_values_file_documents_every_top_level_key():
    paragraphs = (CHART / "values.yaml").read_text().split("\n\n")
    undocumented = [
        key
        for paragraph in paragraphs
        for key in re.findall(r"^([a-zA-Z]\w*):", paragraph, flags=re.MULTILINE)
        if not re.search(r"^#", paragraph, flags=re.MULTILINE)
    ]
    assert not undocumented, f"values.yaml keys with no comment in their paragraph: {undocumented}"


# -- hardening (docs/security.md) -------------------------------------------------------------------------
def test_the_metrics_token_reaches_every_scraped_process_and_the_service_monitor():
    manifests = render_chart(VARIANTS["metrics token from its own Secret"])
    for name in ("argoml-web", "argoml-worker", "argoml-controller"):
        pod = named(manifests, "Deployment", name)["spec"]["template"]["spec"]
        assert env_of(pod["containers"][0])["METRICS_TOKEN_FILE"] == "/etc/argoml/secrets/METRICS_TOKEN", name
        sources = next(v for v in pod["volumes"] if v["name"] == "secrets")["projected"]["sources"]
        assert {"key": "token", "path": "METRICS_TOKEN"} in [s["secret"]["items"][0] for s in sources]
    monitor = of_kind(manifests, "ServiceMonitor")[0]
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["bearerTokenSecret"] == {"name": "argoml-metrics-token", "key": "token"}


def test_without_a_metrics_token_no_process_reads_one():
    for manifest in of_kind(render_chart(VARIANTS["defaults"]), "Deployment"):
        for container in manifest["spec"]["template"]["spec"]["containers"]:
            assert "METRICS_TOKEN_FILE" not in env_of(container)


def test_the_config_turns_on_https_only_and_names_the_control_plane_namespace():
    config = of_kind(render_chart({}, namespace="ml-platform"), "ConfigMap")
    data = next(c for c in config if c["metadata"]["name"].endswith("-config"))["data"]
    assert data["HTTPS_ONLY"] == "true"
    assert data["ARGOML_NAMESPACE"] == "ml-platform"


def test_a_default_install_ships_the_write_limit_the_code_defaults_to(default_manifests):
    """One number, written twice: kube/ratelimit.py (what a process started without KUBE_WRITE_QPS/BURST
    uses) and the chart's values.yaml (what a default install sets); the benchmarks quote the former."""
    config = of_kind(default_manifests, "ConfigMap")
    data = next(c for c in config if c["metadata"]["name"].endswith("-config"))["data"]
    assert (float(data["KUBE_WRITE_QPS"]), int(data["KUBE_WRITE_BURST"])) == (
        ratelimit.DEFAULT_WRITE_QPS,
        ratelimit.DEFAULT_WRITE_BURST,
    )
