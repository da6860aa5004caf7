"""The labels and annotations JobSet and the Job controller put on a Job's pods, without JobSet or Jobs.

JobSet (v0.9+, `labelAndAnnotateObject`) labels and annotates each child Job, and so its pods, with the same
keys: the JobSet's name and uid, the replicated job's name and replicas, the Job's index within it and
across the JobSet (`job-global-index`, counted in the runtime's order of replicated jobs), the Job's key (the
SHA-1 of `<namespace>/<job name>`), the group keys, and the JobSet's restart count. We run no JobSet, so its
uid is the TrainJob's, and `restart-attempt` stays 0: a failed TrainJob is not restarted as a JobSet with
`failurePolicy.maxRestarts` would be. Tools and schedulers that select a TrainJob's pods by these keys (Kueue,
dashboards, `kubectl get pods -l`) find them as on a cluster with JobSet.

Pure: a resolved spec in, string maps out.
"""

from __future__ import annotations

import hashlib

from trainer import constants as c
from trainer.operator import resolution


def job_name(train_job: str, replicated_job: str, replica: int) -> str:
    """JobSet's GenJobName: `<jobset>-<replicated job>-<job index>` (our JobSet's name is the TrainJob's)."""
    return f"{train_job}-{replicated_job}-{replica}"


def job_key(namespace: str, name: str) -> str:
    """JobSet's jobHashKey: the SHA-1 of `<namespace>/<job name>`, 40 hex digits (a label holds 63)."""
    return hashlib.sha1(f"{namespace}/{name}".encode(), usedforsecurity=False).hexdigest()


def jobset_keys(
    resolved: resolution.ResolvedSpec, rjob: resolution.ResolvedJob, replica: int
) -> dict[str, str]:
    """What JobSet sets as both labels and annotations on the Job `replica` of `rjob`, and so on its pods."""
    earlier = 0
    for other in resolved.replicated_jobs:
        if other.name == rjob.name:
            break
        earlier += other.replicas
    group = [other for other in resolved.replicated_jobs if other.group_name == rjob.group_name]
    earlier_in_group = sum(other.replicas for other in group[: [o.name for o in group].index(rjob.name)])
    name = job_name(resolved.name, rjob.name, replica)
    return {
        c.LABEL_JOBSET_NAME: resolved.name,
        c.LABEL_JOBSET_UID: resolved.job.uid,
        c.LABEL_REPLICATED_JOB_NAME: rjob.name,
        c.LABEL_RESTART_ATTEMPT: "0",
        c.LABEL_REPLICATED_JOB_REPLICAS: str(rjob.replicas),
        c.LABEL_GLOBAL_REPLICAS: str(sum(other.replicas for other in resolved.replicated_jobs)),
        c.LABEL_JOB_INDEX: str(replica),
        c.LABEL_JOB_KEY: job_key(resolved.job.namespace, name),
        c.LABEL_JOB_GLOBAL_INDEX: str(earlier + replica),
        c.LABEL_GROUP_NAME: rjob.group_name,
        c.LABEL_GROUP_REPLICAS: str(sum(other.replicas for other in group)),
        c.LABEL_JOB_GROUP_INDEX: str(earlier_in_group + replica),
    }


def pod_metadata(
    resolved: resolution.ResolvedSpec, rjob: resolution.ResolvedJob, replica: int, index: int
) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) of one pod: JobSet's keys in both (computed once); the Job controller's job
    name and completion index (the annotation is what the pods' rank env reads); and the step's ancestor
    label (JobSet leaves that on the Job; with no Job in between, the pod carries it so tools can find a
    step's pods)."""
    keys = jobset_keys(resolved, rjob, replica)
    labels = {
        **keys,
        c.LABEL_JOB_NAME: job_name(resolved.name, rjob.name, replica),
        c.LABEL_COMPLETION_INDEX: str(index),
    }
    if rjob.ancestor:
        labels[c.LABEL_ANCESTOR] = rjob.ancestor
    return labels, {**keys, c.ANNOTATION_COMPLETION_INDEX: str(index)}
