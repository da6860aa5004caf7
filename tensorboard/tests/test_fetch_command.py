"""`manage.py fetch_tensorboard_logs`: a plan it cannot read stops it naming the field; one pass fetches and
leaves the report where the kubelet reads the termination message."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tensorboard.fetchplan import (
    ACCESS_KEY_ENV,
    PLAN_ENV,
    SECRET_KEY_ENV,
    Plan,
    RunSource,
    S3Access,
    encode_plan,
)

from .eventlogs import tgz_of, write_event_logs
from .s3server import running_s3


def test_a_missing_or_wrong_plan_stops_the_command_naming_the_field(monkeypatch, tmp_path):
    monkeypatch.delenv(PLAN_ENV, raising=False)
    with pytest.raises(CommandError, match="ARGOML_FETCH_PLAN: not JSON"):
        call_command("fetch_tensorboard_logs", f"--dest={tmp_path}")
    monkeypatch.setenv(
        PLAN_ENV, json.dumps({"runs": [{"run": "a", "url": "ftp://x", "archive": "tar", "folder": "000"}]})
    )
    with pytest.raises(CommandError, match=r"runs\[0\].url: 'ftp://x' must start with"):
        call_command("fetch_tensorboard_logs", f"--dest={tmp_path}")


def test_one_pass_fetches_prints_a_summary_and_writes_the_report(monkeypatch, tmp_path):
    logs = tmp_path / "source" / "logs"
    write_event_logs([logs], steps=2)
    with running_s3("ak", "sk") as server:
        server.store.buckets["ml-logs"] = {"a/tb.tgz": tgz_of(logs)}
        plan = Plan(
            (
                RunSource("a", "s3://ml-logs/a/tb.tgz", "tar", "000"),
                RunSource("b", "s3://ml-logs/b/tb.tgz", "tar", "001"),
            ),
            S3Access(server.endpoint, False, "us-east-1", ACCESS_KEY_ENV, SECRET_KEY_ENV),
        )
        monkeypatch.setenv(PLAN_ENV, encode_plan(plan))
        monkeypatch.setenv(ACCESS_KEY_ENV, "ak")
        monkeypatch.setenv(SECRET_KEY_ENV, "sk")
        out, err = io.StringIO(), io.StringIO()
        report = tmp_path / "termination-log"
        call_command(
            "fetch_tensorboard_logs",
            f"--dest={tmp_path / 'dest'}",
            f"--report={report}",
            stdout=out,
            stderr=err,
        )
    assert out.getvalue().startswith("2 runs: 1 fetched, 0 unchanged, 1 failed in ")
    assert "b (s3://ml-logs/b/tb.tgz): NoSuchKey" in err.getvalue()
    assert [item["run"] for item in json.loads(report.read_text())["failed"]] == ["b"]
    assert list((tmp_path / "dest" / "000").glob("events.out.tfevents.*"))


class Stop(Exception):
    """Raised by the test's sleep to leave the sync loop after a number of passes."""


def test_every_n_seconds_syncs_again_and_fetches_only_what_changed(monkeypatch, tmp_path):
    logs = tmp_path / "source" / "logs"
    write_event_logs([logs], steps=2)
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 1:
            server.store.put("ml-logs", "a/tb.tgz", tgz_of(logs, root_name="changed"))
        if len(sleeps) == 3:
            raise Stop

    monkeypatch.setattr("tensorboard.management.commands.fetch_tensorboard_logs.time.sleep", sleep)
    with running_s3("ak", "sk") as server:
        server.store.buckets["ml-logs"] = {"a/tb.tgz": tgz_of(logs)}
        plan = Plan(
            (RunSource("a", "s3://ml-logs/a/tb.tgz", "tar", "000"),),
            S3Access(server.endpoint, False, "us-east-1", ACCESS_KEY_ENV, SECRET_KEY_ENV),
        )
        monkeypatch.setenv(PLAN_ENV, encode_plan(plan))
        monkeypatch.setenv(ACCESS_KEY_ENV, "ak")
        monkeypatch.setenv(SECRET_KEY_ENV, "sk")
        out = io.StringIO()
        with pytest.raises(Stop):
            call_command("fetch_tensorboard_logs", f"--dest={tmp_path / 'dest'}", "--every=30", stdout=out)
    passes = [line.split(" in ")[0] for line in out.getvalue().splitlines()]
    assert passes == [
        "1 runs: 1 fetched, 0 unchanged, 0 failed",
        "1 runs: 1 fetched, 0 unchanged, 0 failed",  # the archive changed after the first pass
        "1 runs: 0 fetched, 1 unchanged, 0 failed",
    ]
    assert sleeps == [30, 30, 30]


def test_the_sidecar_reads_the_plan_file_again_each_round_and_fetches_the_runs_added_to_it(
    monkeypatch, tmp_path
):
    logs = tmp_path / "source" / "logs"
    write_event_logs([logs], steps=2)
    plan_file = tmp_path / "fetch-plan" / "plan.json"
    plan_file.parent.mkdir()
    sleeps: list[float] = []

    def plan(*runs: str) -> str:
        access = S3Access(server.endpoint, False, "us-east-1", ACCESS_KEY_ENV, SECRET_KEY_ENV)
        return encode_plan(
            Plan(tuple(RunSource(r, f"s3://ml-logs/{r}/tb.tgz", "tar", r) for r in runs), access)
        )

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 1:  # the controller adds trial-1 to the ConfigMap; the kubelet swaps the file
            server.store.put("ml-logs", "trial-1/tb.tgz", tgz_of(logs))
            plan_file.write_text(plan("trial-0", "trial-1"))
        if len(sleeps) == 2:  # a torn or foreign file: the sidecar keeps the last good plan
            plan_file.write_text("{")
        if len(sleeps) == 3:
            raise Stop

    monkeypatch.setattr("tensorboard.management.commands.fetch_tensorboard_logs.time.sleep", sleep)
    monkeypatch.delenv(PLAN_ENV, raising=False)
    with running_s3("ak", "sk") as server:
        server.store.buckets["ml-logs"] = {"trial-0/tb.tgz": tgz_of(logs)}
        plan_file.write_text(plan("trial-0"))
        monkeypatch.setenv(ACCESS_KEY_ENV, "ak")
        monkeypatch.setenv(SECRET_KEY_ENV, "sk")
        out, err = io.StringIO(), io.StringIO()
        dest = tmp_path / "dest"
        with pytest.raises(Stop):
            call_command(
                "fetch_tensorboard_logs", f"--dest={dest}", f"--plan={plan_file}", "--every=60",
                stdout=out, stderr=err,
            )  # fmt: skip
    passes = [line.split(" in ")[0] for line in out.getvalue().splitlines()]
    assert passes == [
        "1 runs: 1 fetched, 0 unchanged, 0 failed",
        "2 runs: 1 fetched, 1 unchanged, 0 failed",  # trial-1 arrived in the plan after the first pass
        "2 runs: 0 fetched, 2 unchanged, 0 failed",
    ]
    assert "kept the previous plan: ARGOML_FETCH_PLAN: not JSON" in err.getvalue()
    assert sorted(path.name for path in dest.iterdir() if not path.name.startswith(".")) == [
        "trial-0",
        "trial-1",
    ]
    assert list((dest / "trial-1").glob("events.out.tfevents.*"))


def test_a_plan_file_that_cannot_be_read_stops_the_first_pass_naming_it(tmp_path):
    with pytest.raises(CommandError, match=r"--plan: cannot read .*missing.json"):
        call_command("fetch_tensorboard_logs", f"--dest={tmp_path}", f"--plan={tmp_path / 'missing.json'}")
