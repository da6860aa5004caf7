"""An MPI TrainJob's SSH Secret holds a usable key pair under the keys the plan's volume reads."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from trainer.operator import plan, resolution, spec, sshkeys
from trainer.tests import factories as f


def test_the_pair_is_a_p521_key_and_its_authorized_keys_line():
    private_pem, authorized_key = sshkeys.generate()
    key = serialization.load_pem_private_key(private_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp521r1"
    assert private_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert authorized_key.startswith(b"ecdsa-sha2-nistp521 ")
    assert authorized_key.endswith(b"\n")
    public = serialization.load_ssh_public_key(authorized_key.strip())
    assert public.public_numbers() == key.public_key().public_numbers()  # type: ignore[union-attr]


def test_each_pair_is_new():
    assert sshkeys.generate()[0] != sshkeys.generate()[0]


def test_the_secret_is_the_one_the_plan_mounts():
    job = spec.parse_train_job(f.train_job(name="tj", namespace="ml"))
    result = plan.plan(resolution.resolve(job, spec.parse_runtime(f.mpi_runtime())))
    body = sshkeys.secret(job, b"PRIVATE", b"PUBLIC\n")
    assert body["metadata"]["name"] == result.ssh_auth_secret_name == "tj-mpi-ssh-auth"
    assert body["metadata"]["namespace"] == "ml"
    assert body["type"] == "kubernetes.io/ssh-auth"
    assert body["immutable"] is True
    volume = result.pod("tj-launcher-0-0")["spec"]["volumes"][0]["secret"]
    assert volume["secretName"] == body["metadata"]["name"]
    assert {item["key"] for item in volume["items"]} == set(body["data"])
    assert base64.b64decode(body["data"]["ssh-privatekey"]) == b"PRIVATE"
    assert base64.b64decode(body["data"]["ssh-publickey"]) == b"PUBLIC\n"
    assert body["metadata"]["ownerReferences"] == result.pods[0]["metadata"]["ownerReferences"]
