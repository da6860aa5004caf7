"""Decoding the apiserver's protobuf request bodies for the kinds kubectl sends that way."""

from __future__ import annotations

import pytest

from kubesim.errors import ApiError
from kubesim.server import protobuf
from kubesim.server.negotiation import decode_body


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def envelope(api_version: str, kind: str, payload: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return protobuf.MAGIC + field(1, type_meta) + field(2, payload) + field(4, protobuf.MEDIA_TYPE)


def test_a_self_subject_access_review_decodes_to_its_json_form() -> None:
    attributes = field(1, "team") + field(2, "list") + field(5, "pods") + field(6, "log")
    payload = field(1, field(1, "")) + field(2, field(1, attributes))
    body = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", payload)
    assert protobuf.decode(body) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {
            "resourceAttributes": {
                "namespace": "team",
                "verb": "list",
                "resource": "pods",
                "subresource": "log",
            }
        },
    }


def test_a_token_request_keeps_repeated_audiences_numbers_and_nested_references() -> None:
    reference = field(1, "Pod") + field(3, "trainer")
    spec = field(1, "argoml") + field(1, "vault") + field(3, reference) + field(4, 7200)
    labels = field(11, field(1, "app") + field(2, "web"))
    body = envelope("authentication.k8s.io/v1", "TokenRequest", field(1, labels) + field(2, spec))
    assert protobuf.decode(body) == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "audiences": ["argoml", "vault"],
            "boundObjectRef": {"kind": "Pod", "name": "trainer"},
            "expirationSeconds": 7200,
        },
    }


def test_a_field_number_the_table_does_not_know_is_a_400_never_dropped() -> None:
    payload = field(2, field(1, "team") + field(9, "ignored"))
    body = envelope("authorization.k8s.io/v1", "SelfSubjectRulesReview", payload)
    with pytest.raises(ApiError) as error:
        protobuf.decode(body)
    assert error.value.code == 400
    assert "field 9 of k8s.io.api.authorization.v1.SelfSubjectRulesReviewSpec" in error.value.message


def test_custom_resources_and_bodies_without_the_magic_stay_unsupported_and_the_415_offers_json() -> None:
    """Custom resources have no protobuf form; the apiserver's 415 then lists only what the endpoint
    takes (`kubectl debug --copy-to` once read "accepted media types include: …protobuf" for a Pod)."""
    assert protobuf.decode(envelope("kubesim.test/v1", "Widget", b"")) is None
    assert protobuf.decode(b"\x0a\x00") is None
    with pytest.raises(ApiError) as error:
        decode_body(envelope("kubesim.test/v1", "Widget", b""), protobuf.MEDIA_TYPE)
    assert error.value.code == 415
    assert "accepted media types include: application/json, application/yaml;" in error.value.message


def test_a_pod_is_decoded() -> None:
    payload = field(1, field(1, "web")) + field(2, field(2, field(1, "main") + field(2, "nginx")))
    assert protobuf.decode(envelope("v1", "Pod", payload)) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
    }


def test_a_truncated_body_is_a_400() -> None:
    body = envelope("authentication.k8s.io/v1", "TokenReview", field(2, field(1, "abc")))[:-2]
    with pytest.raises(ApiError) as error:
        protobuf.decode(body)
    assert error.value.code == 400


def test_a_secret_keeps_bytes_as_base64_and_drops_the_empty_strings_go_always_sends() -> None:
    data = field(2, field(1, "password") + field(2, b"\x00\xff"))
    payload = field(1, field(1, "db") + field(2, "")) + data + field(3, "") + field(5, 1)
    assert protobuf.decode(envelope("v1", "Secret", payload)) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db"},
        "data": {"password": "AP8="},
        "immutable": True,
    }


def test_quantities_and_plain_go_numbers_and_flags_read_as_json_would() -> None:
    """resource.Quantity is a message holding its string; plain Go ints and bools are always on the wire,
    and dropped when zero as JSON's omitempty drops them; pointer values (replicas) are kept even at 0."""
    limits = field(1, field(1, "cpu") + field(2, field(1, "500m")))
    port = field(2, 0) + field(3, 8080)
    container = (
        field(1, "main") + field(2, "img") + field(6, port) + field(8, limits) + field(16, 0) + field(18, 1)
    )
    template = field(2, field(2, container))
    spec = field(1, 0) + field(3, template) + field(5, 0) + field(7, 0)
    assert protobuf.decode(envelope("apps/v1", "Deployment", field(2, spec)))["spec"] == {
        "replicas": 0,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "img",
                        "ports": [{"containerPort": 8080}],
                        "resources": {"limits": {"cpu": "500m"}},
                        "tty": True,
                    }
                ]
            }
        },
    }


def test_an_embedded_struct_reads_inline_and_a_string_pointer_is_kept_even_when_empty() -> None:
    """IngressRule embeds IngressRuleValue (field 2), whose `http` JSON spells on the rule itself; pathType
    and ingressClassName are *string, so an empty one was set on purpose and stays."""
    backend = field(4, field(1, "web") + field(2, field(2, 80)))
    path = field(1, "/") + field(2, backend) + field(3, "")
    rule = field(1, "a.example") + field(2, field(1, field(1, path)))
    spec = field(3, rule) + field(4, "")
    assert protobuf.decode(envelope("networking.k8s.io/v1", "Ingress", field(2, spec)))["spec"] == {
        "rules": [
            {
                "host": "a.example",
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "backend": {"service": {"name": "web", "port": {"number": 80}}},
                            "pathType": "",
                        }
                    ]
                },
            }
        ],
        "ingressClassName": "",
    }
