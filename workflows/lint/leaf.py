"""Rules for templates that run something (containers, container sets, scripts, resources), and artifacts."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from fields import as_dict
from workflows.lint.dag import find_cycle
from workflows.lint.loader import parse_yaml_fragment
from workflows.lint.model import SpecContext, as_list, has_main_container
from workflows.lint.names import check_named_list, named_items, text
from workflows.lint.variables import contains_tag
from workflows.safeyaml import YamlRefused

RESOURCE_ACTIONS = ("get", "create", "apply", "delete", "replace", "patch")
_TAG = re.compile(r"{{.*?}}", re.DOTALL)


def check_leaf(ctx: SpecContext, template: dict[str, Any], prefix: str) -> None:
    """Argo's validateLeaf, apart from variable references (checked by the caller)."""
    if isinstance(template.get("container"), dict):
        _check_container(ctx, template, prefix)
    if isinstance(template.get("containerSet"), dict):
        _check_container_set(ctx, template, prefix)
    if isinstance(template.get("resource"), dict):
        _check_resource(ctx, template, prefix)
    script = template.get("script")
    if isinstance(script, dict) and not text(script.get("image")) and not _default_image(ctx, "script"):
        ctx.report(f"{prefix}.script.image", "may not be empty")


def _default_image(ctx: SpecContext, kind: str) -> bool:
    """Whether templateDefaults give an image. Argo honours them for Workflows and WorkflowTemplates only."""
    if ctx.owner_kind == "ClusterWorkflowTemplate":
        return False
    defaults = as_dict(ctx.spec.get("templateDefaults"))
    return bool(text(as_dict(defaults.get(kind)).get("image")))


def _check_container(ctx: SpecContext, template: dict[str, Any], prefix: str) -> None:
    container = template["container"]
    mounted: dict[str, str] = {}
    for index, mount in enumerate(as_list(container.get("volumeMounts"))):
        mount = as_dict(mount)
        mount_path = text(mount.get("mountPath"))
        if mount_path in mounted:
            where = f"{prefix}.container.volumeMounts[{index}].mountPath"
            ctx.report(where, f"'{mount_path}' already mounted in {mounted[mount_path]}")
        mounted.setdefault(mount_path, f"container.volumeMounts.{text(mount.get('name'))}")
    for index, artifact, name in named_items(as_dict(template.get("inputs")).get("artifacts")):
        artifact_path = text(artifact.get("path"))
        if artifact_path in mounted:
            where = f"{prefix}.inputs.artifacts[{index}].path"
            ctx.report(where, f"'{artifact_path}' already mounted in {mounted[artifact_path]}")
        mounted.setdefault(artifact_path, f"inputs.artifacts.{name}")
    if not text(container.get("image")) and not _default_image(ctx, "container"):
        ctx.report(f"{prefix}.container.image", "may not be empty")


def _check_container_set(ctx: SpecContext, template: dict[str, Any], prefix: str) -> None:
    container_set = template["containerSet"]
    where = f"{prefix}.containerSet"
    containers = as_list(container_set.get("containers"))
    if not containers:
        ctx.report(f"{where}.containers", "must have at least one container")
    ctx.errors.extend(check_named_list(containers, f"{where}.containers", parameters=False))
    mounted: dict[str, str] = {}
    for index, mount in enumerate(as_list(container_set.get("volumeMounts"))):
        mount = as_dict(mount)
        mount_path = text(mount.get("mountPath"))
        if mount_path in mounted:
            ctx.report(
                f"{where}.volumeMounts[{index}].mountPath",
                f"'{mount_path}' already mounted in {mounted[mount_path]}",
            )
        mounted.setdefault(mount_path, f"volumeMounts.{text(mount.get('name'))}")
    graph = {
        name: [text(dep) for dep in as_list(node.get("dependencies"))]
        for _, node, name in named_items(containers)
    }
    for name, dependencies in graph.items():
        for dependency in dependencies:
            if dependency not in graph:
                ctx.report(f"{where}.containers.{name}", f"dependency '{dependency}' not defined")
    cycle = find_cycle({name: [dep for dep in deps if dep in graph] for name, deps in graph.items()})
    if cycle:
        ctx.report(f"{where}.containers", f"dependency cycle detected: {'->'.join(cycle)}")
    inputs, outputs = as_dict(template.get("inputs")), as_dict(template.get("outputs"))
    uses_io = (
        as_list(inputs.get("artifacts"))
        or as_list(outputs.get("parameters"))
        or as_list(outputs.get("artifacts"))
    )
    if uses_io and not has_main_container(container_set):
        ctx.report(f"{where}.containers", 'must have a container named "main" for input or output')


