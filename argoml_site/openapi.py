"""The error answers every API operation can give, added to the OpenAPI schema in one place.

DRF answers them from its own machinery (authentication, permissions, parsers, throttles, lookups), so no
view declares them; without this hook the schema would promise only success and a client generated from it
could not tell a refused request from a broken server.
"""

from __future__ import annotations

from typing import Any

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
        found["415"] = "The body is not JSON."
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
                responses.setdefault(
                    status,
                    {"description": description, "content": {"application/json": {"schema": reference}}},
                )
    return result
