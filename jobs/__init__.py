"""Distributed training operator: Kubeflow v1 job kinds → Pods + headless Services, env, status."""
