"""The HTTP face of the simulator: routing, content negotiation, discovery, the verbs and the server."""
