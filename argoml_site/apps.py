"""The site's start-up: it wires apps that must not import each other."""

from __future__ import annotations

from django.apps import AppConfig


class ArgomlSiteConfig(AppConfig):
    name = "argoml_site"

    def ready(self) -> None:
        """Tell the TensorBoard spawner which of our kinds it can open (a sweep, the training jobs), in the
        order its answers list them: tensorboard imports none of the apps that own them."""
        from hyperparam.crd import HYPERPARAM_WORKFLOW
        from jobs.crd import JAXJOB, MPIJOB, MXJOB, PADDLEJOB, PYTORCHJOB, TFJOB, XGBOOSTJOB
        from tensorboard import actions as tensorboard_actions
        from trainer.crd import TRAIN_JOB

        tensorboard_actions.register_source(HYPERPARAM_WORKFLOW.resource_type, "hpw")
        for job in (TFJOB, MXJOB, PYTORCHJOB, XGBOOSTJOB, JAXJOB, PADDLEJOB, MPIJOB):
            tensorboard_actions.register_source(job.resource_type, job.kind.lower())
        # Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1): a training job like the v1 kinds above.
        tensorboard_actions.register_source(TRAIN_JOB.resource_type, "trainjob")
