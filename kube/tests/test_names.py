"""Kubernetes name rules by kind, in the apiserver's words, and kube's refusal to put a bad name in a path."""

from __future__ import annotations

import argparse

import pytest
from django.core.exceptions import ValidationError
from django.test.utils import override_settings

from kube import names, validators
from kube.client import get_client, reset_client
from kube.errors import Invalid, InvalidName
from kube.resources import CONFIGMAP, NAMESPACE, POD, SERVICE, WORKFLOW
from kubesim.testing import running_simulator

HOSTILE = [
    "..",
    ".",
    "../../team-b/workflows/payroll",
    "a/b",
    "payroll%2F",
    "%2e%2e",
    "",
    "Payroll",
    "x" * 254,
    "pay\u00e9",
    "\u0661\u0662",  # Arabic-Indic digits: \d would match them, [0-9] must not
    "name\n",
    "-lead",
    "trail-",
    "a..b",
    "a b",
    "a?watch=true",
    "a#b",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_not_subdomains(name):
    assert names.name_problems("Workflow", name)


@pytest.mark.parametrize("name", ["a", "payroll", "mnist-train-7", "a.b.c", "1-2", "x" * 253])
def test_subdomains_are_valid_object_names(name):
    assert names.name_problems("Workflow", name) == []
    assert names.name_problems("TFJob", name) == []


def test_a_namespace_is_a_label_so_dots_and_64_characters_are_refused():
    assert names.namespace_problems("team-a") == []
    assert names.namespace_problems("x" * 63) == []
    assert names.namespace_problems("x" * 64) == ["must be no more than 63 characters"]
    (problem,) = names.namespace_problems("team.a")
    assert problem.startswith(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start"
        " and end with an alphanumeric character (e.g. 'my-name',  or '123-abc'"
    )


def test_a_service_name_is_a_dns_1035_label_so_it_starts_with_a_letter():
    assert names.name_problems("Service", "job-worker-0") == []
    (problem,) = names.name_problems("Service", "0-worker")
    assert problem.startswith("a DNS-1035 label must consist of lower case alphanumeric characters or '-'")


def test_a_subdomain_problem_is_worded_as_kubernetes_words_it_and_says_the_length():
    too_long_and_wrong = "X" * 254
    assert names.name_problems("Pod", too_long_and_wrong) == [
        "must be no more than 253 characters",
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and"
        " must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is"
        " '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]
    assert names.name_problems("Pod", "") == ["must not be empty"]


def test_the_django_validators_refuse_with_the_same_words():
    with pytest.raises(ValidationError) as refused:
        validators.namespace_name("team-a/../team-b")
    assert refused.value.messages[0].startswith("a lowercase RFC 1123 label")
    validators.object_name("a.b")
    validators.for_kind("Service")("svc")
    with pytest.raises(ValidationError):
        validators.for_kind("Service")("1svc")
    with pytest.raises(ValidationError):
        validators.object_name(["a"])


# -- paths -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HOSTILE)
def test_a_path_is_never_built_with_a_bad_name(name):
    with pytest.raises(InvalidName) as refused:
        WORKFLOW.path("team-a", name)
    assert refused.value.field == "metadata.name"
    assert isinstance(refused.value, Invalid)
    assert refused.value.causes[0]["field"] == "metadata.name"


@pytest.mark.parametrize("namespace", [n for n in HOSTILE if n] + ["team.a"])
def test_a_path_is_never_built_with_a_bad_namespace(namespace):
    with pytest.raises(InvalidName) as refused:
        WORKFLOW.path(namespace, "payroll")
    assert refused.value.field == "metadata.namespace"


@pytest.mark.parametrize("subresource", ["../exec", "status/", "Status", "", "log%2F"])
def test_a_path_is_never_built_with_a_bad_subresource(subresource):
    with pytest.raises(InvalidName) as refused:
        POD.path("team-a", "p", subresource)
    assert refused.value.field == "subresource"


def test_a_subresource_needs_an_object():
    with pytest.raises(InvalidName):
        POD.path("team-a", None, "log")


def test_valid_paths_are_unchanged():
    assert WORKFLOW.path("team-a", "a.b") == "/apis/argoproj.io/v1alpha1/namespaces/team-a/workflows/a.b"
    assert WORKFLOW.path() == "/apis/argoproj.io/v1alpha1/workflows"
    assert WORKFLOW.path("") == "/apis/argoproj.io/v1alpha1/workflows"
    assert POD.path("ns", "p", "log") == "/api/v1/namespaces/ns/pods/p/log"
    assert NAMESPACE.path(None, "team-a") == "/api/v1/namespaces/team-a"
    with pytest.raises(InvalidName):
        NAMESPACE.path(None, "team.a")
    with pytest.raises(InvalidName):
        SERVICE.path("ns", "0-worker")


def test_the_client_refuses_a_traversal_before_any_request_reaches_the_cluster():
    """Issue 16: ``../../team-b/workflows/payroll`` read team-b's Workflow through team-a's path."""
    with running_simulator() as sim:
        sim.store.ensure_namespace("team-a")
        sim.store.ensure_namespace("team-b")
        sim.store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "payroll", "namespace": "team-b"}}
        )
        with override_settings(KUBECONFIG=str(sim.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            try:
                client = get_client()
                before = sim.counters.count()
                for verb in (
                    lambda: client.get(CONFIGMAP, "../../team-b/configmaps/payroll", "team-a"),
                    lambda: client.get(CONFIGMAP, "payroll", "team-a/../team-b"),
                    lambda: client.delete(CONFIGMAP, "..", "team-a"),
                    lambda: client.patch(CONFIGMAP, "a%2F..", {}, "team-a"),
                    lambda: client.logs("../../team-b/pods/x", "team-a"),
                    lambda: client.get(CONFIGMAP, "", "team-a"),
                ):
                    with pytest.raises(InvalidName):
                        verb()
                assert sim.counters.count() == before
                assert client.get(CONFIGMAP, "payroll", "team-b")["metadata"]["name"] == "payroll"
            finally:
                reset_client()


def test_a_command_refuses_a_bad_namespace_with_exit_code_2_and_one_line(capsys):
    parser = argparse.ArgumentParser(prog="gc")
    parser.add_argument("--namespace", type=validators.namespace_argument)
    assert parser.parse_args(["--namespace", "team-a"]).namespace == "team-a"
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--namespace", "../kube-system"])
    assert exited.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("gc: error: argument --namespace: '../kube-system': a lowercase RFC 1123 label")
