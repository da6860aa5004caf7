"""The SSH keys an MPI TrainJob's launcher and nodes share: generated once per TrainJob (random, so kept out
of the pure planner) and stored in an immutable Secret, as Trainer's MPI plugin does."""

from __future__ import annotations

import base64
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from trainer import constants as c
from trainer.operator import plan, spec


def generate() -> tuple[bytes, bytes]:
    """A new ECDSA P-521 key pair: (private key as SEC1 PEM, public key as an authorized_keys line)."""
    key = ec.generate_private_key(ec.SECP521R1())
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private_pem, public + b"\n"


def secret(job: spec.TrainJob, private_pem: bytes, authorized_key: bytes) -> dict[str, Any]:
    """The `kubernetes.io/ssh-auth` Secret the plan's `mpi-ssh-auth` volume reads, owned by the TrainJob."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/ssh-auth",
        "immutable": True,
        "metadata": {
            "name": job.name + c.MPI_SSH_AUTH_SECRET_SUFFIX,
            "namespace": job.namespace,
            "ownerReferences": [plan.owner_reference(job)],
        },
        "data": {
            c.MPI_SSH_PRIVATE_KEY: base64.b64encode(private_pem).decode(),
            c.MPI_SSH_PUBLIC_KEY: base64.b64encode(authorized_key).decode(),
        },
    }
