"""The sandbox's pure parts: the address plan, cgroup discovery, the one-line diagnoses, launch checks, and
the wire."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading

import pytest

from kubesim.kubelet.sandbox import ContainerLaunch, Mount, SandboxUnavailable, cgroup, linux, network
from kubesim.kubelet.sandbox.host import diagnose, find_tool
from kubesim.kubelet.sandbox.protocol import MAX_MESSAGE_BYTES, Channel, ProtocolError

# Addresses -------------------------------------------------------------------------------------------------


def test_pod_addresses_skip_the_network_and_the_gateway_and_go_round_in_turn() -> None:
    pool = network.AddressPool(network.parse_pod_cidr("10.244.0.0/29"))  # hosts .1 to .6; .1 is the node's

    given = [pool.allocate() for _ in range(5)]
    assert given == ["10.244.0.2", "10.244.0.3", "10.244.0.4", "10.244.0.5", "10.244.0.6"]
    with pytest.raises(network.PoolExhausted, match="all 5 pod addresses are in use"):
        pool.allocate()

    pool.release("10.244.0.4")
    pool.release("10.244.0.2")
    assert pool.allocate() == "10.244.0.2"  # after the last one given (.6), the pool wraps round
    assert pool.allocate() == "10.244.0.4"


def test_a_released_address_waits_its_turn() -> None:
    pool = network.AddressPool(network.parse_pod_cidr("10.244.0.0/16"))
    first = pool.allocate()
    pool.release(first)

    assert pool.allocate() == "10.244.0.3"


@pytest.mark.parametrize(
    ("cidr", "message"),
    [
        ("10.244.0.1/16", "pod_cidr: 10.244.0.1/16 has host bits set"),
        ("fd00::/64", "pod_cidr: must be an IPv4 network, not 'fd00::/64'"),
        ("10.244.0.0/30", "pod_cidr: /30 leaves no room for pods"),
        ("a network", "pod_cidr: 'a network' does not appear to be an IPv4 or IPv6 network"),
    ],
)
def test_a_pod_cidr_must_leave_room_for_pods(cidr: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        network.parse_pod_cidr(cidr)


def test_the_scripts_wire_the_bridge_and_a_pod_to_it() -> None:
    pods = ipaddress.IPv4Network("10.244.0.0/16")

    assert network.node_script(pods) == (
        "link set lo up\n"
        "link add kubesim0 address 02:42:0a:f4:00:01 type bridge\n"
        "addr add 10.244.0.1/16 dev kubesim0\n"
        "link set kubesim0 up\n"
    )
    assert network.pod_script(pods, "10.244.3.7", "veth9") == (
        "link set lo up\n"
        "link add eth0 type veth peer name veth9 netns 1\n"
        "addr add 10.244.3.7/16 dev eth0\n"
        "link set eth0 up\n"
        "route add default via 10.244.0.1\n"
    )


# Memory cgroups ---------------------------------------------------------------------------------------------

HYBRID_MOUNTS = """\
35 26 0:30 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
40 35 0:35 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
41 35 0:36 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
"""


def test_memory_cgroups_are_found_beneath_our_own_v1_before_v2() -> None:
    ours = "4:memory:/jobs/42\n3:cpu,cpuacct:/jobs/42\n0::/user.slice/session-1.scope\n"

    assert cgroup.candidates(HYBRID_MOUNTS, ours) == [
        (1, "/sys/fs/cgroup/memory/jobs/42"),
        (2, "/sys/fs/cgroup/unified/user.slice/session-1.scope"),
    ]


def test_a_unified_hierarchy_offers_v2_only() -> None:
    mounts = "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"

    assert cgroup.candidates(mounts, "0::/\n") == [(2, "/sys/fs/cgroup")]


def test_a_mount_that_shows_part_of_the_hierarchy_is_followed_or_skipped() -> None:
    inside = "40 35 0:35 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"

    assert cgroup.candidates(inside, "4:memory:/docker/abc/nested\n") == [(1, "/sys/fs/cgroup/memory/nested")]
    assert cgroup.candidates(inside, "4:memory:/elsewhere\n") == []


# Diagnoses -------------------------------------------------------------------------------------------------

QUIET = {
    "user.max_user_namespaces": "15000",
    "kernel.unprivileged_userns_clone": None,
    "kernel.apparmor_restrict_unprivileged_userns": None,
}


@pytest.mark.parametrize(
    ("sysctls", "root", "line"),
    [
        (
            {**QUIET, "user.max_user_namespaces": "0"},
            True,
            "the process sandbox needs user namespaces, and user.max_user_namespaces is 0: "
            "enable them with `sysctl -w user.max_user_namespaces=15000`",
        ),
        (
            {**QUIET, "kernel.unprivileged_userns_clone": "0"},
            False,
            "the process sandbox needs unprivileged user namespaces: "
            "enable them with `sysctl -w kernel.unprivileged_userns_clone=1`",
        ),
        (
            {**QUIET, "kernel.apparmor_restrict_unprivileged_userns": "1"},
            False,
            "the process sandbox needs unprivileged user namespaces, which AppArmor restricts: "
            "allow them with `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`",
        ),
        # root is exempt from both restrictions on unprivileged users: the cause is elsewhere
        (
            {**QUIET, "kernel.unprivileged_userns_clone": "0"},
            True,
            "the process sandbox cannot start: unshare: unshare failed: Operation not permitted",
        ),
        (QUIET, False, "the process sandbox cannot start: unshare: unshare failed: Operation not permitted"),
    ],
)
def test_a_sandbox_that_cannot_start_says_which_setting_to_change(
    sysctls: dict[str, str | None], root: bool, line: str
) -> None:
    said = "some noise\nunshare: unshare failed: Operation not permitted\n\n"

    assert diagnose(said, sysctls, root=root) == line


def test_silence_is_diagnosed_too() -> None:
    assert (
        diagnose("", QUIET, root=False)
        == "the process sandbox cannot start: the node agent ended without a word"
    )


def test_a_missing_tool_names_its_package() -> None:
    with pytest.raises(SandboxUnavailable) as raised:
        find_tool("kubesim-no-such-tool", "iproute2")

    assert str(raised.value) == (
        "the process sandbox needs `kubesim-no-such-tool` from iproute2: "
        "install it (apt-get install iproute2)"
    )


# What a container may be asked to be -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"argv": ()}, "argv: must be a non-empty sequence of strings"),
        ({"argv": ("",)}, r"argv\[0\]: must name an executable"),
        ({"argv": ("ls", 3)}, r"argv\[1\]: must be a string without NUL characters"),
        ({"env": {"A=B": "x"}}, "env: 'A=B' is not a variable name"),
        ({"env": {"A": 1}}, r"env\[A\]: must be a string without NUL characters"),
        ({"working_dir": "relative"}, "working_dir: must be an absolute path, not 'relative'"),
        ({"working_dir": "/a/../b"}, r"working_dir: must not contain '\.\.'"),
        ({"masked_paths": ("/ok", "nope")}, r"masked_paths\[1\]: must be an absolute path"),
        ({"mounts": ("/data",)}, r"mounts\[0\]: must be a Mount, not str"),
        ({"memory_limit_bytes": 0}, "memory_limit_bytes: must be a positive integer or None, not 0"),
        ({"memory_limit_bytes": True}, "memory_limit_bytes: must be a positive integer or None, not True"),
    ],
)
def test_a_launch_names_the_field_that_is_wrong(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ContainerLaunch(**{"argv": ("true",), "env": {}, **fields})  # type: ignore[arg-type]


def test_a_mount_names_the_path_that_is_wrong() -> None:
    with pytest.raises(ValueError, match="host_path: must be an absolute path, not 'data'"):
        Mount("data", "/data")
    with pytest.raises(ValueError, match="container_path: must not contain a NUL character"):
        Mount("/data", "/da\0ta")


# The wire --------------------------------------------------------------------------------------------------


def test_a_message_travels_with_its_descriptors_which_arrive_close_on_exec() -> None:
    ours, theirs = socket.socketpair()
    read_end, write_end = os.pipe()
    sender, receiver = Channel(ours), Channel(theirs)

    def send() -> None:  # more than a socket buffer holds: the receiver reads it in parts
        sender.send({"op": "hello", "env": {"A": "é" * 100_000}}, [write_end])
        sender.send({"op": "second"})

    sending = threading.Thread(target=send)
    sending.start()
    message, fds = receiver.receive()
    second, none = receiver.receive()
    sending.join()

    assert (message["op"], len(message["env"]["A"]), second, none) == ("hello", 100_000, {"op": "second"}, [])
    assert len(fds) == 1
    assert not os.get_inheritable(fds[0])
    os.write(fds[0], b"through the passed descriptor")
    assert os.read(read_end, 100) == b"through the passed descriptor"
    for fd in (*fds, read_end, write_end):
        os.close(fd)
    sender.close()
    receiver.close()


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"not json\n", "not JSON"),
        (b"[1, 2]\n", "a message must be a JSON object"),
        (b'{"op": "cut sho', "the connection closed before a whole message"),
    ],
)
def test_what_is_not_a_message_is_refused(raw: bytes, error: str) -> None:
    ours, theirs = socket.socketpair()
    ours.sendall(raw)
    ours.close()

    with pytest.raises(ProtocolError, match=error):
        Channel(theirs).receive()
    theirs.close()


def test_a_message_without_end_is_refused_past_its_bound() -> None:
    ours, theirs = socket.socketpair()

    def send_forever() -> None:
        with contextlib.suppress(OSError):  # the receiver gives up and closes
            ours.sendall(b"x" * (MAX_MESSAGE_BYTES + (1 << 20)))

    sender = threading.Thread(target=send_forever)
    sender.start()
    with pytest.raises(ProtocolError, match=f"a message longer than {MAX_MESSAGE_BYTES} bytes"):
        Channel(theirs).receive()
    theirs.close()
    sender.join()
    ours.close()


def test_exit_statuses_read_as_a_runtime_reports_them() -> None:
    assert linux.exit_code(3 << 8) == 3  # exited with 3
    assert linux.exit_code(9) == 137  # killed by SIGKILL
    assert linux.exit_code(15) == 143
