"""The bounds every exec, attach and port-forward stream lives within, and where each value comes from.

They are the simulator's, not a tenant's: `limits/` holds what Argo-ML promises its users; these keep one
misbehaving client of the dev cluster from holding memory, threads or processes without end.
"""

#: A stream on which nothing moved either way for this long is closed (and its exec'd process killed).
#: Upstream: the kubelet's --streaming-connection-idle-timeout and the API server's translator, both 4 h.
#: kubectl pings every 5 s (exec) or 10 s (port-forward), so a live kubectl never reaches it.
IDLE_TIMEOUT = 4 * 60 * 60.0

#: The largest WebSocket message accepted; a bigger one closes the stream with 1009 (message too big).
#: Upstream's WebSocket server (golang.org/x/net/websocket) allows 32 MiB. kubectl sends at most 33 KiB
#: per message; the Python client up to 1 MiB per port-forward message and whatever one write holds on exec.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024

#: The largest SPDY header block once inflated (the compressed frame is at most 16 MiB by the format).
#: kubectl's stream headers are about 100 bytes; the bound stops a small frame inflating to gigabytes.
MAX_HEADER_BLOCK_BYTES = 64 * 1024

#: What a client sent on one SPDY stream that the server has not passed on yet; past it the connection is
#: not read until the stream's consumer catches up (back-pressure through TCP, as the kubelet's streams).
STREAM_BUFFER_BYTES = 1024 * 1024

#: Forwarded connections open at once on one port-forward session (two SPDY streams each); a client that
#: opens more gets its new streams refused (RST_STREAM REFUSED_STREAM).
MAX_FORWARDED_CONNECTIONS = 256

#: How long a client has to open every stream of a session (exec over SPDY) or both streams of a forwarded
#: connection; upstream's --stream-creation-timeout default. The client gets "timed out waiting for streams".
STREAM_CREATION_TIMEOUT = 30.0

#: How long a terminal exec or attach over WebSocket waits for the client's first window size before it
#: starts the process without one (kubectl sends it right behind the handshake, so a shell starts at the
#: size of the user's terminal instead of 0x0).
FIRST_SIZE_WAIT = 1.0

#: After the exit status is sent, how long the server waits for the client to close the connection before
#: closing it itself; upstream's translator waits 15 min so that a slow reader still gets every byte.
FINISH_TIMEOUT = 15 * 60.0

#: Bytes read from a process or a forwarded socket per frame sent.
CHUNK_BYTES = 32 * 1024
