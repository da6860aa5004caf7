"""The stream protocols' pure parts, case by case: WebSocket frames and handshake (RFC 6455), SPDY/3.1 frames
and header blocks, the exec options and exit Status, port parsing and container defaulting."""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable

import pytest

from kubesim.errors import ApiError
from kubesim.server.streams import command, handler, portforward, spdy, websocket


def client_frame(
    opcode: int, payload: bytes, *, fin: bool = True, masked: bool = True, rsv: int = 0
) -> bytes:
    """A frame as a client sends it (masked), built independently of the server's encoder."""
    mask = b"\x01\x02\x03\x04"
    head = bytes(((0x80 if fin else 0) | rsv | opcode,))
    size = len(payload)
    flag = 0x80 if masked else 0
    if size < 126:
        head += bytes((flag | size,))
    elif size < 65536:
        head += bytes((flag | 126,)) + struct.pack("!H", size)
    else:
        head += bytes((flag | 127,)) + struct.pack("!Q", size)
    if not masked:
        return head + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def reader(data: bytes) -> Callable[[int], bytes]:
    view = memoryview(data)

    def read_exactly(size: int) -> bytes:
        nonlocal view
        if len(view) < size:
            raise EOFError
        taken, view = bytes(view[:size]), view[size:]
        return taken

    return read_exactly


# --- WebSocket -------------------------------------------------------------------------------------------


def test_the_accept_key_is_the_rfcs_example() -> None:
    assert websocket.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@pytest.mark.parametrize(
    ("method", "headers", "problem"),
    [
        ("GET", {"sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="}, None),
        (
            "POST",
            {"sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="},
            "not POST",
        ),
        (
            "GET",
            {"sec-websocket-version": "8", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="},
            "version 13",
        ),
        ("GET", {"sec-websocket-version": "13", "sec-websocket-key": "c2hvcnQ="}, "16 bytes"),
        ("GET", {"sec-websocket-version": "13", "sec-websocket-key": "not base64!"}, "16 bytes"),
        ("GET", {"sec-websocket-version": "13"}, "16 bytes"),
    ],
)
def test_the_handshake_names_what_is_wrong(method: str, headers: dict[str, str], problem: str | None) -> None:
    found = websocket.handshake_error(method, headers)
    assert found is None if problem is None else problem in (found or "")


@pytest.mark.parametrize(
    ("headers", "upgrade"),
    [
        ({"upgrade": "websocket", "connection": "Upgrade"}, True),
        ({"upgrade": "WebSocket", "connection": "keep-alive, upgrade"}, True),
        ({"upgrade": "websocket", "connection": "keep-alive"}, False),
        ({"upgrade": "SPDY/3.1", "connection": "Upgrade"}, False),
        ({}, False),
    ],
)
def test_a_websocket_upgrade_needs_both_headers(headers: dict[str, str], upgrade: bool) -> None:
    assert websocket.is_upgrade(headers) is upgrade


def test_offered_protocols_keep_the_clients_order() -> None:
    headers = {"sec-websocket-protocol": "v5.channel.k8s.io, v4.channel.k8s.io,,"}
    assert websocket.offered_protocols(headers) == ["v5.channel.k8s.io", "v4.channel.k8s.io"]
    assert handler.negotiate(
        ["x", "v4.channel.k8s.io", "v5.channel.k8s.io"], ("v5.channel.k8s.io", "v4.channel.k8s.io")
    ) == ("v4.channel.k8s.io")
    assert handler.negotiate(["x"], ("v5.channel.k8s.io",)) is None


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 200_000])
def test_frames_round_trip_at_every_length_encoding(size: int) -> None:
    payload = os.urandom(size)
    frame = websocket.read_frame(reader(client_frame(websocket.BINARY, payload)), max_payload=1 << 20)
    assert (frame.fin, frame.opcode, frame.payload) == (True, websocket.BINARY, payload)
    server = websocket.encode_frame(websocket.BINARY, payload)
    header = 2 if size < 126 else 4 if size < 65536 else 10
    assert len(server) == header + size
    assert server[1] & 0x80 == 0  # server frames are not masked


@pytest.mark.parametrize(
    ("frame", "message", "code"),
    [
        (client_frame(websocket.BINARY, b"x", masked=False), "must be masked", websocket.PROTOCOL_ERROR),
        (client_frame(websocket.BINARY, b"x", rsv=0x40), "reserved bits", websocket.PROTOCOL_ERROR),
        (client_frame(0x3, b"x"), "unknown opcode", websocket.PROTOCOL_ERROR),
        (client_frame(websocket.PING, b"x" * 126), "control frames", websocket.PROTOCOL_ERROR),
        (client_frame(websocket.PING, b"x", fin=False), "control frames", websocket.PROTOCOL_ERROR),
        (client_frame(websocket.BINARY, b"x" * 1025), "exceeds the bound of 1024", websocket.MESSAGE_TOO_BIG),
    ],
)
def test_frames_rfc_6455_forbids_fail_the_connection(frame: bytes, message: str, code: int) -> None:
    with pytest.raises(websocket.ProtocolError, match=message) as raised:
        websocket.read_frame(reader(frame), max_payload=1024)
    assert raised.value.code == code


