"""Pure validation of a training job manifest: a list of errors, each naming the field it is about.

The admission webhook rejects a job with errors; the reconcile loop marks such a job Failed with
reason FailedValidation instead of acting on it. An empty list means the operator can run the job.
"""

from __future__ import annotations

import re
from typing import Any

import fields
import limits
from fields import FieldError, as_dict, as_int, integer_problem
from jobs import apigroups, bounds, gang
from jobs.frameworks import Framework, UnknownKind, framework_class
from jobs.manifests import replica_name
from jobs.spec import CLEAN_POD_POLICIES, RESTART_POLICIES, framework_container, replica_counts
from kube.names import NameFormat

DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME_LENGTH = 63
REPLICA_SPEC_FIELDS = ("replicas", "restartPolicy", "template")
RUN_POLICY_FIELDS = (
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
    "suspend",
)
SCHEDULING_POLICY_FIELDS = (
    "minAvailable",
    "queue",
    "minResources",
    "priorityClass",
    "scheduleTimeoutSeconds",
)


def validate(job: object, framework: Framework | None = None) -> list[FieldError]:
    """Every problem in `job`, in field order; `framework` defaults to the one handling `job.kind`.

    A job with a count past its bound (jobs/bounds.py) gets those errors alone: nothing else is looked at
    until its counts are within their bounds.
    """
    if not isinstance(job, dict):
        return [FieldError("", f"a job {fields.not_an_object(job)}")]
    errors: list[FieldError] = []
    if framework is None:
        try:
            framework = framework_class(job.get("kind"))()
        except UnknownKind as unknown:
            return [FieldError("kind", str(unknown.args[0]))]
    over = bounds.count_errors(job, framework)
    if over:
        return over
    if job.get("apiVersion", apigroups.ARGOML_API_VERSION) not in apigroups.API_VERSIONS:
        served = " or ".join(apigroups.API_VERSIONS)
        errors.append(FieldError("apiVersion", f"must be {served}, not {job.get('apiVersion')!r}"))
    metadata = job.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    name_errors = _validate_name(name)
    errors += name_errors
    spec = job.get("spec")
    if spec is None:
        return [*errors, FieldError("spec", "is required")]
    if not isinstance(spec, dict):
        return [*errors, FieldError("spec", fields.not_an_object(spec))]
    errors += _validate_spec_fields(spec, framework)
    checked_name = None if name_errors else name
    errors += _validate_replica_specs(spec.get(framework.spec_key), framework, checked_name)
    errors += _validate_run_policy(spec.get("runPolicy"), sum(replica_counts(job, framework).values()))
    errors += framework.validate_extra_fields(spec)
    return listed(errors)


def listed(errors: list[FieldError]) -> list[FieldError]:
    """The first PROBLEMS_LISTED errors and one that counts the rest: every door answers this list, and a
    job of 50,000 unknown replica types must not become an answer of 50,000 problems."""
    if len(errors) <= limits.PROBLEMS_LISTED:
        return errors
    unlisted = len(errors) - limits.PROBLEMS_LISTED
    first = errors[limits.PROBLEMS_LISTED]
    return [
        *errors[: limits.PROBLEMS_LISTED],
        FieldError(first.path, f"this and {unlisted - 1} more problems after it are not listed"),
    ]


def _validate_name(name: object) -> list[FieldError]:
    if not isinstance(name, str) or not name:
        return [FieldError("metadata.name", "is required")]
    if len(name) > MAX_NAME_LENGTH:
        return [FieldError("metadata.name", f"must be at most {MAX_NAME_LENGTH} characters, not {len(name)}")]
    if not DNS_1035_LABEL.match(name):
        return [
            FieldError(
                "metadata.name",
                f"{name!r} must be a DNS-1035 label: lowercase letters, digits "
                "and '-', starting with a letter and ending with a letter or digit",
            )
        ]
    return []


def _validate_spec_fields(spec: dict[str, Any], framework: Framework) -> list[FieldError]:
    known = (framework.spec_key, "runPolicy", *framework.extra_spec_fields, *framework.optional_spec_fields)
    return [
        FieldError(f"spec.{key}", f"unknown field for {framework.kind}; expected one of {', '.join(known)}")
        for key in spec
        if key not in known
    ]


