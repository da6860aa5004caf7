"""`manage.py fetch_tensorboard_logs --dest DIR [--plan FILE] [--every N] [--report FILE]`: the TensorBoard
pod's fetcher.

Run as the `fetch-logs` init container (one pass) and, for a source still running, as the `sync-logs`
sidecar (`--every N`, a pass every N seconds). The plan comes from `--plan` (the mounted ConfigMap, read
again before every pass: the controller adds the runs the source recorded since, and the kubelet refreshes
the file) or else from the environment (ARGOML_FETCH_PLAN); the credentials from the variables it names.
A plan that stops parsing in a later pass keeps the sidecar on the last good one. The runs that could not
be fetched are written to `--report` (the container's termination message: the controller copies the init
container's into the Tensorboard's status; a running sidecar has none, its later failures are in its log);
the command still succeeds so TensorBoard starts with the others. Needs no database and no SECRET_KEY.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tensorboard import fetching
from tensorboard.fetchplan import PLAN_ENV, Plan, PlanError, parse_plan


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = "Copy a Tensorboard's artifacts (S3, HTTP; archives unpacked) into a local folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dest", required=True, type=Path, help="The folder TensorBoard reads.")
        parser.add_argument("--plan", type=Path, help="The plan file (default: $ARGOML_FETCH_PLAN).")
        parser.add_argument("--report", type=Path, help="Where to write the JSON report of failed runs.")
        parser.add_argument("--every", type=_positive, metavar="SECONDS", help="Sync forever, this often.")
        parser.add_argument("--concurrency", type=_positive, default=8, help="Runs fetched at once.")

    def handle(
        self,
        *args: Any,
        dest: Path,
        plan: Path | None,
        report: Path | None,
        every: int | None,
        concurrency: int,
        **options: Any,
    ) -> None:
        try:
            current = _read_plan(plan)
        except PlanError as error:
            raise CommandError(str(error)) from error
        while True:
            started = time.monotonic()
            outcomes = fetching.sync(current, dest, os.environ, concurrency=concurrency)
            fetched = sum(1 for o in outcomes if not o.error and not o.unchanged)
            failed = [o for o in outcomes if o.error]
            unchanged = len(outcomes) - fetched - len(failed)
            self.stdout.write(
                f"{len(outcomes)} runs: {fetched} fetched, {unchanged} unchanged, {len(failed)} failed "
                f"in {time.monotonic() - started:.1f}s"
            )
            for outcome in failed:
                self.stderr.write(f"  {outcome.run} ({outcome.url}): {outcome.error}")
            if report is not None:
                report.write_text(fetching.report(outcomes))
            if every is None:
                return
            time.sleep(every)
            try:
                current = _read_plan(plan)
            except PlanError as error:
                self.stderr.write(f"kept the previous plan: {error}")


def _read_plan(path: Path | None) -> Plan:
    """The plan in the file `path` (the mounted ConfigMap), else in the environment; PlanError if bad."""
    if path is None:
        return parse_plan(os.environ.get(PLAN_ENV, ""))
    try:
        text = path.read_text()
    except OSError as error:
        raise PlanError(f"--plan: cannot read {path}: {error.strerror or error}.") from error
    return parse_plan(text)
