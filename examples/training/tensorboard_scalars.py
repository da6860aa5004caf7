"""Write a known loss curve as TensorBoard event files, without TensorFlow: what a TensorBoard is opened on.

The curve is `loss = 0.05 + 0.8 ** step` for steps 1..N (scalar tag `loss`), written with TensorBoard's own
writer (`tensorboard.summary.Writer`, in the frameworks image) to `<logdir>/<run>`, so a test can read
the same numbers back through TensorBoard's `/data/plugin/scalars/scalars`.

    python tensorboard_scalars.py --logdir /logs --run train --steps 20

Progress lines: `step 3/20 loss 0.562000`. Last line: `RESULT {json}` with run, steps, loss_first,
loss_last and the event files written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", required=True)
    parser.add_argument("--run", default="train", help="the run's folder under --logdir")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    return args


def loss_at(step: int) -> float:
    return 0.05 + 0.8**step


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tensorboard.summary import Writer

    run_dir = Path(args.logdir) / args.run
    writer = Writer(str(run_dir))
    for step in range(1, args.steps + 1):
        writer.add_scalar("loss", loss_at(step), step=step)
        print(f"step {step}/{args.steps} loss {loss_at(step):.6f}", flush=True)
    writer.close()
    result = {
        "run": args.run,
        "steps": args.steps,
        "loss_first": loss_at(1),
        "loss_last": loss_at(args.steps),
        "files": sorted(str(path) for path in run_dir.glob("events.out.tfevents.*")),
    }
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
