"""kubesim's S3 server (kubesim/s3/) driven by the real `minio` client, plus the known answers AWS
publishes for Signature V4's chunked uploads, over both of its stores."""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from minio import Minio
from minio.error import S3Error

from kubesim.s3 import sigv4
from kubesim.s3.server import S3Server, list_page, running
from kubesim.s3.stores import DirectoryStore, MemoryStore, ObjectInfo, StoreError, check_key

BUCKET = "argoml-artifacts"


def client(server: S3Server, secret: str = "test-secret", access: str = "test-access") -> Minio:  # noqa: S107
    return Minio(server.endpoint, access, secret, secure=False)


@pytest.fixture(params=["directory", "memory"])
def server(request, tmp_path):
    store = DirectoryStore(tmp_path / "bucket", BUCKET) if request.param == "directory" else MemoryStore()
    if request.param == "memory":
        store.buckets[BUCKET] = {}
    with running(store) as served:
        yield served


def put(minio: Minio, key: str, body: bytes) -> None:
    minio.put_object(BUCKET, key, io.BytesIO(body), len(body))


def test_an_object_put_with_minio_reads_back_with_its_md5_as_etag(server):
    minio = client(server)
    put(minio, "wf/pod/model.tgz", b"weights")
    assert minio.get_object(BUCKET, "wf/pod/model.tgz").read() == b"weights"
    stat = minio.stat_object(BUCKET, "wf/pod/model.tgz")
    assert stat.size == 7
    assert stat.etag == hashlib.md5(b"weights", usedforsecurity=False).hexdigest()
    assert minio.bucket_exists(BUCKET)
    assert not minio.bucket_exists("other")
    assert [bucket.name for bucket in minio.list_buckets()] == [BUCKET]


def test_a_byte_range_is_served_as_asked(server):
    minio = client(server)
    put(minio, "file", b"0123456789")
    assert minio.get_object(BUCKET, "file", offset=2, length=3).read() == b"234"
    assert minio.get_object(BUCKET, "file", offset=7).read() == b"789"


def test_listing_rolls_keys_up_by_delimiter_and_pages_with_continuation(server):
    minio = client(server)
    for key in ["a/1", "a/2", "a/b/3", "c", "d/4", "e"]:
        put(minio, key, key.encode())
    # (the client yields a page's objects, then its common prefixes)
    top = sorted((o.object_name, o.is_dir) for o in minio.list_objects(BUCKET))
    assert top == [("a/", True), ("c", False), ("d/", True), ("e", False)]
    assert sorted(o.object_name for o in minio.list_objects(BUCKET, prefix="a/")) == ["a/1", "a/2", "a/b/"]
    everything = [o.object_name for o in minio.list_objects(BUCKET, recursive=True)]
    assert everything == ["a/1", "a/2", "a/b/3", "c", "d/4", "e"]
    assert pages(server, "") == [["a/1", "a/2"], ["a/b/3", "c"], ["d/4", "e"]]
    assert pages(server, "&delimiter=%2F", max_keys=1) == [["a/"], ["c"], ["d/"], ["e"]]
    assert [o.object_name for o in minio.list_objects(BUCKET, recursive=True, start_after="c")] == [
        "d/4",
        "e",
    ]
    assert [o.object_name for o in minio.list_objects(BUCKET, use_api_v1=True, recursive=True)] == everything


def test_delete_removes_the_object_and_answers_the_same_when_it_was_missing(server):
    minio = client(server)
    put(minio, "x/y", b"1")
    minio.remove_object(BUCKET, "x/y")
    minio.remove_object(BUCKET, "x/y")
    with pytest.raises(S3Error) as missing:
        minio.stat_object(BUCKET, "x/y")
    assert missing.value.code == "NoSuchKey"
    assert list(minio.list_objects(BUCKET, recursive=True)) == []


