"""The pure decoder of built-in objects (kubesim.openapi.fields) against the 1.37 definitions."""

from __future__ import annotations

from kubesim.openapi import catalog, fields

POD = catalog.definition_name("", "v1", "Pod") or ""
DEPLOYMENT = catalog.definition_name("apps", "v1", "Deployment") or ""


def test_kinds_are_found_by_group_version_and_kind() -> None:
    assert POD == "io.k8s.api.core.v1.Pod"
    assert DEPLOYMENT == "io.k8s.api.apps.v1.Deployment"
    assert catalog.definition_name("batch", "v1", "Job") == "io.k8s.api.batch.v1.Job"
    assert catalog.definition_name("argoml.io", "v1alpha1", "TFJob") is None


def test_unknown_fields_are_listed_with_their_paths_and_dropped() -> None:
    containers = [{"name": "a"}, {"name": "b", "x": 2}]
    decoded = fields.decode({"metadata": {"name": "p", "bogus": 1}, "spec": {"containers": containers}}, POD)
    assert decoded.unknown == ["metadata.bogus", "spec.containers[1].x"]
    assert decoded.obj == {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    assert decoded.type_error == ""


def test_maps_free_form_fields_and_nulls_are_kept() -> None:
    obj = {
        "metadata": {"labels": {"any-key": "v"}, "annotations": None},
        "spec": {
            "nodeSelector": {"disk": "ssd"},
            "containers": [{"name": "a", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}],
            "overhead": None,
        },
    }
    decoded = fields.decode(obj, POD)
    assert decoded.obj == obj
    assert decoded.unknown == []
    assert decoded.type_error == ""


def test_int_or_string_takes_either() -> None:
    for value in (1, "25%"):
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": value}}
        assert fields.decode({"spec": {"strategy": strategy}}, DEPLOYMENT).type_error == ""


def test_the_first_wrong_type_is_reported_in_gos_words() -> None:
    decoded = fields.decode({"spec": {"replicas": "2", "paused": "yes"}}, DEPLOYMENT)
    assert decoded.type_error == (
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    nested = fields.decode({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 1.5}]}]}}, POD)
    assert nested.type_error == (
        "json: cannot unmarshal number 1.5 into Go struct field "
        "ContainerPort.spec.containers.ports.containerPort of type int32"
    )
    listed = fields.decode({"spec": {"containers": {"name": "a"}}}, POD)
    assert listed.type_error == (
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
    )
    mapped = fields.decode({"metadata": {"labels": {"a": 1}}}, POD)
    assert mapped.type_error == (
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
    )
    boolean = fields.decode({"spec": {"hostNetwork": "true"}}, POD)
    assert boolean.type_error.endswith("PodSpec.spec.hostNetwork of type bool")


def test_whole_numbers_written_as_floats_are_integers() -> None:
    assert fields.decode({"spec": {"replicas": 3.0}}, DEPLOYMENT).type_error == ""
