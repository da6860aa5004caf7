"""Revisions as text: the spec's YAML, the diff between two revisions, and who made a generation."""

from __future__ import annotations

from trainer.runtimes import revisions


def runtime(generation: int, annotations: dict | None = None) -> dict:
    return {"metadata": {"name": "rt", "generation": generation, "annotations": annotations or {}}}


def test_the_spec_text_sorts_keys_so_the_database_order_never_shows_as_a_change():
    assert revisions.spec_text({"b": 1, "a": {"d": 2, "c": 3}}) == revisions.spec_text(
        {"a": {"c": 3, "d": 2}, "b": 1}
    )
    assert revisions.spec_text({"b": 1, "a": 2}) == "a: 2\nb: 1\n"


def test_the_diff_names_both_generations_and_shows_only_what_changed():
    before = {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {}}}
    after = {"mlPolicy": {"numNodes": 4, "torch": {}}, "template": {"spec": {}}}
    diff = revisions.spec_diff(before, 2, after, 3)
    lines = diff.splitlines()
    assert lines[:2] == ["--- generation 2", "+++ generation 3"]
    assert "-  numNodes: 1" in lines
    assert "+  numNodes: 4" in lines
    assert not any(line.startswith(("+", "-")) and "template" in line for line in lines)


def test_the_same_spec_has_an_empty_diff():
    assert revisions.spec_diff({"a": 1}, 1, {"a": 1}, 2) == ""


def test_an_admin_edit_is_credited_to_its_user_for_the_generation_it_made():
    annotations = revisions.attribution("alice", current_generation=4)
    assert annotations == {"argoml.io/changed-by": "alice", "argoml.io/changed-by-generation": "5"}
    assert revisions.changed_by(runtime(5, annotations)) == "alice"


def test_a_later_change_by_someone_else_keeping_the_annotations_is_the_clusters():
    annotations = revisions.attribution("alice", current_generation=4)
    assert revisions.changed_by(runtime(6, annotations)) == revisions.CLUSTER


def test_without_annotations_a_generation_is_the_clusters():
    assert revisions.changed_by(runtime(1)) == revisions.CLUSTER
    assert (
        revisions.changed_by({"metadata": {"generation": 1, "annotations": {"argoml.io/changed-by": ""}}})
        == ""
    )
    assert revisions.changed_by({}) == revisions.CLUSTER


def test_the_generation_a_job_started_from_is_read_from_its_annotation():
    job = {"metadata": {"annotations": {"argoml.io/runtime-generation": "7"}}}
    assert revisions.started_generation(job) == 7
    for value in ("", "-1", "seven", "1.5", 7, None):
        assert (
            revisions.started_generation(
                {"metadata": {"annotations": {"argoml.io/runtime-generation": value}}}
            )
            is None
        )
    assert revisions.started_generation({"metadata": {}}) is None
