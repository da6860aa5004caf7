"""Input artifacts as Argo resolves them (kubesim/argo/values.py) and as its executor loads them into a
process pod (kubesim/kubelet/process/argoinputs.py): pure functions and files, no cluster."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from kubesim.argo.values import WorkflowError, input_artifact_scope, resolve_input_artifacts
from kubesim.kubelet.process.argoinputs import INPUT_ARTIFACTS_ANNOTATION, InputArtifactError, load

STEPS_X, TASKS_X = "{{steps.gen.outputs.artifacts.x}}", "{{tasks.gen.outputs.artifacts.x}}"
OUTPUT = {"name": "out", "s3": {"key": "wf/wf-gen-1/out.tgz"}, "path": "/tmp/out"}


def template(*artifacts: dict) -> dict:
    return {"name": "use", "inputs": {"artifacts": list(artifacts)}, "container": {"image": "python:3.11"}}


def test_an_argument_from_another_steps_output_takes_the_inputs_place_keeping_its_path_and_mode():
    arguments = {"artifacts": [{"name": "data", "from": json.dumps(OUTPUT)}]}
    [resolved] = resolve_input_artifacts(
        template({"name": "data", "path": "/in/data", "mode": 0o600}), arguments
    )
    assert resolved == {
        "name": "data",
        "s3": {"key": "wf/wf-gen-1/out.tgz"},
        "path": "/in/data",
        "mode": 0o600,
    }
    assert input_artifact_scope([resolved])["inputs.artifacts.data.path"] == "/in/data"


@pytest.mark.parametrize(
    ("artifact", "arguments", "message"),
    [
        ({"name": "data", "path": "/in"}, None, "inputs.artifacts.data was not supplied"),
        ({"name": "data", "path": "/in"}, {"artifacts": [{"name": "data"}]},
         "inputs.artifacts.data missing location information"),
        ({"name": "data", "path": "/in"}, {"artifacts": [{"name": "data", "from": STEPS_X}]},
         'unable to resolve references: Unable to resolve: "steps.gen.outputs.artifacts.x"'),
        ({"name": "data", "path": "/in"}, {"artifacts": [{"name": "data", "from": TASKS_X}]},
         'Unable to resolve: "tasks.gen.outputs.artifacts.x"'),
    ],
)  # fmt: skip
def test_a_required_input_without_a_source_is_the_nodes_error_in_argos_words(artifact, arguments, message):
    with pytest.raises(WorkflowError) as error:
        resolve_input_artifacts(template(artifact), arguments)
    assert str(error.value) == message


def test_an_optional_input_or_one_with_its_own_location_needs_no_argument():
    own = {"name": "cfg", "path": "/in/cfg", "raw": {"data": "x=1"}}
    optional = {"name": "extra", "path": "/in/extra", "optional": True}
    unresolved = {
        "artifacts": [{"name": "extra", "optional": True, "from": "{{steps.a.outputs.artifacts.b}}"}]
    }
    assert resolve_input_artifacts(template(own, optional), unresolved) == [own, optional]


def tgz(files: dict[str, bytes], root: str = "out") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, body in files.items():
            info = tarfile.TarInfo(f"{root}/{name}" if root else name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def pod(*artifacts: dict) -> dict:
    return {"metadata": {"annotations": {INPUT_ARTIFACTS_ANNOTATION: json.dumps(list(artifacts))}}}


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "artifacts"
    (root / "wf" / "gen").mkdir(parents=True)
    (root / "wf" / "gen" / "out.tgz").write_bytes(tgz({"a.txt": b"A", "sub/b.txt": b"B"}))
    (root / "wf" / "gen" / "many.tgz").write_bytes(tgz({"x": b"1", "y": b"2"}, root=""))
    (root / "wf" / "gen" / "plain.txt").write_bytes(b"plain")
    (root / "wf" / "gen" / "folder").mkdir()
    (root / "wf" / "gen" / "folder" / "f.txt").write_bytes(b"F")
    return root


def loaded(tmp_path: Path, repository: Path, *artifacts: dict) -> dict[str, Path]:
    mounts = load(pod(*artifacts), tmp_path / "inputs", repository)
    return {mount.container_path: Path(mount.host_path) for mount in mounts}


def test_a_tarball_of_one_folder_becomes_that_folder_at_the_path(tmp_path, repository):
    found = loaded(tmp_path, repository, {"name": "d", "path": "/in/d", "s3": {"key": "wf/gen/out.tgz"}})
    assert (found["/in/d"] / "a.txt").read_bytes() == b"A"
    assert (found["/in/d"] / "sub" / "b.txt").read_bytes() == b"B"


def test_a_tarball_of_several_entries_becomes_a_folder_of_them(tmp_path, repository):
    found = loaded(tmp_path, repository, {"name": "d", "path": "/in/d", "s3": {"key": "wf/gen/many.tgz"}})
    assert sorted(p.name for p in found["/in/d"].iterdir()) == ["x", "y"]


def test_archive_none_a_plain_file_a_folder_and_raw_text_arrive_as_they_are(tmp_path, repository):
    found = loaded(
        tmp_path, repository,
        {"name": "t", "path": "/in/t.tgz", "s3": {"key": "wf/gen/out.tgz"}, "archive": {"none": {}}},
        {"name": "p", "path": "/in/p", "s3": {"key": "wf/gen/plain.txt"}, "mode": 0o400},
        {"name": "f", "path": "/in/f", "s3": {"key": "wf/gen/folder"}},
        {"name": "r", "path": "/in/r", "raw": {"data": "hello"}},
    )  # fmt: skip
    assert found["/in/t.tgz"].read_bytes() == (repository / "wf/gen/out.tgz").read_bytes()
    assert found["/in/p"].read_bytes() == b"plain"
    assert found["/in/p"].stat().st_mode & 0o777 == 0o400
    assert (found["/in/f"] / "f.txt").read_bytes() == b"F"
    assert found["/in/r"].read_text() == "hello"


def test_a_zip_is_unpacked_when_the_artifact_says_so(tmp_path, repository):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("z/one.txt", "1")
    (repository / "wf" / "gen" / "z.zip").write_bytes(buffer.getvalue())
    found = loaded(
        tmp_path,
        repository,
        {"name": "z", "path": "/in/z", "s3": {"key": "wf/gen/z.zip"}, "archive": {"zip": {}}},
    )
    assert (found["/in/z"] / "one.txt").read_text() == "1"


def test_a_missing_key_fails_in_argos_words_unless_the_artifact_is_optional(tmp_path, repository):
    with pytest.raises(InputArtifactError) as error:
        loaded(tmp_path, repository, {"name": "data", "path": "/in", "s3": {"key": "wf/none.tgz"}})
    assert str(error.value) == "artifact data failed to load: The specified key does not exist."
    assert (
        loaded(tmp_path, repository, {"name": "d", "path": "/in", "s3": {"key": "x"}, "optional": True}) == {}
    )
    with pytest.raises(InputArtifactError, match="required artifact 'data' not supplied"):
        loaded(tmp_path, repository, {"name": "data", "path": "/in"})


@pytest.mark.parametrize("key", ["../escape.tgz", "wf/../../x", "link"])
def test_a_key_never_reads_outside_the_repository(tmp_path, repository, key):
    (tmp_path / "escape.tgz").write_bytes(tgz({"secret": b"s"}))
    (repository / "link").symlink_to(tmp_path / "escape.tgz")
    with pytest.raises(InputArtifactError, match="The specified key does not exist"):
        loaded(tmp_path, repository, {"name": "d", "path": "/in", "s3": {"key": key}})


def test_a_tarball_that_climbs_out_of_its_folder_is_refused(tmp_path, repository):
    (repository / "evil.tgz").write_bytes(tgz({"../../planted": b"x"}, root=""))
    with pytest.raises(InputArtifactError, match="artifact d failed to load"):
        loaded(
            tmp_path,
            repository,
            {"name": "d", "path": "/in", "s3": {"key": "evil.tgz"}, "archive": {"tar": {}}},
        )
    assert not (tmp_path / "planted").exists()
