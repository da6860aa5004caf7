"""Which built-in kinds hold pods, and the API server's rules for them beyond the pod spec: a Pod, the pod
templates of workloads (at `spec.template`, a CronJob's at `spec.jobTemplate.spec.template`), the restart
policies each controller accepts, a CronJob's schedule and time zone (pkg/apis/apps/validation,
pkg/apis/batch/validation). Pure; the store calls `workload_causes` on every write of a built-in object.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Any

from kubesim.builtins import cron, podvalidation
from kubesim.builtins import fielderrors as fe
from kubesim.errors import Cause

Obj = dict[str, Any]

#: kinds whose pods restart Always (ValidatePodTemplateSpecForReplicaSet and friends)
_ALWAYS_RESTARTING = frozenset(
    {
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("", "ReplicationController"),
    }
)
_JOB_RESTART_POLICIES = ("OnFailure", "Never")
_TIME_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_CRONJOB_NAME_LIMIT = 52  # the controller appends `-<11 characters>` to name each Job


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def workload_causes(group: str, kind: str, obj: Obj, old: Obj | None = None) -> list[Cause]:
    """The pod-related problems of a built-in object (empty for kinds without pods); `old` is the stored
    object on an update, None on a create."""
    if (group, kind) == ("", "Pod"):
        return podvalidation.pod_causes(obj)
    if (group, kind) == ("", "PodTemplate"):
        return podvalidation.template_causes(obj.get("template"), "template")
    if (group, kind) in _ALWAYS_RESTARTING:
        return _replicated_causes(_spec(obj))
    if (group, kind) == ("batch", "Job"):
        return job_template_causes(_spec(obj), "spec")
    if (group, kind) == ("batch", "CronJob"):
        return cron_job_causes(obj, old)
    return []


def _replicated_causes(spec: Obj) -> list[Cause]:
    template = spec.get("template")
    causes = podvalidation.template_causes(template, "spec.template")
    template_spec = _spec(template) if isinstance(template, dict) else {}
    restart = template_spec.get("restartPolicy")
    if restart != "Always":
        causes.append(fe.not_supported("spec.template.spec.restartPolicy", restart or "", ("Always",)))
    if template_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            fe.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            )
        )
    return causes


def job_template_causes(job_spec: Obj, path: str) -> list[Cause]:
    """validateJobSpec's pod parts at `path` (a Job's `spec`, a CronJob's `spec.jobTemplate.spec`): the
    template, and pods that restart Never or OnFailure."""
    template = job_spec.get("template")
    causes = podvalidation.template_causes(template, f"{path}.template")
    restart = (_spec(template) if isinstance(template, dict) else {}).get("restartPolicy") or ""
    where = f"{path}.template.spec.restartPolicy"
    if restart in ("", "Always"):
        causes.append(fe.required(where, 'valid values: "OnFailure", "Never"'))
    elif restart not in _JOB_RESTART_POLICIES:
        causes.append(fe.not_supported(where, restart, _JOB_RESTART_POLICIES))
    elif job_spec.get("podFailurePolicy") and restart != "Never":
        causes.append(
            fe.invalid(where, restart, 'only "Never" is supported when podFailurePolicy is specified')
        )
    return causes


def cron_job_causes(cron_job: Obj, old: Obj | None) -> list[Cause]:
    """ValidateCronJobCreate / ValidateCronJobUpdate: schedule, time zone, the job template, and (on create)
    a name short enough for the Jobs it will make."""
    spec, old_spec = _spec(cron_job), _spec(old) if old is not None else None
    causes: list[Cause] = []
    schedule = spec.get("schedule")
    if not schedule:
        causes.append(fe.required("spec.schedule"))
    elif isinstance(schedule, str):
        tz_allowed = old_spec is not None and "TZ" in str(old_spec.get("schedule") or "")
        problems = cron.schedule_problems(
            schedule, tz_allowed=tz_allowed, has_time_zone=spec.get("timeZone") is not None
        )
        causes += fe.invalids("spec.schedule", schedule, problems)
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int) and deadline < 0:
        causes.append(
            fe.invalid("spec.startingDeadlineSeconds", deadline, "must be greater than or equal to 0")
        )
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        causes += time_zone_causes(spec.get("timeZone"), "spec.timeZone")
    job_template = spec.get("jobTemplate")
    job_spec = _spec(job_template) if isinstance(job_template, dict) else {}
    causes += job_template_causes(job_spec, "spec.jobTemplate.spec")
    if job_spec.get("selector") is not None:
        causes.append(
            fe.invalid(
                "spec.jobTemplate.spec.selector", job_spec["selector"], "`selector` will be auto-generated"
            )
        )
    if job_spec.get("manualSelector") is True:
        causes.append(fe.not_supported("spec.jobTemplate.spec.manualSelector", True, ("nil", "false")))
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        value = spec.get(key)
        if isinstance(value, int) and value < 0:
            causes.append(fe.invalid(f"spec.{key}", value, "must be greater than or equal to 0"))
    name = str((cron_job.get("metadata") or {}).get("name") or "")
    if old is None and len(name) > _CRONJOB_NAME_LIMIT:
        causes.append(
            fe.invalid("metadata.name", name, f"must be no more than {_CRONJOB_NAME_LIMIT} characters")
        )
    return causes


def time_zone_causes(time_zone: Any, path: str) -> list[Cause]:
    """validateTimeZone: an IANA name the server's time-zone database knows, not `Local`."""
    if time_zone is None:
        return []
    text = str(time_zone)
    if not text:
        return [fe.invalid(path, text, "timeZone must be nil or non-empty string")]
    for part in text.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [fe.invalid(path, text, f"unknown time zone {text}")]
    causes = []
    if text.lower() == "local":
        causes.append(
            fe.invalid(
                path,
                text,
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            )
        )
    elif text != "UTC":
        try:
            zoneinfo.ZoneInfo(text)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            causes.append(fe.invalid(path, text, f"unknown time zone {text}"))
    return causes
