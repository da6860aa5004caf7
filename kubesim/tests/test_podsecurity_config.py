"""The PodSecurity plugin's configuration as an apiserver reads it from --admission-control-config-file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.__main__ import _arguments, _pod_security
from kubesim.podsecurity.admission import (
    exempt_namespace_warning,
    existing_pod_warnings,
    policy,
    prioritized,
    tightened,
)
from kubesim.podsecurity.config import (
    ConfigError,
    PodSecurityConfig,
    load_admission_configuration,
    parse_pod_security_configuration,
)

POD_SECURITY = {
    "apiVersion": "pod-security.admission.config.k8s.io/v1",
    "kind": "PodSecurityConfiguration",
    "defaults": {"enforce": "baseline", "enforce-version": "latest", "warn": "restricted"},
    "exemptions": {"usernames": ["ci-bot"], "namespaces": ["kube-system"], "runtimeClasses": ["kata"]},
}
CONFIGURED = PodSecurityConfig(
    enforce="baseline",
    warn="restricted",
    exempt_usernames=frozenset({"ci-bot"}),
    exempt_namespaces=frozenset({"kube-system"}),
    exempt_runtime_classes=frozenset({"kata"}),
)


def admission_configuration(tmp_path: Path, plugin: dict[str, Any]) -> Path:
    document = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [plugin],
    }
    path = tmp_path / "admission.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_an_inline_configuration_gives_defaults_and_exemptions(tmp_path: Path) -> None:
    path = admission_configuration(tmp_path, {"name": "PodSecurity", "configuration": POD_SECURITY})
    assert load_admission_configuration(path) == CONFIGURED


def test_a_plugin_path_is_read_next_to_the_admission_configuration(tmp_path: Path) -> None:
    (tmp_path / "pod-security.yaml").write_text(yaml.safe_dump(POD_SECURITY))
    path = admission_configuration(tmp_path, {"name": "PodSecurity", "path": "pod-security.yaml"})
    assert load_admission_configuration(path) == CONFIGURED


def test_without_a_pod_security_entry_nothing_is_exempt_and_everything_is_privileged(tmp_path: Path) -> None:
    path = admission_configuration(tmp_path, {"name": "EventRateLimit", "configuration": {}})
    assert load_admission_configuration(path) == PodSecurityConfig()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "Other"}, "kind/apiVersion: expected PodSecurityConfiguration"),
        ({"defaults": {"enforce": "strict"}}, "defaults.enforce: Unsupported value: 'strict'"),
        (
            {"exemptions": {"usernames": "ci-bot"}},
            "exemptions.usernames: must be a list of non-empty strings",
        ),
        ({"exemptions": {"namespaces": [""]}}, "exemptions.namespaces: must be a list of non-empty strings"),
    ],
)
def test_a_bad_configuration_names_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        parse_pod_security_configuration({**POD_SECURITY, **change})


def test_the_command_line_flag_loads_the_file_and_refuses_a_bad_one(tmp_path: Path) -> None:
    path = admission_configuration(tmp_path, {"name": "PodSecurity", "configuration": POD_SECURITY})
    arguments = _arguments(["--kubeconfig", "k", "--admission-control-config-file", str(path)])
    assert _pod_security(arguments.admission_control_config_file) == CONFIGURED
    bad = admission_configuration(tmp_path, {"name": "PodSecurity"})
    with pytest.raises(SystemExit, match="PodSecurity needs a configuration or a path"):
        _pod_security(bad)


def test_defaults_fill_only_the_modes_a_namespace_does_not_label() -> None:
    assert policy({}, CONFIGURED) == ("baseline", "restricted", "latest")
    assert policy({"pod-security.kubernetes.io/enforce": "privileged"}, CONFIGURED)[0] == "privileged"


@pytest.mark.parametrize(
    ("old", "new", "rechecked"),
    [
        ({}, {"enforce": "baseline"}, True),
        ({"enforce": "baseline"}, {"enforce": "restricted"}, True),
        ({"enforce": "restricted"}, {"enforce": "baseline"}, False),  # relaxed within one version
        ({"enforce": "baseline"}, {"enforce": "baseline", "enforce-version": "v1.29"}, True),
        ({"enforce": "baseline"}, {"enforce": "privileged"}, False),
        ({"enforce": "baseline"}, {"enforce": "baseline", "warn": "restricted"}, False),
    ],
)
def test_only_a_tighter_enforce_policy_rechecks_existing_pods(
    old: dict[str, str], new: dict[str, str], rechecked: bool
) -> None:
    prefix = "pod-security.kubernetes.io/"
    old_labels = {prefix + k: v for k, v in old.items()}
    new_labels = {prefix + k: v for k, v in new.items()}
    assert tightened(old_labels, new_labels, PodSecurityConfig()) is rechecked


def _host_pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"hostPID": True, "containers": [{"name": "c", "image": "i"}]},
    }


def test_existing_pod_warnings_count_pods_under_the_first_name_and_cap_the_pods_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pods = [_host_pod("b"), _host_pod("a"), {"metadata": {"name": "fine"}, "spec": {"containers": []}}]
    assert existing_pod_warnings("ns", "baseline", "latest", pods) == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"',
        "a (and 1 other pod): host namespaces",
    ]
    assert existing_pod_warnings("ns", "baseline", "latest", pods[2:]) == []
    monkeypatch.setattr("kubesim.podsecurity.admission.MAX_PODS_TO_CHECK", 1)
    assert existing_pod_warnings("ns", "baseline", "latest", pods) == [
        "new PodSecurity enforce level only checked against the first 1 of 3 existing pods",
        'existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"',
        "b: host namespaces",
    ]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, None),
        ({"enforce": "privileged"}, None),
        ({"enforce": "baseline"}, "enforce=baseline:latest"),
        ({"audit": "restricted", "audit-version": "v1.30"}, "audit=restricted:v1.30"),
        ({"warn": "restricted", "enforce-version": "v1.29"}, "warn=restricted:latest"),
    ],
)
def test_an_exempt_namespace_hears_which_of_its_modes_will_be_ignored(
    labels: dict[str, str], expected: str | None
) -> None:
    prefix = "pod-security.kubernetes.io/"
    warning = exempt_namespace_warning(
        "tools", {prefix + k: v for k, v in labels.items()}, PodSecurityConfig()
    )
    if expected is None:
        assert warning is None
    else:
        assert (
            warning
            == f'namespace "tools" is exempt from Pod Security, and the policy ({expected}) will be ignored'
        )


def test_an_exempt_namespace_with_the_default_policy_hears_nothing() -> None:
    labels = {"pod-security.kubernetes.io/enforce": "baseline"}
    assert (
        exempt_namespace_warning("tools", labels, PodSecurityConfig(enforce="baseline", warn="baseline"))
        is None
    )


def test_pods_of_one_controller_after_the_first_are_checked_last() -> None:
    def owned(name: str, controller: str | None) -> dict[str, Any]:
        owners = [{"uid": controller, "controller": True}] if controller else []
        return {"metadata": {"name": name, "ownerReferences": owners}}

    pods = [
        owned("rs-1", "rs"),
        owned("rs-2", "rs"),
        owned("solo", None),
        owned("job-1", "job"),
        owned("rs-3", "rs"),
    ]
    assert [p["metadata"]["name"] for p in prioritized(pods)] == ["rs-1", "solo", "job-1", "rs-2", "rs-3"]
