"""Pages of trials without COUNT(*): a sweep may hold 100k trials, and a count would scan them all."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param


class UncountedPagination(BasePagination):
    """`?limit=100&offset=200`; reads one row more than the page to know whether another page follows.

    The total is the sweep's `trials_total` (and `trial_counts` by phase), which the status keeps anyway.
    """

    default_limit = 100
    max_limit = 1000

    def paginate_queryset(self, queryset: QuerySet[Any], request: Request, view: Any = None) -> list[Any]:
        self.request = request
        self.limit = _bounded(request.query_params.get("limit"), self.default_limit, 1, self.max_limit)
        self.offset = _bounded(request.query_params.get("offset"), 0, 0, None)
        rows = list(queryset[self.offset : self.offset + self.limit + 1])
        self.has_next = len(rows) > self.limit
        return rows[: self.limit]

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"next": self._next(), "previous": self._previous(), "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["results"],
            "properties": {
                "next": {"type": "string", "nullable": True, "format": "uri"},
                "previous": {"type": "string", "nullable": True, "format": "uri"},
                "results": schema,
            },
        }

    def _next(self) -> str | None:
        if not self.has_next:
            return None
        url = replace_query_param(self.request.build_absolute_uri(), "limit", self.limit)
        return replace_query_param(url, "offset", self.offset + self.limit)

    def _previous(self) -> str | None:
        if self.offset <= 0:
            return None
        url = replace_query_param(self.request.build_absolute_uri(), "limit", self.limit)
        previous = max(self.offset - self.limit, 0)
        return (
            remove_query_param(url, "offset")
            if previous == 0
            else replace_query_param(url, "offset", previous)
        )


def _bounded(raw: str | None, default: int, low: int, high: int | None) -> int:
    try:
        value = int(raw) if raw is not None else default
    except ValueError:
        value = default
    value = max(value, low)
    return min(value, high) if high is not None else value
