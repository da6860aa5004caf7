"""`python -m kubesim.s3 --directory DIR --bucket NAME --credentials FILE [--listen 127.0.0.1:0]
[--address-file FILE]`: serve DIR as one S3 bucket on loopback until SIGINT/SIGTERM.

The credentials file holds `accesskey: …` and `secretkey: …` lines (the dev stack writes it, readable by its
owner only), so the secret never appears in a process listing. The bound address is written to
`--address-file` once the server listens (port 0 picks a free one).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from kubesim.s3.server import DEFAULT_MAX_OBJECT_BYTES, S3Server
from kubesim.s3.stores import DirectoryStore


def read_credentials(path: Path) -> tuple[str, str]:
    """(access key, secret key) from a `name: value` file; SystemExit naming what is missing."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(":")
        found[name.strip()] = value.strip()
    if not found.get("accesskey") or not found.get("secretkey"):
        raise SystemExit(f"{path}: needs `accesskey: …` and `secretkey: …` lines")
    return found["accesskey"], found["secretkey"]


def _listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    try:
        if not ipaddress.ip_address(host).is_loopback:
            raise SystemExit(f"--listen {text}: serve on a loopback address only (127.0.0.1)")
        return host, int(port)
    except ValueError:
        raise SystemExit(f"--listen {text!r}: expected HOST:PORT with a loopback IP") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubesim.s3", description=__doc__.split("\n\n")[0])
    parser.add_argument("--directory", type=Path, required=True, help="the bucket's files")
    parser.add_argument("--bucket", required=True, help="the bucket's name")
    parser.add_argument("--credentials", type=Path, required=True, help="accesskey/secretkey file")
    parser.add_argument("--listen", default="127.0.0.1:0", help="loopback HOST:PORT (port 0: a free one)")
    parser.add_argument("--address-file", type=Path, help="write HOST:PORT here once listening")
    parser.add_argument("--max-object-bytes", type=int, default=DEFAULT_MAX_OBJECT_BYTES)
    arguments = parser.parse_args(argv)
    access_key, secret_key = read_credentials(arguments.credentials)
    server = S3Server(
        DirectoryStore(arguments.directory, arguments.bucket),
        access_key,
        secret_key,
        address=_listen(arguments.listen),
        max_object_bytes=arguments.max_object_bytes,
    )
    if arguments.address_file is not None:
        temporary = arguments.address_file.with_suffix(".tmp")
        temporary.write_text(server.endpoint)
        os.replace(temporary, arguments.address_file)

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