def _check_resource(ctx: SpecContext, template: dict[str, Any], prefix: str) -> None:
    resource = template["resource"]
    where = f"{prefix}.resource"
    action = text(resource.get("action"))
    if not contains_tag(action) and action not in RESOURCE_ACTIONS:
        ctx.report(f"{where}.action", f"must be one of: {', '.join(RESOURCE_ACTIONS)}")
    if action in ("delete", "get"):
        return
    manifest, manifest_from = text(resource.get("manifest")), resource.get("manifestFrom")
    if not manifest and manifest_from is None:
        ctx.report_message(where, f"either {where}.manifest or {where}.manifestFrom must be specified")
    if manifest and manifest_from is not None:
        ctx.report_message(
            where,
            "shouldn't have both `manifest` and `manifestFrom` specified in `Manifest` for resource template",
        )
    artifact = as_dict(as_dict(manifest_from).get("artifact"))
    if artifact:
        wanted = text(artifact.get("name"))
        inputs = {name for _, _, name in named_items(as_dict(template.get("inputs")).get("artifacts"))}
        if wanted not in inputs:
            ctx.report_message(
                f"{where}.manifestFrom", f"artifact {wanted} in `manifestFrom` refer to a non-exist artifact"
            )
    problem = _manifest_problem(manifest) if manifest else None
    if problem:
        ctx.report(f"{where}.manifest", problem)


def _manifest_problem(manifest: str) -> str | None:
    """Why the manifest, once variables are replaced by placeholders, cannot be read: Argo's words for a
    syntax error, the bounded reader's for a broken limit (an alias bomb); None when it reads."""
    replaced = _TAG.sub("argo-lint-placeholder", manifest)
    try:
        parse_yaml_fragment(replaced)
    except YamlRefused as refused:
        return "must be a valid yaml" if refused.limit == "syntax" else str(refused)
    return None


def artifact_path_problem(artifact: dict[str, Any], name: str) -> str | None:
    """Argo's Artifact.CleanPath for artifacts of leaf templates: a path is needed and must stay put."""
    path = text(artifact.get("path"))
    if not path:
        return f"Artifact '{name}' did not specify a path"
    if ".." in path.split("/") and not contains_tag(path) and posixpath.normpath(path).startswith(".."):
        return "Directory traversal is not permitted"
    return None


def check_artifact_location(ctx: SpecContext, artifact: dict[str, Any], where: str) -> None:
    """Argo's validateArtifactLocation: a git artifact needs its repo, an HDFS one its addresses and path."""
    git = artifact.get("git")
    if isinstance(git, dict) and not text(git.get("repo")):
        ctx.report(f"{where}.git.repo", "is required")
    hdfs = artifact.get("hdfs")
    if isinstance(hdfs, dict):
        _check_hdfs(ctx, hdfs, f"{where}.hdfs")


def _check_hdfs(ctx: SpecContext, hdfs: dict[str, Any], where: str) -> None:
    if not as_list(hdfs.get("addresses")):
        ctx.report(f"{where}.addresses", "is required")
    path = text(hdfs.get("path"))
    if not path:
        ctx.report(f"{where}.path", "is required")
    elif not path.startswith("/") and not contains_tag(path):
        ctx.report(f"{where}.path", "must be a absolute file path")
    keytab, ccache = hdfs.get("krbKeytabSecret") is not None, hdfs.get("krbCCacheSecret") is not None
    if not text(hdfs.get("hdfsUser")) and not keytab and not ccache:
        ctx.report_message(
            where, f"either {where}.hdfsUser, {where}.krbCCacheSecret or {where}.krbKeytabSecret is required"
        )
    kerberos_config = (
        bool(text(hdfs.get("krbServicePrincipalName"))) and hdfs.get("krbConfigConfigMap") is not None
    )
    if keytab and not (kerberos_config and text(hdfs.get("krbUsername")) and text(hdfs.get("krbRealm"))):
        ctx.report_message(
            where,
            f"{where}.krbServicePrincipalName, {where}.krbConfigConfigMap, {where}.krbUsername and"
            f" {where}.krbRealm are required with {where}.krbKeytabSecret",
        )
    if ccache and not kerberos_config:
        ctx.report_message(
            where,
            f"{where}.krbServicePrincipalName and {where}.krbConfigConfigMap are required with"
            f" {where}.krbCCacheSecret",
        )
