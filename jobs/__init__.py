"""Distributed training operator: TFJob, MXJob, PyTorchJob → Pods + headless Services, env, status."""
