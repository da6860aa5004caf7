"""Kubeflow Trainer v2 without JobSet: a TrainJob and its (Cluster)TrainingRuntime → the pods we run."""
