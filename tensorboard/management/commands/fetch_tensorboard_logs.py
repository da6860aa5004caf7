"""`manage.py fetch_tensorboard_logs --dest DIR [--every N] [--report FILE]`: the TensorBoard pod's fetcher.

Run as the `fetch-logs` init container (one pass) and, for a source still running, as the `sync-logs`
sidecar (`--every N`, a pass every N seconds). The plan comes from the environment (ARGOML_FETCH_PLAN), the
credentials from the variables it names. The runs that could not be fetched are written to `--report`
(the container's termination message, which the controller copies into the Tensorboard's status); the
command still succeeds so TensorBoard starts with the others. Needs no database and no SECRET_KEY.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tensorboard import fetching
from tensorboard.fetchplan import PLAN_ENV, PlanError, parse_plan


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = "Copy a Tensorboard's artifacts (S3, HTTP; archives unpacked) into a local folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dest", required=True, type=Path, help="The folder TensorBoard reads.")
        parser.add_argument("--report", type=Path, help="Where to write the JSON report of failed runs.")
        parser.add_argument("--every", type=_positive, metavar="SECONDS", help="Sync forever, this often.")
        parser.add_argument("--concurrency", type=_positive, default=8, help="Runs fetched at once.")

    def handle(
        self,
        *args: Any,
        dest: Path,
        report: Path | None,
        every: int | None,
        concurrency: int,
        **options: Any,
    ) -> None:
        try:
            plan = parse_plan(os.environ.get(PLAN_ENV, ""))
        except PlanError as error:
            raise CommandError(str(error)) from error
        while True:
            started = time.monotonic()
            outcomes = fetching.sync(plan, dest, os.environ, concurrency=concurrency)
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
