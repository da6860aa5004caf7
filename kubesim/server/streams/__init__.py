"""The streaming pod subresources (exec, attach, portforward) on the API server side: WebSocket and SPDY
upgrades, the channel and stream protocols kubectl and the Python client speak, and the sessions between a
client and a `StreamBackend` (the kubelet that runs containers). See docs/kubesim.md "Streams"."""
