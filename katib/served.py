"""What of Katib Argo-ML serves, and the one sentence that refuses the rest.

Why here: where Katib asks its cluster (is this algorithm in katib-config? is this collector's sidecar
configured?), we answer from what our own engine runs: the search algorithms `hyperparam` plans, the
median stopping rule, the trial kinds our operators control, the collectors whose metrics we read. A
refusal names the field and says what to use instead, so no Experiment is accepted that would never run.
"""

from __future__ import annotations

from katib import constants as k

#: Katib's algorithm names our engine runs (`katib.plan` maps each to the engine's name and settings).
ALGORITHMS = ("random", "grid", "tpe", "multivariate-tpe", "cmaes", "sobol")
#: Katib's early stopping algorithms our engine runs.
EARLY_STOPPING = ("medianstop",)
#: (apiVersion, kind) of the trials we run: one object of this kind per Trial, each controlled by us.
TRIAL_KINDS = (
    ("batch/v1", "Job"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "XGBoostJob"),
    ("kubeflow.org/v1", "MPIJob"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
)
#: Metrics collectors whose observations we read: the trial's stdout, a file (TEXT or JSON), or pushed
#: through Katib's DB manager API.
COLLECTORS = (k.STDOUT_COLLECTOR, k.FILE_COLLECTOR, k.PUSH_COLLECTOR)


def not_served(what: str, served: tuple[str, ...]) -> str:
    """The refusal's one wording: `<what> is not served by Argo-ML: use one of <served>`."""
    return f"{what} is not served by Argo-ML: use one of {', '.join(served)}"


def trial_kinds() -> tuple[str, ...]:
    """The served trial kinds as people write them: `batch/v1 Job`, `kubeflow.org/v1 TFJob`, ..."""
    return tuple(f"{api_version} {kind}" for api_version, kind in TRIAL_KINDS)
