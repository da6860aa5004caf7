"""What Argo's executor (`argoexec` init and wait containers) does for a step that runs as a process pod.

kubesim's Argo creates a step's pod with only the user's containers. For a process pod this module does the
executor's part: it loads the step's input artifacts from the dev stack's artifact repository (or a `raw`
artifact's text) at their paths, unpacking a tarball as Argo does (`argoinputs.py`), stages a script
template's source at `/argo/staging/script`, gives the main container's output paths a directory the
kubelet can read after it exits (a fresh one, as a new container layer would be), and reads them back: an
output parameter's file becomes its value, an output artifact is archived as Argo archives it (tar + gzip
unless `archive: {none: {}}`) into the repository under the key Argo would use (or the key the template
names). The outputs go on the pod as the `kubesim.argoml.io/outputs` annotation, which the Argo simulation
reads as it reads scripted outputs. Nothing here follows a symlink the step made: a path that leads out of
its output directory is an output the step did not produce.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import shutil
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubesim.kubelet.process import argoinputs
from kubesim.kubelet.sandbox import Mount
from kubesim.s3 import stores

log = logging.getLogger(__name__)

#: set by kubesim's Argo on a step's pod: {"parameters": {name: path}, "artifacts": {name: {path, archive}}}
OUTPUT_PATHS_ANNOTATION = "kubesim.argoml.io/output-paths"
#: set by kubesim's Argo on a step's pod: its input artifacts as resolved (a list of Argo artifacts)
INPUT_ARTIFACTS_ANNOTATION = argoinputs.INPUT_ARTIFACTS_ANNOTATION
#: the reason of a pod whose input artifacts could not be loaded (its message is Argo's node message)
INIT_FAILED_REASON = "ArgoExecutorInitFailed"
SCRIPT_PATH = "/argo/staging/script"
MAIN = "main"
MAX_PARAMETER_BYTES = 256 * 1024  # Argo's limit on an output parameter read from a file


def output_paths(template: Mapping[str, Any]) -> dict[str, Any]:
    """The annotation's value for a template (empty when it declares no output read from a path)."""
    outputs = template.get("outputs") or {}
    parameters = {
        str(p["name"]): str(p["valueFrom"]["path"])
        for p in outputs.get("parameters") or []
        if (p.get("valueFrom") or {}).get("path")
    }
    artifacts = {
        str(a["name"]): {
            "path": str(a["path"]),
            "archive": a.get("archive") or {},
            **({"key": str(a["s3"]["key"])} if isinstance(a.get("s3"), dict) and a["s3"].get("key") else {}),
        }
        for a in outputs.get("artifacts") or []
        if a.get("path")
    }
    return {key: value for key, value in (("parameters", parameters), ("artifacts", artifacts)) if value}


def declared(pod: Mapping[str, Any]) -> dict[str, Any]:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(OUTPUT_PATHS_ANNOTATION)
    return json.loads(text) if text else {}


def staging_mounts(directory: Path, env: Mapping[str, str], argv: list[str]) -> list[Mount]:
    """A script template's source where its command reads it, as argoexec's init container writes it."""
    if "ARGO_TEMPLATE_SCRIPT" not in env or SCRIPT_PATH not in argv:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "script"
    script.write_text(env["ARGO_TEMPLATE_SCRIPT"])
    return [Mount(str(script), SCRIPT_PATH, True)]


def _directories(paths: list[str], artifacts: list[str]) -> list[str]:
    """The outermost directories holding `paths` (a directory inside another is covered by it); an
    artifact right under `/` (`/logs`) is a directory of its own (a parameter file there has none)."""
    found: list[str] = []
    holders = {posixpath.dirname(posixpath.normpath(p)) for p in paths}
    holders |= {posixpath.normpath(p) for p in artifacts if posixpath.dirname(posixpath.normpath(p)) == "/"}
    for directory in sorted(holders):
        if directory != "/" and not any(directory.startswith(outer.rstrip("/") + "/") for outer in found):
            found.append(directory)
    return found


def output_mounts(pod: Mapping[str, Any], directory: Path) -> list[Mount]:
    """A fresh host directory at each directory the main container writes its outputs into."""
    wanted = declared(pod)
    artifacts = [a["path"] for a in wanted.get("artifacts", {}).values()]
    paths = [*wanted.get("parameters", {}).values(), *artifacts]
    mounts = []
    for index, container_dir in enumerate(_directories(paths, artifacts)):
        host = directory / str(index)
        shutil.rmtree(host, ignore_errors=True)
        host.mkdir(parents=True)
        mounts.append(Mount(str(host), container_dir, False))
    return mounts


def _host_path(container_path: str, mounts: list[Mount]) -> Path | None:
    """Where a container path of an output is on the host (None for a file right under `/`, which has no
    directory of its own to mount: Argo's controller then reports the output as missing)."""
    normalized = posixpath.normpath(container_path)
    for mount in mounts:
        prefix = mount.container_path.rstrip("/") + "/"
        if normalized == mount.container_path:
            return Path(mount.host_path)
        if normalized.startswith(prefix):
            candidate = Path(mount.host_path) / normalized[len(prefix) :]
            inside = os.path.realpath(mount.host_path).rstrip("/") + "/"
            # a symlink the step left (on the path or at it) would read the host's files, not the step's
            return candidate if os.path.realpath(candidate).startswith(inside) else None
    return None


def collect(pod: Mapping[str, Any], mounts: list[Mount], repository: Path) -> dict[str, Any]:
    """The step's outputs in the `kubesim.argoml.io/outputs` format, artifacts saved in `repository`."""
    wanted = declared(pod)
    metadata = pod.get("metadata") or {}
    workflow = str((metadata.get("labels") or {}).get("workflows.argoproj.io/workflow", ""))
    found: dict[str, Any] = {}
    parameters: dict[str, str] = {}
    for name, path in wanted.get("parameters", {}).items():
        source = _host_path(path, mounts)
        if source is not None and source.is_file():
            with source.open("rb") as file:
                parameters[name] = file.read(MAX_PARAMETER_BYTES).decode("utf-8", "replace")
    if parameters:
        found["parameters"] = parameters
    artifacts: dict[str, Any] = {}
    for name, artifact in wanted.get("artifacts", {}).items():
        source = _host_path(artifact["path"], mounts)
        if source is None or not source.exists():
            continue
        archived = "none" not in (artifact.get("archive") or {})
        key = artifact.get("key") or f"{workflow}/{metadata.get('name', '')}/{name}" + (
            ".tgz" if archived else ""
        )
        try:
            target = repository / stores.check_key(key)
        except stores.StoreError:
            continue  # a key the repository cannot hold: the output is missing, as Argo's upload failing
        try:
            _save(source, target, archived, posixpath.basename(posixpath.normpath(artifact["path"])))
        except OSError as error:  # e.g. a key under another object's name: the output is missing
            log.warning(
                "kubesim argoexec: artifact %s of %s not saved: %s", name, metadata.get("name"), error
            )
            continue
        artifacts[name] = {"s3": {"key": key}}
    if artifacts:
        found["artifacts"] = artifacts
    return found


def _save(source: Path, target: Path, archived: bool, name: str) -> None:
    """Into the repository as Argo's executor saves it: a tar+gzip whose one entry is named as the path's
    last part, or the file or folder as it is."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if archived:
        with tarfile.open(target, "w:gz") as archive:
            archive.add(source, arcname=name)
    elif source.is_dir():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, symlinks=True)  # links kept as links, never followed
    else:
        shutil.copyfile(source, target)
