"""Unpacking archives from a bucket: what Argo writes comes out whole; anything that could write outside the
target, or is too big, is refused with the entry named."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from tensorboard.unpack import (
    Limits,
    UnsafeArchive,
    check_member,
    extract,
    extract_zip,
    member_path,
    single_root,
)


def archive(*members: tuple[tarfile.TarInfo, bytes | None], gzip: bool = True) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gzip else "w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    buffer.seek(0)
    return buffer


def file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def entry(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


@pytest.mark.parametrize("gzip", [True, False])
def test_tar_and_tgz_unpack_files_and_folders(tmp_path, gzip):
    source = archive(entry("logs", tarfile.DIRTYPE), file("logs/events.1", b"abc"), file("./logs/sub/e2"),
                     gzip=gzip)  # fmt: skip
    assert extract(source, tmp_path / "out") == 2
    assert (tmp_path / "out/logs/events.1").read_bytes() == b"abc"
    assert (tmp_path / "out/logs/sub/e2").exists()
    assert single_root(tmp_path / "out") == tmp_path / "out/logs"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("/etc/passwd", "absolute"),
        ("../escape", "leaving the target"),
        ("logs/../../escape", "leaving the target"),
        ("logs\\..\\x", "leaving the target"),
        ("C:/windows", "absolute"),
    ],
)
def test_names_leaving_the_target_are_refused(tmp_path, name, problem):
    with pytest.raises(UnsafeArchive, match=problem):
        extract(archive(file(name)), tmp_path / "out")
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        (entry("logs/link", tarfile.SYMTYPE, "/etc/passwd"), "links are refused"),
        (entry("logs/inside", tarfile.SYMTYPE, "events.1"), "links are refused"),
        (entry("logs/hard", tarfile.LNKTYPE, "logs/events.1"), "links are refused"),
        (entry("logs/dev", tarfile.CHRTYPE), "only regular files and folders"),
        (entry("logs/fifo", tarfile.FIFOTYPE), "only regular files and folders"),
    ],
)
def test_links_devices_and_fifos_are_refused(tmp_path, member, problem):
    with pytest.raises(UnsafeArchive, match=problem):
        extract(archive(file("logs/events.1"), member), tmp_path / "out")


def test_entry_count_and_size_are_bounded(tmp_path):
    many = archive(*(file(f"logs/{index}") for index in range(4)))
    with pytest.raises(UnsafeArchive, match="more than 3 entries"):
        extract(many, tmp_path / "a", Limits(max_entries=3))
    big = archive(file("logs/a", b"1" * 60), file("logs/b", b"2" * 60))
    with pytest.raises(UnsafeArchive, match="more than 100 bytes"):
        extract(big, tmp_path / "b", Limits(max_bytes=100))


def test_what_is_not_a_tar_archive_raises_tar_error(tmp_path):
    with pytest.raises(tarfile.TarError):
        extract(io.BytesIO(b"just some bytes, not an archive" * 30), tmp_path / "out")


def test_member_path_keeps_relative_names_and_drops_dot():
    assert member_path("./logs/a") == "logs/a"
    assert member_path(".") == ""
    info = tarfile.TarInfo(".")
    info.type = tarfile.DIRTYPE
    assert check_member(info) is None


def test_a_single_file_or_several_roots_stay_in_place(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "one/events").write_text("x")
    assert single_root(tmp_path / "one") == tmp_path / "one"
    (tmp_path / "two/a").mkdir(parents=True)
    (tmp_path / "two/b").mkdir()
    assert single_root(tmp_path / "two") == tmp_path / "two"


def test_nothing_is_written_outside_even_through_a_folder_named_like_a_link(tmp_path: Path):
    source = archive(entry("logs", tarfile.DIRTYPE), file("logs/ok"))
    extract(source, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "out", "out/logs", "out/logs/ok"
    ]  # fmt: skip


# -- zip ---------------------------------------------------------------------------------------------------
def zipped(*members: tuple[str, bytes, int]) -> io.BytesIO:
    """A zip of (name, data, unix mode) entries; mode 0 leaves the attributes empty, as Windows tools do."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    buffer.seek(0)
    return buffer


def test_zip_unpacks_files_and_folders(tmp_path):
    source = zipped(("logs/", b"", stat.S_IFDIR | 0o755), ("logs/events.1", b"abc", stat.S_IFREG | 0o644),
                    ("logs/sub/e2", b"x", 0))  # fmt: skip
    assert extract_zip(source, tmp_path / "out") == 2
    assert (tmp_path / "out/logs/events.1").read_bytes() == b"abc"
    assert (tmp_path / "out/logs/sub/e2").exists()
    assert single_root(tmp_path / "out") == tmp_path / "out/logs"


@pytest.mark.parametrize(
    ("name", "problem"),
    [("/etc/passwd", "absolute"), ("../escape", "leaving the target"),
     ("logs/../../escape", "leaving the target"), ("logs\\..\\x", "leaving the target"),
     ("C:/windows", "absolute")],
)  # fmt: skip
def test_zip_names_leaving_the_target_are_refused(tmp_path, name, problem):
    with pytest.raises(UnsafeArchive, match=problem):
        extract_zip(zipped((name, b"x", 0)), tmp_path / "out")
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize(
    ("mode", "problem"),
    [(stat.S_IFLNK | 0o777, "links are refused"), (stat.S_IFCHR, "only regular files and folders"),
     (stat.S_IFIFO, "only regular files and folders")],
)  # fmt: skip
def test_zip_links_devices_and_fifos_are_refused(tmp_path, mode, problem):
    with pytest.raises(UnsafeArchive, match=problem):
        extract_zip(zipped(("logs/ok", b"x", 0), ("logs/link", b"/etc/passwd", mode)), tmp_path / "out")


def test_zip_encrypted_entries_are_refused(tmp_path):
    source = zipped(("logs/secret", b"x", 0))
    raw = bytearray(source.getvalue())
    # Set the "encrypted" flag bit in the local and central headers, as an encrypting tool would.
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = raw.index(signature) + offset
        raw[at] |= 0x1
    with pytest.raises(UnsafeArchive, match="encrypted entries are refused"):
        extract_zip(io.BytesIO(bytes(raw)), tmp_path / "out")


def test_zip_entry_count_and_size_are_bounded(tmp_path):
    many = zipped(*((f"logs/{index}", b"x", 0) for index in range(4)))
    with pytest.raises(UnsafeArchive, match="more than 3 entries"):
        extract_zip(many, tmp_path / "a", Limits(max_entries=3))
    big = zipped(("logs/a", b"1" * 60, 0), ("logs/b", b"2" * 60, 0))
    with pytest.raises(UnsafeArchive, match="more than 100 bytes"):
        extract_zip(big, tmp_path / "b", Limits(max_bytes=100))


def test_what_is_not_a_zip_archive_raises_bad_zip_file(tmp_path):
    with pytest.raises(zipfile.BadZipFile):
        extract_zip(io.BytesIO(b"just some bytes, not an archive" * 30), tmp_path / "out")
