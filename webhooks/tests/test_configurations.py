"""The webhook configurations: declared once, rendered into deploy/webhooks/, and what they promise."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from webhooks import render
from webhooks.configurations import Target, cert_manager_resources, configurations

REPO = Path(__file__).resolve().parents[2]


def webhooks_by_name(documents) -> dict[str, dict]:
    return {webhook["name"]: webhook for document in documents for webhook in document.get("webhooks", [])}


def test_every_webhook_has_no_side_effects_a_5s_timeout_and_speaks_v1():
    for webhook in webhooks_by_name(configurations()).values():
        assert webhook["sideEffects"] == "None"
        assert webhook["timeoutSeconds"] == 5
        assert webhook["admissionReviewVersions"] == ["v1"]


def test_our_kinds_fail_closed_and_argos_kinds_and_pods_fail_open():
    policies = {
        name: webhook["failurePolicy"] for name, webhook in webhooks_by_name(configurations()).items()
    }
    assert policies == {
        "validate.argoml.io": "Fail",
        "argo.validate.argoml.io": "Ignore",
        "defaults.mutate.argoml.io": "Fail",
        "inject.mutate.argoml.io": "Ignore",
    }


def test_our_namespace_and_kube_system_are_never_sent_to_us():
    for webhook in webhooks_by_name(configurations(Target(namespace="ml-platform"))).values():
        assert {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", "ml-platform"],
        } in webhook["namespaceSelector"]["matchExpressions"]


def test_argo_kinds_are_validated_only_in_namespaces_that_opted_in():
    argo = webhooks_by_name(configurations())["argo.validate.argoml.io"]
    assert argo["namespaceSelector"]["matchLabels"] == {"argoml.io/validate-argo": "enabled"}
    resources = {resource for rule in argo["rules"] for resource in rule["resources"]}
    assert resources == {"workflows", "workflowtemplates", "cronworkflows"}


def test_every_job_kind_and_the_sweep_are_validated_and_the_job_kinds_defaulted():
    webhooks = webhooks_by_name(configurations())
    assert set(webhooks["validate.argoml.io"]["rules"][0]["resources"]) == {
        "tfjobs",
        "mxjobs",
        "pytorchjobs",
        "xgboostjobs",
        "jaxjobs",
        "paddlejobs",
        "mpijobs",
        "hyperparamworkflows",
    }
    assert set(webhooks["defaults.mutate.argoml.io"]["rules"][0]["resources"]) == {
        "tfjobs",
        "mxjobs",
        "pytorchjobs",
        "xgboostjobs",
        "jaxjobs",
        "paddlejobs",
        "mpijobs",
    }
    assert webhooks["inject.mutate.argoml.io"]["rules"][0]["resources"] == ["pods"]


def test_a_pytorchjobs_scale_updates_are_validated_too():
    """`kubectl scale` writes the Scale subresource, which a rule on `pytorchjobs` alone never sees."""
    (_jobs, scales) = webhooks_by_name(configurations(kubeflow=False))["validate.argoml.io"]["rules"]
    assert (scales["resources"], scales["operations"]) == (["pytorchjobs/scale"], ["UPDATE"])


def test_kubeflows_v1_jobs_are_left_alone_unless_we_serve_them():
    """Beside Kubeflow's own operator, its jobs are none of our webhooks' business."""
    for webhook in webhooks_by_name(configurations(kubeflow=False)).values():
        assert all(rule["apiGroups"] != ["kubeflow.org"] for rule in webhook["rules"])


def test_kubeflows_v1_jobs_are_validated_and_defaulted_as_ours_are_when_we_serve_them(settings):
    settings.JOBS_KUBEFLOW_V1 = True
    webhooks = webhooks_by_name(configurations())
    for name in ("validate.argoml.io", "defaults.mutate.argoml.io"):
        (kubeflow,) = [rule for rule in webhooks[name]["rules"] if rule["apiGroups"] == ["kubeflow.org"]]
        assert kubeflow["apiVersions"] == ["v1"]
        assert set(kubeflow["resources"]) == {
            "tfjobs",
            "mxjobs",
            "pytorchjobs",
            "xgboostjobs",
            "jaxjobs",
            "paddlejobs",
            "mpijobs",
        }


def test_the_client_config_points_at_the_service_or_a_url_and_carries_the_ca_bundle():
    in_cluster = webhooks_by_name(configurations(Target(), "Q0E="))["validate.argoml.io"]["clientConfig"]
    assert in_cluster == {
        "service": {
            "namespace": "argoml",
            "name": "argoml-webhooks",
            "path": "/webhooks/validate",
            "port": 443,
        },
        "caBundle": "Q0E=",
    }
    outside = webhooks_by_name(configurations(Target(url="https://127.0.0.1:8443/")))[
        "inject.mutate.argoml.io"
    ]
    assert outside["clientConfig"] == {"url": "https://127.0.0.1:8443/webhooks/mutate"}


def test_the_cert_manager_variant_asks_the_ca_injector_for_the_bundle():
    documents = cert_manager_resources()
    kinds = [document["kind"] for document in documents]
    assert kinds == [
        "Issuer",
        "Certificate",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ]
    certificate = documents[1]
    assert certificate["spec"]["secretName"] == "argoml-webhook-tls"
    assert "argoml-webhooks.argoml.svc" in certificate["spec"]["dnsNames"]
    for configuration in documents[2:]:
        assert configuration["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": "argoml/argoml-webhooks"
        }


def test_deploy_webhooks_is_rendered_from_the_current_declarations():
    assert render.stale(REPO / "deploy" / "webhooks") == []
    documents = list(yaml.safe_load_all((REPO / "deploy" / "webhooks" / "configurations.yaml").read_text()))
    assert documents == configurations()


def test_render_webhooks_check_fails_on_a_stale_directory_and_passes_after_rendering(tmp_path):
    (tmp_path / "configurations.yaml").write_text("# edited by hand\n")
    with pytest.raises(CommandError, match=r"configurations\.yaml: differs"):
        call_command("render_webhooks", output=tmp_path, check=True)
    call_command("render_webhooks", output=tmp_path)
    call_command("render_webhooks", output=tmp_path, check=True)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(render.FILES)
