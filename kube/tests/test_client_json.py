"""The client writes every object with orjson: a deeply nested object must come out as JSON or as an
error, never as a corrupted heap. orjson 3.11.4 to 3.11.9 wrote an XGBoostJob with a list nested 200 deep
(well inside orjson's own 254-level limit) and then aborted the process (`free(): invalid next size`), so
a tenant's manifest could have killed the web process or the controller worker; 3.13.0 does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Every nesting depth up to and past orjson's limit, inside the example job (the shape that crashed).
SCRIPT = """
import orjson, yaml
job = yaml.safe_load(open("examples/xgboostjob.yaml").read().split("\\n---")[0])
written = refused = 0
for depth in range(1, 300):
    nested = []
    for _ in range(depth):
        nested = [nested]
    job["spec"]["hostileNesting"] = nested
    try:
        orjson.loads(orjson.dumps(job))
        written += 1
    except orjson.JSONEncodeError:
        refused += 1
print(written, refused)
"""


def test_a_deeply_nested_object_is_written_or_refused_never_a_crash():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-500:]
    written, refused = map(int, result.stdout.split())
    assert written >= 200  # up to orjson's own limit
    assert refused > 0  # past it: an error the caller sees