def test_a_wrong_secret_or_an_unknown_key_is_refused_and_stores_nothing(server):
    with pytest.raises(S3Error) as wrong:
        put(client(server, secret="not-it"), "k", b"1")
    assert wrong.value.code == "SignatureDoesNotMatch"
    with pytest.raises(S3Error) as unknown:
        client(server, access="someone").stat_object(BUCKET, "k")
    assert unknown.value.code in ("InvalidAccessKeyId", "AccessDenied")  # HEAD answers carry no code
    assert list(client(server).list_objects(BUCKET, recursive=True)) == []


def test_an_anonymous_request_is_refused(server):
    connection = http.client.HTTPConnection(server.endpoint, timeout=10)
    connection.request("GET", f"/{BUCKET}?list-type=2")
    answer = connection.getresponse()
    assert answer.status == 403
    assert b"<Code>AccessDenied</Code>" in answer.read()


def signed(server: S3Server, method: str, path: str, body: bytes = b"", query: str = "") -> tuple[int, bytes]:
    """A request signed as a client would (the minio client refuses some keys before sending them)."""
    now = datetime.now(UTC)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    headers = {"host": server.endpoint, "x-amz-date": amz_date,
               "x-amz-content-sha256": hashlib.sha256(body).hexdigest()}  # fmt: skip
    names = tuple(sorted(headers))
    canonical = sigv4.canonical_request(method, path, query, headers, names, headers["x-amz-content-sha256"])
    key = sigv4.signing_key("test-secret", amz_date[:8], "us-east-1")
    scope = f"{amz_date[:8]}/us-east-1/s3/aws4_request"
    signature = sigv4.request_signature(key, amz_date, scope, canonical)
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential=test-access/{scope},"
                                f"SignedHeaders={';'.join(names)},Signature={signature}")  # fmt: skip
    connection = http.client.HTTPConnection(server.endpoint, timeout=10)
    connection.request(method, path + (f"?{query}" if query else ""), body=body, headers=headers)
    answer = connection.getresponse()
    return answer.status, answer.read()


def pages(server: S3Server, extra: str, max_keys: int = 2) -> list[list[str]]:
    """Each page of a ListObjectsV2 (`max-keys` a page), following NextContinuationToken to the end."""
    import xml.etree.ElementTree as ElementTree
    from urllib.parse import quote

    found, token = [], ""
    while True:
        query = f"list-type=2&max-keys={max_keys}{extra}" + (
            f"&continuation-token={quote(token)}" if token else ""
        )
        status, body = signed(server, "GET", f"/{BUCKET}", query=query)
        assert status == 200, body
        root = ElementTree.fromstring(body)  # noqa: S314 - our own server's answer
        ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
        found.append(
            [e.text for e in root.iterfind(".//s3:Key", ns)]
            + [e.text for e in root.iterfind(".//s3:CommonPrefixes/s3:Prefix", ns)]
        )
        token = root.findtext("s3:NextContinuationToken", "", ns)
        if root.findtext("s3:IsTruncated", "", ns) != "true":
            return found


@pytest.mark.parametrize("key", ["a/../b", "./a", "a//b", ".kubesim-upload-x", "a%01b", "a/%2E%2E/b"])
def test_a_key_that_is_not_a_plain_path_is_refused(server, key):
    status, body = signed(server, "PUT", f"/{BUCKET}/{key}", b"1")
    assert status == 400, body
    assert b"<Code>InvalidArgument</Code>" in body
    assert list(client(server).list_objects(BUCKET, recursive=True)) == []


def test_a_signed_get_of_a_missing_key_says_no_such_key(server):
    status, body = signed(server, "GET", f"/{BUCKET}/nothing/here")
    assert status == 404
    assert b"<Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>" in body


def test_check_key_names_what_is_wrong():
    assert check_key("wf/pod/tensorboard.tgz") == "wf/pod/tensorboard.tgz"
    with pytest.raises(StoreError, match="at most 1024 bytes"):
        check_key("k" * 1025)
    with pytest.raises(StoreError, match="empty"):
        check_key("")


