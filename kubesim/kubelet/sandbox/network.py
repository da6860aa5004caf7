"""The node's network plan: pod addresses from the pod CIDR, and the `ip -batch` scripts that wire them."""

from __future__ import annotations

import ipaddress

BRIDGE = "kubesim0"
POD_INTERFACE = "eth0"


class PoolExhausted(Exception):
    """Every address of the pod CIDR is taken."""


def parse_pod_cidr(cidr: str) -> ipaddress.IPv4Network:
    """An IPv4 network with room for the gateway and at least one pod."""
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as error:
        raise ValueError(f"pod_cidr: {error}") from None
    if not isinstance(network, ipaddress.IPv4Network):
        raise ValueError(f"pod_cidr: must be an IPv4 network, not {cidr!r}")
    if network.prefixlen > 29:
        raise ValueError(f"pod_cidr: /{network.prefixlen} leaves no room for pods (at most /29)")
    return network


def gateway(network: ipaddress.IPv4Network) -> ipaddress.IPv4Address:
    """The node's own address on the bridge: the network's first host, the pods' default route."""
    return network.network_address + 1


class AddressPool:
    """Pod addresses, handed out in turn after the last one given, as host-local IPAM does.

    Handing out the next address rather than the lowest free one keeps a deleted pod's address (and any
    connection or ARP entry that still names it) unused for as long as the pool allows.
    """

    def __init__(self, network: ipaddress.IPv4Network) -> None:
        self._first = int(network.network_address) + 2  # the network address and the gateway are not pods'
        self._last = int(network.broadcast_address) - 1
        self._next = self._first
        self._used: set[int] = set()

    def allocate(self) -> str:
        size = self._last - self._first + 1
        for step in range(size):
            candidate = self._first + (self._next - self._first + step) % size
            if candidate not in self._used:
                self._used.add(candidate)
                self._next = candidate + 1 if candidate < self._last else self._first
                return str(ipaddress.IPv4Address(candidate))
        raise PoolExhausted(f"all {size} pod addresses are in use")

    def release(self, address: str) -> None:
        self._used.discard(int(ipaddress.IPv4Address(address)))


def bridge_mac(network: ipaddress.IPv4Network) -> str:
    """A fixed, locally administered MAC for the bridge.

    A bridge otherwise takes the lowest MAC of its ports, so adding a pod could change the gateway's MAC
    under every other pod's ARP cache.
    """
    octets = gateway(network).packed
    return "02:42:" + ":".join(f"{octet:02x}" for octet in octets)


def node_script(network: ipaddress.IPv4Network) -> str:
    """`ip -batch` lines run once in the node's network namespace."""
    return (
        "link set lo up\n"
        f"link add {BRIDGE} address {bridge_mac(network)} type bridge\n"
        f"addr add {gateway(network)}/{network.prefixlen} dev {BRIDGE}\n"
        f"link set {BRIDGE} up\n"
    )


def pod_script(network: ipaddress.IPv4Network, address: str, veth: str) -> str:
    """`ip -batch` lines run inside a new pod's network namespace (the node's agent is PID 1 there).

    The veth's node end lands in the node's namespace, named `veth`; the agent then attaches it to the bridge.
    """
    return (
        "link set lo up\n"
        f"link add {POD_INTERFACE} type veth peer name {veth} netns 1\n"
        f"addr add {address}/{network.prefixlen} dev {POD_INTERFACE}\n"
        f"link set {POD_INTERFACE} up\n"
        f"route add default via {gateway(network)}\n"
    )
