"""What the OpenAPI schema must say that no view declares, added in one place.

- The error answers every operation can give: DRF answers them from its own machinery (authentication,
  permissions, parsers, throttles, lookups), so no view declares them; without them the schema would
  promise only success and a client generated from it could not tell a refused request from a broken
  server. Every error answer carries the `Error` body, including those a view declared with a description
  only (the 503 of an operation that needs the cluster).
- A request body of several shapes (`oneOf`) is required when every shape requires something: drf-spectacular
  marks a body required only when one component requires a property.

- A request body whose serializer refuses unknown fields (`web.api.ClosedSerializer`, marked `x-closed`)
  says so: `additionalProperties: false`.

An operation whose body carries a document checked beyond what a schema can say marks itself with
`web.api.document_body` (the `x-document-body` extension, saying why); the contract test reads it there.
"""

from __future__ import annotations

from typing import Any

from web.api import CLOSED

ERROR_COMPONENT = "Error"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "`detail` for the request as a whole; otherwise a list of messages per field at fault.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}
UNSAFE = ("post", "put", "patch", "delete")


def answers(operation: dict[str, Any], method: str) -> dict[str, str]:
    """The error statuses this operation can answer, by what it takes."""
    parameters = operation.get("parameters") or []
    found = {
        "401": "No valid credentials (token or session).",
        "403": "You may not do this (in this namespace).",
        "429": "Too many requests; try again later.",
    }
    if parameters or "requestBody" in operation:
        found["400"] = "The request is invalid; the answer names each field at fault."
    if any(parameter.get("in") == "path" for parameter in parameters):
        found["404"] = "No such object in the namespaces you can read."
    elif any(parameter.get("name") == "cursor" for parameter in parameters):
        found["404"] = "The page link (cursor) is invalid."
    if "requestBody" in operation:
        found["413"] = "The request body is too large."
        found["415"] = "The body's media type is not one the operation takes (those of its request body)."
    if method in UNSAFE:
        found["405"] = "The method is not allowed here."
    return found


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: document every error answer an operation does not document."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(ERROR_COMPONENT, ERROR_SCHEMA)
    reference = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for item in (result.get("paths") or {}).values():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for status, description in answers(operation, method).items():
                responses.setdefault(status, {"description": description})
            for status, response in responses.items():
                if status.isdigit() and int(status) >= 400 and "content" not in response:
                    response["content"] = {"application/json": {"schema": reference}}
    return result


def require_bodies_of_every_shape(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: a body every shape of which requires a property is required."""
    schemas = (result.get("components") or {}).get("schemas") or {}
    for item in (result.get("paths") or {}).values():
        for operation in item.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if not body or body.get("required"):
                continue
            shapes = [media.get("schema") or {} for media in (body.get("content") or {}).values()]
            if shapes and all(_requires_something(shape, schemas) for shape in shapes):
                body["required"] = True
    return result


def _requires_something(schema: dict[str, Any], schemas: dict[str, Any]) -> bool:
    reference = schema.get("$ref", "")
    if reference.startswith("#/components/schemas/"):
        schema = schemas.get(reference.rsplit("/", 1)[1]) or {}
    if "oneOf" in schema:
        return all(_requires_something(shape, schemas) for shape in schema["oneOf"])
    return bool(schema.get("required"))


def close_marked_bodies(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: a component marked closed takes no property it does not list."""
    for component in ((result.get("components") or {}).get("schemas") or {}).values():
        if component.pop(CLOSED, False):
            component["additionalProperties"] = False
    return result
