"""Pod Security admission: the Pod Security Standards' checks and the namespace-label admission plugin.

Written for the simulator from the upstream rules (kubernetes/pod-security-admission `policy/check_*.go`);
it must not import production code (the `webhooks` app has its own, independent checker).
"""