def _validate_replica_specs(specs: object, framework: Framework, name: str | None) -> list[FieldError]:
    """Errors of the replica specs; child names are checked against `name` unless it is None."""
    path = f"spec.{framework.spec_key}"
    if not isinstance(specs, dict) or not specs:
        return [FieldError(path, "is required: a mapping of replica type to replica spec")]
    errors: list[FieldError] = []
    seen: dict[str, str] = {}
    counts: dict[str, int] = {}
    allowed = ", ".join(framework.replica_types)
    for key, replica_spec in specs.items():
        replica_type = framework.canonical_replica_type(key)
        if replica_type is None:
            errors.append(FieldError(f"{path}.{key}", f"unknown replica type; expected one of {allowed}"))
            continue
        if replica_type in seen:
            errors.append(
                FieldError(f"{path}.{key}", f"duplicates {seen[replica_type]!r} (types ignore case)")
            )
            continue
        seen[replica_type] = str(key)
        replica_errors, count = _validate_replica_spec(replica_spec, f"{path}.{key}", replica_type, framework)
        errors += replica_errors
        if count is not None:
            counts[replica_type] = count
    errors += _validate_roles(seen, counts, framework, path)
    if isinstance(name, str):
        errors += _validate_child_names(name, counts)
    return errors


def _validate_replica_spec(
    spec: object, path: str, replica_type: str, framework: Framework
) -> tuple[list[FieldError], int | None]:
    """Errors of one replica spec, and its replica count when that is readable."""
    if not isinstance(spec, dict):
        return [FieldError(path, fields.not_an_object(spec, "(replicas, restartPolicy, template)"))], None
    errors = [FieldError(f"{path}.{key}", "unknown field") for key in spec if key not in REPLICA_SPEC_FIELDS]
    count: int | None = framework.default_replicas.get(replica_type, 1)
    if spec.get("replicas") is not None:
        problem = integer_problem(spec["replicas"], minimum=0)
        count = None if problem else as_int(spec["replicas"])
        if problem:
            errors.append(FieldError(f"{path}.replicas", problem))
        elif replica_type in framework.singleton_types and count != 1:
            errors.append(
                FieldError(
                    f"{path}.replicas", f"a {framework.kind} has exactly 1 {replica_type}, not {count}"
                )
            )
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        errors.append(
            FieldError(
                f"{path}.restartPolicy", f"must be one of {', '.join(RESTART_POLICIES)}, not {policy!r}"
            )
        )
    errors += _validate_template(spec.get("template"), f"{path}.template", framework)
    return errors, count


def _validate_template(template: object, path: str, framework: Framework) -> list[FieldError]:
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return [
            FieldError(f"{path}.spec.containers", "is required: a pod template with at least one container")
        ]
    errors = [
        FieldError(f"{path}.spec.containers[{i}]", fields.not_an_object(container))
        for i, container in enumerate(containers)
        if not isinstance(container, dict)
    ]
    main = framework_container(as_dict(pod_spec), framework)
    if main is None:
        errors.append(
            FieldError(
                f"{path}.spec.containers",
                f"needs a container named {framework.container_name!r} to run the {framework.kind} code",
            )
        )
        return errors
    where = f"{path}.spec.containers[{next(i for i, c in enumerate(containers) if c is main)}]"
    if not isinstance(main.get("image"), str) or not main["image"]:
        errors.append(FieldError(f"{where}.image", "is required"))
    errors += _validate_ports(main.get("ports"), f"{where}.ports", framework.port_name)
    return errors


def _validate_ports(ports: object, path: str, port_name: str) -> list[FieldError]:
    if ports is None:
        return []
    if not isinstance(ports, list):
        return [FieldError(path, "must be a list")]
    for i, port in enumerate(ports):
        if isinstance(port, dict) and port.get("name") == port_name:
            number = as_int(port.get("containerPort"))
            if number is None or not 1 <= number <= 65535:
                return [
                    FieldError(
                        f"{path}[{i}].containerPort",
                        f"must be a port number 1-65535, not {port.get('containerPort')!r}",
                    )
                ]
    return []


