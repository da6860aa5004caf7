"""CSV export of a sweep's trials, streamed: rows leave the database in chunks (a server-side cursor on
PostgreSQL) and the response as they are written, so 100k trials never sit in memory at once. Every cell,
header included, goes through `csv_cell` (no formula injection)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from hyperparam.models import Sweep
from web.spreadsheet import csv_cell

CHUNK_ROWS = 2000
FIXED_COLUMNS = ("index", "phase", "metric", "started_at", "finished_at", "workflow", "message")


class _Line:
    """A file-like object whose write returns the line, so csv.writer produces strings to stream."""

    def write(self, value: str) -> str:
        return value


def csv_rows(sweep: Sweep, trials: QuerySet[Any]) -> Iterator[str]:
    """The header, then one line per trial; each hyperparameter is a column, in spec order."""
    names = sweep.parameter_names
    writer = csv.writer(_Line())
    metric = sweep.metric_name or "metric"
    header = [*FIXED_COLUMNS[:2], metric, *FIXED_COLUMNS[3:], *names]
    yield writer.writerow([csv_cell(name) for name in header])
    columns = ("index", "phase", "metric", "started_at", "finished_at", "workflow", "message", "params")
    for *fixed, params in trials.values_list(*columns).iterator(chunk_size=CHUNK_ROWS):
        cells = [*fixed, *(params.get(name, "") for name in names)]
        yield writer.writerow([csv_cell(value) for value in cells])


def csv_response(sweep: Sweep, trials: QuerySet[Any]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_rows(sweep, trials), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{sweep.namespace}-{sweep.name}-trials.csv"'
    return response
