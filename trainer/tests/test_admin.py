"""Runtimes in the admin, against the simulator: the list, a runtime's revisions with their diffs, editing
its spec through the cluster (credited to the admin user, refused with field errors or when it changed
meanwhile), who may see and change what, and a runtime in use that cannot be deleted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import Permission, User
from django.test import Client

from access.models import NamespaceGrant, Role
from kube.client import get_client
from kube.errors import NotFound
from kubesim.simulator import Simulator
from trainer import constants as c
from trainer.models import RuntimeRevision, TrainingRuntime
from trainer.resources import CLUSTER_TRAINING_RUNTIME, RUNTIMES, TRAIN_JOB, TRAINING_RUNTIME
from trainer.runtimes import revisions
from trainer.runtimes.mirror import mirror_runtime
from trainer.tests.runtime_cluster import job_using, torch_distributed, trainer_cluster

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/trainer/trainingruntime/"


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with trainer_cluster("team-a", "team-b") as simulator:
        yield simulator


def mirrored(kind: str, name: str, namespace: str = "") -> TrainingRuntime:
    """What the controller's mirror does with the runtime's next watch event."""
    obj = get_client().get(RUNTIMES[kind], name, namespace or None)
    mirror_runtime("MODIFIED", obj)
    return TrainingRuntime.objects.get(uid=obj["metadata"]["uid"])


def cluster_runtime() -> TrainingRuntime:
    get_client().create(CLUSTER_TRAINING_RUNTIME, torch_distributed())
    return mirrored(c.CLUSTER_TRAINING_RUNTIME, "torch-distributed")


def team_runtime(namespace: str = "team-a", name: str = "torch-distributed") -> TrainingRuntime:
    runtime = torch_distributed(kind=c.TRAINING_RUNTIME, namespace=namespace)
    runtime["metadata"]["name"] = name
    get_client().create(TRAINING_RUNTIME, runtime)
    return mirrored(c.TRAINING_RUNTIME, name, namespace)


def staff(
    name: str, *grants: tuple[str, Role], perms: tuple[str, ...] = ("view", "change", "delete")
) -> Client:
    user = User.objects.create_user(name, is_staff=True)
    codenames = [f"{perm}_trainingruntime" for perm in perms]
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="trainer", codename__in=codenames)
    )
    for namespace, role in grants:
        NamespaceGrant.objects.create(user=user, namespace=namespace, role=role)
    client = Client()
    client.force_login(user)
    return client


def edit(client: Client, runtime: TrainingRuntime, spec: dict[str, Any] | str) -> Any:
    text = spec if isinstance(spec, str) else yaml.safe_dump(spec)
    return client.post(f"{CHANGELIST}{runtime.pk}/spec/", {"spec": text})


def more_nodes(runtime: TrainingRuntime, nodes: int) -> dict[str, Any]:
    return {**runtime.spec, "mlPolicy": {**runtime.spec["mlPolicy"], "numNodes": nodes}}


# -- the list and a runtime's page ------------------------------------------------------------------------


def test_the_list_shows_framework_scope_generation_and_whether_trainjobs_use_each(sim, admin_client):
    cluster_runtime()
    team_runtime(name="team-torch")
    get_client().create(TRAIN_JOB, job_using("mnist", "team-a"))
    runtime = get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    runtime["metadata"]["finalizers"] = ["trainer.kubeflow.org/resource-in-use"]  # as the controller sets it
    get_client().replace(CLUSTER_TRAINING_RUNTIME, runtime)
    mirrored(c.CLUSTER_TRAINING_RUNTIME, "torch-distributed")

    response = admin_client.get(CHANGELIST)

    page = response.content.decode()
    assert response.status_code == 200
    assert "team-torch" in page
    assert "torch-distributed" in page
    rows = {row.name: row for row in response.context["cl"].result_list}
    assert (rows["torch-distributed"].scope, rows["torch-distributed"].in_use) == ("cluster", True)
    assert (rows["team-torch"].scope, rows["team-torch"].in_use, rows["team-torch"].framework) == (
        "team-a",
        False,
        "torch",
    )
    assert "column-generation" in page


def test_a_runtimes_page_shows_its_revisions_with_coloured_diffs_and_the_trainjobs_using_it(
    sim, admin_client
):
    runtime = cluster_runtime()
    changed = get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    changed["spec"]["mlPolicy"]["numNodes"] = 3
    get_client().replace(CLUSTER_TRAINING_RUNTIME, changed)
    mirrored(c.CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    get_client().create(TRAIN_JOB, job_using("mnist", "team-b"))

    page = admin_client.get(f"{CHANGELIST}{runtime.pk}/change/").content.decode()

    assert '<span class="diff-del">-  numNodes: 1</span>' in page
    assert '<span class="diff-add">+  numNodes: 3</span>' in page
    assert "trainer/admin.css" in page
    assert "style=" not in page.split("<body")[1]  # the CSP allows no inline style
    assert "first revision seen" in page
    assert "team-b/mnist" in page
    assert "Edit spec" in page
    assert 'name="_save"' not in page  # the row itself is the mirror's


# -- editing the spec -------------------------------------------------------------------------------------


def test_an_edit_goes_to_the_cluster_and_comes_back_as_a_revision_credited_to_the_admin(sim, admin_client):
    runtime = cluster_runtime()

    response = edit(admin_client, runtime, more_nodes(runtime, 4))

    assert response.status_code == 302
    stored = get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    assert stored["spec"]["mlPolicy"]["numNodes"] == 4
    assert TrainingRuntime.objects.get().generation == 1  # the admin never writes the row itself
    mirrored(c.CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    newest = RuntimeRevision.objects.get(generation=2)
    assert newest.changed_by == "admin"
    assert "+  numNodes: 4" in newest.diff


def test_a_spec_that_trainer_would_refuse_is_answered_with_its_field_paths(sim, admin_client):
    runtime = cluster_runtime()
    spec = more_nodes(runtime, 0)

    response = edit(admin_client, runtime, spec)

    assert response.status_code == 200
    errors = response.context["form"].errors["spec"]
    assert "spec.mlPolicy.numNodes: must be at least 1, not 0" in errors
    assert "style=" not in response.content.decode().split("<body")[1]  # the CSP allows no inline style
    assert get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a list", "spec: must be an object (mlPolicy, template, …), not list"),
        ("a: &x [1]\nb: *x", "is an alias"),
        ("a: [", "not valid YAML"),
    ],
)
def test_text_that_is_no_runtime_spec_is_refused_on_the_form(sim, admin_client, text, message):
    runtime = cluster_runtime()
    response = edit(admin_client, runtime, text)
    assert response.status_code == 200
    assert any(message in error for error in response.context["form"].errors["spec"])


def test_an_edit_of_a_runtime_changed_meanwhile_is_refused_and_the_other_change_kept(sim, admin_client):
    runtime = cluster_runtime()
    other = get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    other["spec"]["mlPolicy"]["numNodes"] = 7  # kubectl edit, not yet mirrored
    get_client().replace(CLUSTER_TRAINING_RUNTIME, other)

    response = edit(admin_client, runtime, more_nodes(runtime, 4))

    assert response.status_code == 200
    assert "changed meanwhile" in str(response.context["form"].non_field_errors())
    assert (
        get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")["spec"]["mlPolicy"]["numNodes"] == 7
    )


def test_an_unchanged_spec_writes_nothing(sim, admin_client):
    runtime = cluster_runtime()
    response = edit(admin_client, runtime, runtime.spec)
    assert response.status_code == 302
    assert get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")["metadata"]["resourceVersion"] == (
        runtime.resource_version
    )


# -- who may see and change what --------------------------------------------------------------------------


def test_staff_see_cluster_runtimes_and_those_of_namespaces_they_may_read(sim):
    cluster_runtime()
    team_runtime("team-a", "a-torch")
    team_runtime("team-b", "b-torch")
    viewer = staff("viewer-a", ("team-a", Role.VIEWER), perms=("view",))

    names = {row.name for row in viewer.get(CHANGELIST).context["cl"].result_list}

    assert names == {"torch-distributed", "a-torch"}
    hidden = TrainingRuntime.objects.get(name="b-torch")
    assert (
        viewer.get(f"{CHANGELIST}{hidden.pk}/change/").status_code == 302
    )  # "does not exist", back to the list
    assert edit(viewer, hidden, hidden.spec).status_code == 404


def test_staff_see_of_a_shared_runtime_only_what_their_namespaces_do_with_it(sim):
    """A cluster runtime's finalizer, its TrainJobs and every write to it (resourceVersion, updated_at)
    follow every namespace's jobs: staff of team-a see whether team-a uses it, never team-b's jobs."""
    runtime = cluster_runtime()
    get_client().create(TRAIN_JOB, job_using("secret-job", "team-b"))
    held = get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    held["metadata"]["finalizers"] = ["trainer.kubeflow.org/resource-in-use"]  # as the controller sets it
    get_client().replace(CLUSTER_TRAINING_RUNTIME, held)
    runtime = mirrored(c.CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    assert runtime.in_use
    viewer = staff("viewer-a", ("team-a", Role.VIEWER), perms=("view",))

    listed = viewer.get(CHANGELIST)
    page = viewer.get(f"{CHANGELIST}{runtime.pk}/change/").content.decode()
    in_use_now = viewer.get(f"{CHANGELIST}?in_use=1").context["cl"].result_list

    assert "secret-job" not in page
    assert "team-b" not in page
    assert "field-resource_version" not in page
    assert "field-updated_at" not in page
    assert [row.in_use_seen for row in listed.context["cl"].result_list] == [False]
    assert list(in_use_now) == []
    superuser = Client()
    superuser.force_login(User.objects.create_superuser("root"))
    everything = superuser.get(f"{CHANGELIST}{runtime.pk}/change/").content.decode()
    assert "team-b/secret-job" in everything
    assert "field-resource_version" in everything
    assert [row.in_use_seen for row in superuser.get(CHANGELIST).context["cl"].result_list] == [True]


def test_an_editor_of_the_namespace_changes_its_runtime_and_a_viewer_cannot(sim):
    runtime = team_runtime("team-a", "a-torch")
    viewer = staff("viewer-a", ("team-a", Role.VIEWER))
    editor = staff("editor-a", ("team-a", Role.EDITOR))

    assert edit(viewer, runtime, more_nodes(runtime, 2)).status_code == 403
    assert edit(editor, runtime, more_nodes(runtime, 2)).status_code == 302

    mirrored(c.TRAINING_RUNTIME, "a-torch", "team-a")
    assert RuntimeRevision.objects.get(runtime=runtime, generation=2).changed_by == "editor-a"


def test_a_namespace_editor_without_the_change_permission_cannot_change_its_runtime(sim):
    runtime = team_runtime("team-a", "a-torch")
    reader = staff("editor-without-perms", ("team-a", Role.EDITOR), perms=("view",))

    assert "Edit spec" not in reader.get(f"{CHANGELIST}{runtime.pk}/change/").content.decode()
    assert edit(reader, runtime, more_nodes(runtime, 2)).status_code == 403
    assert reader.post(f"{CHANGELIST}{runtime.pk}/delete/", {"post": "yes"}).status_code == 403
    assert get_client().get(TRAINING_RUNTIME, "a-torch", "team-a")["metadata"]["generation"] == 1


def test_only_superusers_change_cluster_runtimes(sim):
    runtime = cluster_runtime()
    editor = staff("editor-a", ("team-a", Role.EDITOR))

    assert "Edit spec" not in editor.get(f"{CHANGELIST}{runtime.pk}/change/").content.decode()
    assert edit(editor, runtime, more_nodes(runtime, 2)).status_code == 403
    assert editor.post(f"{CHANGELIST}{runtime.pk}/delete/", {"post": "yes"}).status_code == 403
    assert get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")["metadata"]["generation"] == 1


# -- deleting ---------------------------------------------------------------------------------------------


def test_a_runtime_in_use_cannot_be_deleted_and_its_delete_page_names_the_trainjobs(sim, admin_client):
    runtime = cluster_runtime()
    get_client().create(TRAIN_JOB, job_using("mnist", "team-a"))
    url = f"{CHANGELIST}{runtime.pk}/delete/"

    page = admin_client.get(url).content.decode()
    admin_client.post(url, {"post": "yes"})

    assert "TrainJob team-a/mnist" in page
    assert 'name="post"' not in page  # no confirmation form
    stored = get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    assert "deletionTimestamp" not in stored["metadata"]


def test_a_runtime_nobody_uses_is_deleted_from_the_cluster_and_its_row_waits_for_the_mirror(
    sim, admin_client
):
    runtime = team_runtime("team-a", "a-torch")
    get_client().create(TRAIN_JOB, job_using("other", "team-a"))  # the cluster runtime's, not this one's
    assert 'name="post"' in admin_client.get(f"{CHANGELIST}{runtime.pk}/delete/").content.decode()

    response = admin_client.post(f"{CHANGELIST}{runtime.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    with pytest.raises(NotFound):
        get_client().get(TRAINING_RUNTIME, "a-torch", "team-a")
    assert TrainingRuntime.objects.get(pk=runtime.pk).deleted_at is None


def test_there_is_no_bulk_delete_and_no_add(sim, admin_client):
    cluster_runtime()
    page = admin_client.get(CHANGELIST).content.decode()
    assert "delete_selected" not in page
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403


def test_the_attribution_annotations_name_the_editor_and_the_generation_made(sim, admin_client):
    runtime = cluster_runtime()
    edit(admin_client, runtime, more_nodes(runtime, 2))
    annotations = get_client().get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")["metadata"]["annotations"]
    assert annotations[revisions.CHANGED_BY_ANNOTATION] == "admin"
    assert annotations[revisions.CHANGED_GENERATION_ANNOTATION] == "2"