def _validate_roles(
    seen: dict[str, str], counts: dict[str, int], framework: Framework, path: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    chiefs = [seen[rt] for rt in framework.chief_types if rt in seen]
    if len(chiefs) > 1:
        errors.append(FieldError(path, f"has {' and '.join(chiefs)}; a job has at most one chief or master"))
    for required in framework.required_types:
        if required not in seen:
            errors.append(
                FieldError(f"{path}.{required}", f"is required: a {framework.kind} needs one {required}")
            )
    chief_is_required = any(rt in framework.chief_types for rt in framework.required_types)
    worker = framework.worker_type
    if not chiefs and not chief_is_required and (worker not in seen or counts.get(worker, 1) < 1):
        errors.append(
            FieldError(
                f"{path}.{worker}", f"needs at least 1 replica: without a chief, {worker} 0 decides success"
            )
        )
    return errors


def _validate_child_names(name: str, counts: dict[str, int]) -> list[FieldError]:
    longest = [replica_name(name, rt, count - 1) for rt, count in counts.items() if count > 0]
    too_long = [child for child in longest if len(child) > MAX_NAME_LENGTH]
    if not too_long:
        return []
    child = max(too_long, key=len)
    return [
        FieldError(
            "metadata.name",
            f"is too long: child {child!r} would have {len(child)} characters, "
            f"more than the {MAX_NAME_LENGTH} Kubernetes allows",
        )
    ]


def _validate_run_policy(policy: object, total_replicas: int) -> list[FieldError]:
    if policy is None:
        return []
    if not isinstance(policy, dict):
        return [FieldError("spec.runPolicy", fields.not_an_object(policy))]
    errors = [
        FieldError(f"spec.runPolicy.{key}", "unknown field") for key in policy if key not in RUN_POLICY_FIELDS
    ]
    clean = policy.get("cleanPodPolicy")
    if clean is not None and clean not in CLEAN_POD_POLICIES:
        errors.append(
            FieldError(
                "spec.runPolicy.cleanPodPolicy",
                f"must be one of {', '.join(CLEAN_POD_POLICIES)}, not {clean!r}",
            )
        )
    found = fields.ErrorList()
    fields.integers(
        found,
        "spec.runPolicy",
        policy,
        {"backoffLimit": 0, "ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 1},
    )
    fields.flag(found, "spec.runPolicy.suspend", policy.get("suspend"))
    errors += found.errors
    errors += _validate_scheduling_policy(policy.get("schedulingPolicy"), total_replicas)
    return errors


def _validate_scheduling_policy(policy: object, total_replicas: int) -> list[FieldError]:
    """Kubeflow's SchedulingPolicy: the gang must fit in the job, names must be names, quantities must
    parse (a gang scheduler would otherwise hold the job back for reasons nobody reads)."""
    path = "spec.runPolicy.schedulingPolicy"
    if policy is None:
        return []
    if not isinstance(policy, dict):
        return [FieldError(path, fields.not_an_object(policy))]
    errors = [
        FieldError(f"{path}.{key}", "unknown field") for key in policy if key not in SCHEDULING_POLICY_FIELDS
    ]
    found = fields.ErrorList()
    fields.integers(found, path, policy, {"minAvailable": 1, "scheduleTimeoutSeconds": 0})
    errors += found.errors
    min_available = as_int(policy.get("minAvailable"))
    if min_available is not None and 0 < total_replicas < min_available:
        errors.append(
            FieldError(
                f"{path}.minAvailable",
                f"is {min_available}, more than the job's {total_replicas} replicas: "
                "the gang could never start",
            )
        )
    for field in ("queue", "priorityClass"):
        value = policy.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            errors.append(FieldError(f"{path}.{field}", "must be a string"))
        elif value and (problems := NameFormat.SUBDOMAIN.problems(value)):
            errors.append(FieldError(f"{path}.{field}", f"{value!r} is not a valid name: {problems[0]}"))
    resources = policy.get("minResources")
    if resources is not None and not isinstance(resources, dict):
        errors.append(
            FieldError(
                f"{path}.minResources", fields.not_an_object(resources, "of quantities by resource name")
            )
        )
    for name, quantity in resources.items() if isinstance(resources, dict) else ():
        problem = gang.quantity_problem(quantity)
        if problem is not None:
            errors.append(FieldError(f"{path}.minResources.{name}", problem))
    return errors