def test_an_oversized_frame_is_refused_from_its_header_before_its_payload_is_read() -> None:
    header = client_frame(websocket.BINARY, b"x" * 70_000)[:10]
    with pytest.raises(websocket.ProtocolError, match="70000 bytes"):
        websocket.read_frame(reader(header), max_payload=65_536)


def test_unmask_is_the_xor_with_the_repeated_mask() -> None:
    mask = os.urandom(4)
    data = os.urandom(1001)
    assert websocket.unmask(data, mask) == bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    assert websocket.unmask(b"", mask) == b""


# --- SPDY --------------------------------------------------------------------------------------------------


def test_the_header_dictionary_is_the_spdy3_one() -> None:
    """1423 bytes: 65 length-prefixed words from "options" to "origin", then the status and date text."""
    dictionary = spdy.HEADER_DICTIONARY
    assert len(dictionary) == 1423
    assert dictionary.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert b"\x00\x00\x00\x06origin100101201" in dictionary
    assert dictionary.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_header_blocks_inflate_across_frames_with_one_context() -> None:
    """A client compresses every header block of the connection with one zlib stream, flushed per block."""
    deflate = zlib.compressobj(zdict=spdy.HEADER_DICTIONARY)
    codec = spdy.HeaderCodec()
    for port in ("8080", "9090"):
        block = spdy.build_header_block({"streamtype": "data", "port": port, "requestid": "0"})
        compressed = deflate.compress(block) + deflate.flush(zlib.Z_SYNC_FLUSH)
        assert codec.decode(compressed) == {"streamtype": ["data"], "port": [port], "requestid": ["0"]}


def test_the_server_compresses_what_a_client_inflates_with_the_dictionary() -> None:
    codec, inflate = spdy.HeaderCodec(), zlib.decompressobj(zdict=spdy.HEADER_DICTIONARY)
    for _ in range(2):
        assert spdy.parse_header_block(inflate.decompress(codec.encode({}))) == {}
    assert spdy.parse_header_block(inflate.decompress(codec.encode({"X-A": "b"}))) == {"x-a": ["b"]}


def test_a_header_value_with_nuls_is_several_values() -> None:
    block = struct.pack("!I", 1) + struct.pack("!I", 4) + b"Port" + struct.pack("!I", 3) + b"1\x002"
    assert spdy.parse_header_block(block) == {"port": ["1", "2"]}


@pytest.mark.parametrize(
    "block",
    [
        b"",
        b"\x00\x00\x00\x01",
        struct.pack("!II", 1, 10) + b"abc",
        struct.pack("!II", 1, 1) + b"a" + b"\x00\x00",
    ],
)
def test_a_truncated_header_block_is_a_protocol_error(block: bytes) -> None:
    with pytest.raises(spdy.ProtocolError, match="truncated"):
        spdy.parse_header_block(block)


def test_a_header_block_inflating_past_the_bound_is_refused() -> None:
    """A few hundred bytes of zlib can inflate to megabytes: the bound holds before it is all inflated."""
    deflate = zlib.compressobj(zdict=spdy.HEADER_DICTIONARY)
    bomb = deflate.compress(spdy.build_header_block({"x": "a" * 1_000_000})) + deflate.flush(
        zlib.Z_SYNC_FLUSH
    )
    assert len(bomb) < 2_000
    with pytest.raises(spdy.ProtocolError, match="exceeds the bound of 65536 bytes"):
        spdy.HeaderCodec().decode(bomb)
    with pytest.raises(spdy.ProtocolError, match="does not inflate"):
        spdy.HeaderCodec().decode(b"not zlib at all")


def test_frames_parse_by_their_control_bit() -> None:
    data = spdy.read_frame(reader(spdy.data_frame(7, b"abc", fin=True)))
    assert data == spdy.DataFrame(7, spdy.FLAG_FIN, b"abc")
    ping = spdy.read_frame(reader(spdy.control_frame(spdy.PING, 0, struct.pack("!I", 5))))
    assert ping == spdy.ControlFrame(spdy.PING, 0, struct.pack("!I", 5))
    assert spdy.read_frame(reader(spdy.rst_stream(3, spdy.CANCEL))) == spdy.ControlFrame(
        spdy.RST_STREAM, 0, struct.pack("!II", 3, spdy.CANCEL)
    )
    version_2 = struct.pack("!HHI", 0x8002, spdy.PING, 4) + b"\x00\x00\x00\x01"
    with pytest.raises(spdy.ProtocolError, match="version 2"):
        spdy.read_frame(reader(version_2))


