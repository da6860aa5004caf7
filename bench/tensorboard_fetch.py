"""How long the TensorBoard pod's fetcher takes to bring in a sweep: `--runs` trials, each a `.tgz` of real
event files (Argo's default archive) on a local S3-compatible server, fetched and unpacked by
`tensorboard.fetching.sync` (the code `manage.py fetch_tensorboard_logs` runs) at each `--concurrency`.

    .venv/bin/python bench/tensorboard_fetch.py [--runs 100] [--steps 200] [--concurrency 1 8] [--repeat 3]

Prints the settings, the archive sizes, then per concurrency the best and median time of a first pass (every
run fetched into an empty folder) and of a re-sync pass (nothing changed: what the sidecar costs). Every pass
is checked: no run failed and every run's folder holds its event file. The S3 server runs in this process
(tensorboard/tests/s3server.py, signatures checked), so the figures include its share of the CPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tensorboard.fetching import sync
from tensorboard.fetchplan import ACCESS_KEY_ENV, SECRET_KEY_ENV, Plan, RunSource, S3Access, folder_name
from tensorboard.tests.eventlogs import tgz_of, write_event_logs
from tensorboard.tests.s3server import running_s3

BUCKET = "bench-logs"
CREDENTIALS = {ACCESS_KEY_ENV: "bench-access", SECRET_KEY_ENV: "bench-secret"}


def check(outcomes: list, dest: Path, runs: int) -> None:
    failed = [f"{o.run}: {o.error}" for o in outcomes if o.error]
    if failed:
        raise SystemExit(f"FAILED: {len(failed)} runs not fetched, e.g. {failed[:3]}")
    for index in range(runs):
        if not any((dest / folder_name(index)).glob("events.out.tfevents.*")):
            raise SystemExit(f"FAILED: run {index} has no event file in {dest / folder_name(index)}")


def timed_pass(plan: Plan, dest: Path, concurrency: int, runs: int) -> float:
    started = time.perf_counter()
    outcomes = sync(plan, dest, CREDENTIALS, concurrency=concurrency)
    elapsed = time.perf_counter() - started
    check(outcomes, dest, runs)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=200, help="Scalar steps in each run's event file.")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch, running_s3("bench-access", "bench-secret") as server:
        root = Path(scratch)
        folders = [root / "written" / f"trial-{index}" / "logs" for index in range(options.runs)]
        write_event_logs(folders, steps=options.steps)
        server.store.buckets[BUCKET] = {}
        sizes = []
        for index, folder in enumerate(folders):
            archive = tgz_of(folder)
            sizes.append(len(archive))
            server.store.put(BUCKET, f"sweep/trial-{index}/tensorboard.tgz", archive)
        plan = Plan(
            tuple(
                RunSource(
                    f"trial-{i}", f"s3://{BUCKET}/sweep/trial-{i}/tensorboard.tgz", "tar", folder_name(i)
                )
                for i in range(options.runs)
            ),
            S3Access(server.endpoint, False, "us-east-1", ACCESS_KEY_ENV, SECRET_KEY_ENV),
        )
        print(
            f"settings: runs={options.runs} steps/run={options.steps} concurrency={options.concurrency} "
            f"repeat={options.repeat} python={sys.version.split()[0]}"
        )
        print(
            f"archives: {sum(sizes) / 1024:.0f} KiB in total, {statistics.mean(sizes) / 1024:.1f} KiB each "
            "(tar.gz of one event file)"
        )
        for concurrency in options.concurrency:
            first, resync = [], []
            for attempt in range(options.repeat):
                dest = root / f"dest-{concurrency}-{attempt}"
                first.append(timed_pass(plan, dest, concurrency, options.runs))
                resync.append(timed_pass(plan, dest, concurrency, options.runs))
            print(
                f"concurrency {concurrency}: first fetch best {min(first):.2f} s, median "
                f"{statistics.median(first):.2f} s; re-sync (unchanged) best {min(resync):.2f} s, median "
                f"{statistics.median(resync):.2f} s  [all {options.runs} runs arrived, checked]"
            )


if __name__ == "__main__":
    main()