def test_the_directory_store_serves_the_files_under_its_root_and_never_a_symlink(tmp_path):
    root = tmp_path / "artifacts"
    (root / "wf" / "pod").mkdir(parents=True)
    (root / "wf" / "pod" / "tensorboard.tgz").write_bytes(b"archive")
    secret = tmp_path / "secret"
    secret.write_text("host file")
    (root / "wf" / "link").symlink_to(secret)
    (root / "escape").symlink_to(tmp_path)
    with running(DirectoryStore(root, BUCKET)) as served:
        minio = client(served)
        assert [o.object_name for o in minio.list_objects(BUCKET, recursive=True)] == [
            "wf/pod/tensorboard.tgz"
        ]
        for key in ["wf/link", "escape/secret"]:
            with pytest.raises(S3Error) as missing:
                minio.get_object(BUCKET, key)
            assert missing.value.code == "NoSuchKey"
        with pytest.raises(S3Error):
            put(minio, "escape/planted", b"1")
    assert not (tmp_path / "planted").exists()


def test_the_directory_store_removes_directories_its_last_object_leaves(tmp_path):
    store = DirectoryStore(tmp_path / "bucket", BUCKET)
    store.put(BUCKET, "a/b/c", b"1")
    store.delete(BUCKET, "a/b/c")
    assert list((tmp_path / "bucket").iterdir()) == []


def test_a_key_under_an_object_or_over_a_prefix_is_refused_by_the_directory_store(tmp_path):
    with running(DirectoryStore(tmp_path / "bucket", BUCKET)) as served:
        minio = client(served)
        put(minio, "a", b"1")
        with pytest.raises(S3Error) as under:
            put(minio, "a/b", b"2")
        assert under.value.code == "XMinioParentIsObject"
        put(minio, "p/q", b"3")
        with pytest.raises(S3Error) as over:
            put(minio, "p", b"4")
        assert over.value.code == "XMinioObjectExistsAsDirectory"
        assert minio.get_object(BUCKET, "p/q").read() == b"3"


def test_an_object_over_the_size_bound_is_refused_before_it_is_read(tmp_path):
    store = MemoryStore(buckets={BUCKET: {}})
    server = S3Server(store, "test-access", "test-secret", max_object_bytes=10)
    import threading

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(S3Error) as refused:
            put(client(server), "big", b"x" * 11)
        assert refused.value.code == "EntityTooLarge"
        put(client(server), "small", b"x" * 10)
    finally:
        server.shutdown()
        server.server_close()
    assert list(store.buckets[BUCKET]) == ["small"]