# --- exec options and status -----------------------------------------------------------------------------


def test_exec_options_follow_the_api_servers_conversions() -> None:
    options = command.command_options(
        {
            "stdin": ["True"],
            "stdout": ["1"],
            "stderr": ["false"],
            "command": ["sh", "-c", "x"],
            "container": ["c"],
        },
        exec_=True,
    )
    assert options == command.CommandOptions(True, True, False, False, "c", ("sh", "-c", "x"))
    with_tty = command.command_options({"stdout": ["true"], "stderr": ["true"], "tty": ["true"]}, exec_=False)
    assert (with_tty.tty, with_tty.stderr) == (True, False)  # a terminal has one output stream


@pytest.mark.parametrize(
    ("query", "exec_", "message"),
    [
        ({"command": ["ls"]}, True, "you must specify at least 1 of stdin, stdout, stderr"),
        ({"stdout": ["0"], "command": ["ls"]}, True, "you must specify at least 1 of stdin, stdout, stderr"),
        ({"stdout": ["true"]}, True, "you must specify at least one command for the container"),
    ],
)
def test_exec_options_the_server_refuses(query: dict[str, list[str]], exec_: bool, message: str) -> None:
    with pytest.raises(ApiError, match=message) as raised:
        command.command_options(query, exec_=exec_)
    assert raised.value.code == 400


def test_attach_needs_no_command() -> None:
    assert command.command_options({"stdout": ["true"]}, exec_=False).command == ()


def test_the_exit_status_carries_the_code_as_client_go_reads_it() -> None:
    assert command.exit_status(["true"], 0) == {"metadata": {}, "status": "Success"}
    failed = command.exit_status(["sh", "-c", "exit 3"], 3)
    assert failed["status"] == "Failure"
    assert failed["reason"] == "NonZeroExitCode"
    assert failed["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}
    assert failed["message"] == (
        "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"
    )
    assert command.exit_status(["x"], 300)["reason"] == "InternalError"
    assert "300 is not between 0 and 255" in command.exit_status(["x"], 300)["message"]


@pytest.mark.parametrize(
    ("payload", "sizes"),
    [
        (b'{"Width":80,"Height":24}', [(80, 24)]),
        (b'{"Width":80,"Height":24}\n{"Width":100,"Height":40}\n', [(80, 24), (100, 40)]),
        (b'{"Width":80}', []),
        (b'{"Width":-1,"Height":5}', []),
        (b'{"Width":80,"Height":24}{"Wid', [(80, 24)]),
        (b"[1, 2]", []),
        (b"", []),
    ],
)
def test_terminal_sizes_keep_only_whole_valid_documents(payload: bytes, sizes: list[tuple[int, int]]) -> None:
    assert command.terminal_sizes(payload) == sizes


# --- port-forward and containers ---------------------------------------------------------------------------


def test_ports_repeat_or_come_comma_separated() -> None:
    assert portforward.parse_ports(["8080", "9090,10"]) == [8080, 9090, 10]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], 'query parameter "ports" is required'),
        ([""], 'query parameter "ports" cannot be empty'),
        (["http"], 'unable to parse "http" as a port'),
        (["70000"], 'unable to parse "70000" as a port'),
        (["0"], 'port "0" must be > 0'),
    ],
)
def test_bad_ports_are_refused_in_the_kubelets_words(values: list[str], message: str) -> None:
    with pytest.raises(ApiError, match=message):
        portforward.parse_ports(values)


def pod(*containers: str, init: tuple[str, ...] = ()) -> dict[str, object]:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": c} for c in containers],
            "initContainers": [{"name": c} for c in init],
        },
    }


def test_the_only_container_is_the_default_and_any_named_one_is_checked() -> None:
    assert handler.container_name(pod("main"), "") == "main"
    assert handler.container_name(pod("a", "b", init=("setup",)), "setup") == "setup"
    with pytest.raises(ApiError, match="container nope is not valid for pod p"):
        handler.container_name(pod("main"), "nope")
    with pytest.raises(
        ApiError, match=r"a container name must be specified for pod p, choose one of: \[setup a b\]"
    ):
        handler.container_name(pod("a", "b", init=("setup",)), "")
    with pytest.raises(ApiError, match=r"a container name must be specified for pod p$"):
        handler.container_name(pod(), "")
