"""The chart's Kubeflow Trainer v2 switches: trainer.installCRDs (the CRDs, refused beside Kubeflow Trainer's
own) and trainer.installRuntimes (a Job running `install_runtimes` after each install and upgrade)."""

from __future__ import annotations

import pytest

from .manifests import CHART, DEPLOY, of_kind, render_against, render_chart

BOTH = {"trainer": {"installCRDs": True, "installRuntimes": True}}


def test_trainers_crds_are_the_generated_ones_and_installed_only_when_asked_and_kept_on_uninstall():
    generated = sorted((DEPLOY / "crds" / "trainer").glob("*.yaml"))
    assert [path.name for path in generated] == [
        "clustertrainingruntimes.trainer.kubeflow.org.yaml",
        "trainingruntimes.trainer.kubeflow.org.yaml",
        "trainjobs.trainer.kubeflow.org.yaml",
    ]
    for path in generated:
        copy = CHART / "trainer-crds" / path.name
        assert copy.read_text() == path.read_text(), (
            f"{copy} differs: cp deploy/crds/trainer/*.yaml {copy.parent}/"
        )
    assert not of_kind(render_chart(), "CustomResourceDefinition")
    installed = of_kind(render_chart({"trainer": {"installCRDs": True}}), "CustomResourceDefinition")
    assert sorted(crd["metadata"]["name"] for crd in installed) == [
        "clustertrainingruntimes.trainer.kubeflow.org",
        "trainingruntimes.trainer.kubeflow.org",
        "trainjobs.trainer.kubeflow.org",
    ]
    assert all(crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"} for crd in installed)


def test_the_processes_know_trainers_kinds_are_ours_only_with_the_value():
    def enabled(manifests) -> dict[str, str]:
        (configmap,) = [m for m in of_kind(manifests, "ConfigMap") if "TRAINER_ENABLED" in m.get("data", {})]
        certs = {
            env["name"]: env["value"]
            for job in of_kind(manifests, "Job")
            if job["metadata"]["name"] == "argoml-webhook-certs"
            for env in job["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        return {"config": configmap["data"]["TRAINER_ENABLED"], "webhook-certs": certs["TRAINER_ENABLED"]}

    assert enabled(render_chart()) == {"config": "false", "webhook-certs": "false"}
    assert enabled(render_chart(BOTH)) == {"config": "true", "webhook-certs": "true"}


def test_the_runtimes_are_installed_by_a_job_after_each_install_and_upgrade_only_when_asked():
    assert not [
        job for job in of_kind(render_chart(), "Job") if "trainer-runtimes" in job["metadata"]["name"]
    ]
    manifests = render_chart(BOTH)
    (job,) = [
        job for job in of_kind(manifests, "Job") if job["metadata"]["name"] == "argoml-trainer-runtimes"
    ]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["args"] == ["install-runtimes"]
    assert pod["serviceAccountName"] == "argoml-trainer-runtimes"
    (role,) = [
        r for r in of_kind(manifests, "ClusterRole") if r["metadata"]["name"] == "argoml-trainer-runtimes"
    ]
    assert role["rules"] == [
        {
            "apiGroups": ["trainer.kubeflow.org"],
            "resources": ["clustertrainingruntimes"],
            "verbs": ["get", "create", "update"],
        }
    ]
    plain = render_chart({**BOTH, "webhooks": {"certJob": {"helmHooks": False}}})
    (job,) = [job for job in of_kind(plain, "Job") if job["metadata"]["name"] == "argoml-trainer-runtimes"]
    assert "annotations" not in job["metadata"]


def test_the_install_refuses_a_trainer_crd_another_installer_owns_saying_what_to_do(kubesim):
    import helm_python

    from trainer.crd import TRAIN_JOB

    theirs = TRAIN_JOB.manifest()
    theirs["metadata"]["labels"] = {}  # as Kubeflow Trainer's manifests install it
    kubesim.store.create(theirs)
    with pytest.raises(helm_python.HelmError) as refused:
        render_against(kubesim, {"trainer": {"installCRDs": True}})
    message = str(refused.value)
    assert (
        "trainer.installCRDs: CustomResourceDefinition trainjobs.trainer.kubeflow.org already exists"
        in message
    )
    assert "Uninstall Kubeflow Trainer's controller manager and its webhooks" in message
    assert "kubectl label crd trainjobs.trainer.kubeflow.org app.kubernetes.io/part-of=argoml" in message
    assert render_against(kubesim, {})  # without the value the chart does not care


def test_the_install_adopts_trainer_crds_that_are_already_ours(kubesim):
    from argoml_site.crds import TRAINER_RESOURCES

    for resource in TRAINER_RESOURCES:
        kubesim.store.create(resource.manifest())
    rendered = render_against(kubesim, {"trainer": {"installCRDs": True}})
    assert "trainjobs.trainer.kubeflow.org" in rendered["argoml/templates/trainer-crds.yaml"]


def public_objects(manifests: list[dict]) -> dict[str, dict]:
    return {
        m["kind"]: m
        for m in manifests
        if m["metadata"]["name"] in ("kubeflow-trainer-public", "kubeflow-system", "trainer-system")
    }


def test_trainers_public_configmap_comes_with_the_crds_as_install_runtimes_makes_it():
    """The chart's objects say what `install_runtimes --public-configmap` (trainer/public.py) says."""
    from trainer import public

    assert public_objects(render_chart()) == {}
    rendered = public_objects(render_chart({"trainer": {"installCRDs": True}}))
    assert sorted(rendered) == ["ConfigMap", "Namespace", "Role", "RoleBinding"]
    for expected in public.manifests():
        got = rendered[expected["kind"]]
        assert got["metadata"].get("namespace") == expected["metadata"].get("namespace")
        for field in ("data", "rules", "roleRef", "subjects"):
            assert got.get(field) == expected.get(field), (expected["kind"], field)

    elsewhere = public_objects(
        render_chart(
            {
                "trainer": {
                    "installCRDs": True,
                    "systemNamespace": "trainer-system",
                    "createSystemNamespace": False,
                }
            }
        )
    )
    assert sorted(elsewhere) == ["ConfigMap", "Role", "RoleBinding"]
    assert {m["metadata"]["namespace"] for m in elsewhere.values()} == {"trainer-system"}