# --- AWS's published example of a chunked upload ("Signature Calculations for the Authorization Header:
# Transferring Payload in Multiple Chunks"): 66560 bytes of "a" as a 64 KiB chunk, a 1 KiB chunk, the end.
AWS_ACCESS, AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
AWS_CHUNKS = [
    (65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"),
    (1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"),
    (0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"),
]


def aws_example(chunks: list[tuple[int, str]]) -> tuple[dict[str, str], bytes]:
    body = b"".join(b"%x;chunk-signature=%s\r\n%s\r\n" % (n, s.encode(), b"a" * n) for n, s in chunks)
    signed = (
        "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
        "x-amz-storage-class"
    )
    headers = {
        "Host": "s3.amazonaws.com",
        "x-amz-date": "20130524T000000Z",
        "x-amz-storage-class": "REDUCED_REDUNDANCY",
        "Authorization": f"AWS4-HMAC-SHA256 Credential={AWS_ACCESS}/20130524/us-east-1/s3/aws4_request,"
        f"SignedHeaders={signed},Signature={AWS_SEED}",
        "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": "66560",
        "Content-Length": str(len(body)),
    }
    return headers, body


def send_aws_example(chunks: list[tuple[int, str]]) -> tuple[int, bytes, MemoryStore]:
    store = MemoryStore(buckets={"examplebucket": {}})
    server = S3Server(store, AWS_ACCESS, AWS_SECRET, clock=lambda: datetime(2013, 5, 24, tzinfo=UTC))
    import threading

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        headers, body = aws_example(chunks)
        connection = http.client.HTTPConnection(server.endpoint, timeout=10)
        connection.putrequest("PUT", "/examplebucket/chunkObject.txt", skip_host=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, answer.read(), store
    finally:
        server.shutdown()
        server.server_close()


def test_awss_published_chunked_upload_verifies_and_stores_the_decoded_body():
    assert len(aws_example(AWS_CHUNKS)[1]) == 66824  # the Content-Length AWS's example gives
    status, body, store = send_aws_example(AWS_CHUNKS)
    assert status == 200, body
    assert store.buckets["examplebucket"]["chunkObject.txt"] == b"a" * 66560


def test_a_chunk_with_a_wrong_signature_stores_nothing():
    tampered = [AWS_CHUNKS[0], (1024, "0" * 64), AWS_CHUNKS[2]]
    status, body, store = send_aws_example(tampered)
    assert status == 403
    assert b"SignatureDoesNotMatch" in body
    assert store.buckets["examplebucket"] == {}


def test_the_chunk_signature_chain_matches_awss_published_values():
    key = sigv4.signing_key(AWS_SECRET, "20130524", "us-east-1")
    scope = "20130524/us-east-1/s3/aws4_request"
    previous = AWS_SEED
    for size, expected in AWS_CHUNKS:
        found = sigv4.chunk_signature(
            key, "20130524T000000Z", scope, previous, hashlib.sha256(b"a" * size).hexdigest()
        )
        assert found == expected
        previous = found


def test_a_request_dated_too_far_from_the_servers_clock_is_refused():
    now = datetime(2013, 5, 24, tzinfo=UTC)
    credential = sigv4.parse_authorization(
        "AWS4-HMAC-SHA256 Credential=a/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;x-amz-date,Signature=x"
    )
    with pytest.raises(sigv4.SignatureError) as skewed:
        sigv4.verify(credential, "s", "GET", "/", "", {"x-amz-date": "20130524T010000Z"}, now, "us-east-1")
    assert skewed.value.code == "RequestTimeTooSkewed"


def info(key: str) -> ObjectInfo:
    return ObjectInfo(key, 1, '"x"', 0.0)


def test_list_page_counts_a_common_prefix_once_and_resumes_after_it():
    objects = [info(k) for k in ["a/1", "a/2", "b", "c/1", "c/2", "d"]]
    first = list_page(objects, "", "/", "", 2)
    assert (first.prefixes, [o.key for o in first.objects], first.truncated, first.last) == (
        ["a/"],
        ["b"],
        True,
        "b",
    )
    second = list_page(objects, "", "/", first.last, 2)
    assert (second.prefixes, [o.key for o in second.objects], second.truncated) == (["c/"], ["d"], False)
    resumed = list_page(objects, "", "/", "a/", 10)
    assert resumed.prefixes == ["c/"]
    assert [o.key for o in resumed.objects] == ["b", "d"]


def test_the_command_serves_a_directory_on_loopback_with_the_credentials_file(tmp_path):
    credentials = tmp_path / "credentials"
    credentials.write_text("accesskey: dev-access\nsecretkey: dev-secret\n")
    address = tmp_path / "address"
    (tmp_path / "bucket" / "wf").mkdir(parents=True)
    (tmp_path / "bucket" / "wf" / "out.txt").write_bytes(b"from argoexec")
    process = subprocess.Popen(
        [sys.executable, "-m", "kubesim.s3", "--directory", str(tmp_path / "bucket"), "--bucket", BUCKET,
         "--credentials", str(credentials), "--address-file", str(address)],
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not address.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        endpoint = address.read_text()
        assert endpoint.startswith("127.0.0.1:")
        minio = Minio(endpoint, "dev-access", "dev-secret", secure=False)
        assert minio.get_object(BUCKET, "wf/out.txt").read() == b"from argoexec"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_the_command_refuses_to_listen_beyond_loopback(tmp_path):
    credentials = tmp_path / "credentials"
    credentials.write_text("accesskey: a\nsecretkey: b\n")
    result = subprocess.run(
        [sys.executable, "-m", "kubesim.s3", "--directory", str(tmp_path), "--bucket", BUCKET,
         "--credentials", str(credentials), "--listen", "0.0.0.0:0"],
        capture_output=True, text=True, timeout=30, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert result.returncode != 0
    assert "loopback" in result.stderr
    assert os.environ.get("NO_SUCH") is None
