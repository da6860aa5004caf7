from django.apps import AppConfig


class TrainerConfig(AppConfig):
    """Kubeflow Trainer v2's kinds (TrainJob, TrainingRuntime, ClusterTrainingRuntime): mirror rows, the
    controller, the runtimes' revisions and the progress endpoint. The pure core (spec … plan) has no
    Django."""

    name = "trainer"
