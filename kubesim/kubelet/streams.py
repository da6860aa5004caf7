"""The pod subresources a real API server upgrades to a stream to the kubelet (`exec`, `attach`,
`portforward`): the simulator runs no containers, so it refuses them with a Status that says so.

A real API server answers them with `101 Switching Protocols` (SPDY or WebSocket); a client that gets any
other answer reads the body as a Status and prints its message (`kubectl exec` prints "error: unable to
upgrade connection: <message>"). 400 BadRequest is what the API server itself answers when a stream cannot
start (for example a container that is not running), so clients treat it as a final answer, not a retry.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesim.errors import ApiError, method_not_allowed
from kubesim.server.types import ApiRequest, Response
from kubesim.store import Store

#: the streaming subresources of pods, and the verbs a real API server accepts on them
STREAMS = ("exec", "attach", "portforward")


def unsupported_stream_handler(store: Store, subresource: str) -> Callable[[ApiRequest], Response]:
    """pods/<subresource>: 404 for a pod that does not exist (as upstream), else 400 naming the simulator."""

    def handle(request: ApiRequest) -> Response:
        if request.method not in ("GET", "POST"):
            raise method_not_allowed(request.method)
        store.get("pods", request.route.name, request.route.namespace)
        raise ApiError(
            400,
            "BadRequest",
            f"pods/{subresource} is not supported by the simulator (kubesim): it runs no containers, "
            "so there is no stream to connect to",
        )

    return handle
