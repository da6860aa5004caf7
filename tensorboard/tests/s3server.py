"""The S3-compatible server the tests and the benchmark read artifacts from: kubesim's (kubesim/s3/, the
same server the dev stack runs over `.dev/pods/artifacts`) with its in-memory store, Signature V4 checked
against one access key, so a test proves the fetcher sent the credentials the pod's Secret held.

The usual test servers could not join this environment: moto pins botocore, whose python-dateutil<3
clashes with the kubernetes client's >=3; MinIO's server is not on PyPI.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kubesim.s3.server import S3Server, running
from kubesim.s3.stores import MemoryStore

__all__ = ["S3Server", "running_s3"]


@contextmanager
def running_s3(access_key: str = "test-access", secret_key: str = "test-secret") -> Iterator[S3Server]:  # noqa: S107
    """A server over an empty in-memory store (`server.store.buckets[name] = {key: body}` fills it)."""
    with running(MemoryStore(), access_key, secret_key) as server:
        yield server
