"""A test-only app with a concrete mirror model, installed by kube/tests/test_mirror.py's fixture only."""
