"""A Kubernetes API simulator (apiserver, kubelet, Argo) for tests, benchmarks and make run."""
