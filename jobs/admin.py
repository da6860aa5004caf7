"""Read-only admin of training jobs: the list scans by kind, namespace and state; a job's page shows its
replicas and its history. Built for 100k+ jobs: one query per list page, no COUNT(*) over the table."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.http import HttpRequest

from jobs.frameworks import kinds
from jobs.models import Replica, TrainingJob, TrainingJobHistory
from jobs.status import CONDITION_TYPES
from web.admin import HistoryInline, LiveFilter, MirrorAdmin, ReadOnlyInline, as_the_cluster_holds_it

#: Count matching rows up to this many; past it, show the planner's estimate of the table (unfiltered) or
#: this number ("10,000 or more" pages).
COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows (`SELECT COUNT(*) FROM (... LIMIT n)`), never the whole table."""

    @cached_property
    def count(self) -> int:
        object_list: QuerySet[Any] = self.object_list  # type: ignore[assignment]
        counted = object_list[: COUNT_CAP + 1].count()
        if counted <= COUNT_CAP:
            return counted
        if not object_list.query.where:
            return max(counted, estimated_rows(object_list))
        return counted


def estimated_rows(queryset: QuerySet[Any]) -> int:
    """PostgreSQL's row estimate of the queryset's table (kept by autovacuum); 0 elsewhere."""
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [queryset.model._meta.db_table]
        )
        row = cursor.fetchone()
    return max(int(row[0]), 0) if row else 0


class KindFilter(admin.SimpleListFilter):
    """The registered kinds, listed without a query."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(kind, kind) for kind in kinds()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(kind=self.value()) if self.value() else queryset


class StateFilter(admin.SimpleListFilter):
    """The job states (condition types), listed without a query."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(state, state) for state in CONDITION_TYPES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(phase=self.value()) if self.value() else queryset


class ReplicaInline(ReadOnlyInline):
    """Every pod the job had, by replica; a recreated replica shows its earlier pods as deleted."""

    model = Replica
    fk_name = "job"
    fields = readonly_fields = (
        "replica_type",
        "replica_index",
        "name",
        "phase",
        "exit_code",
        "restarts",
        "node",
        "pod_ip",
        "message",
        "deleted_at",
    )
    ordering = ("replica_type", "replica_index", "created_at", "id")


class JobHistoryInline(HistoryInline):
    model = TrainingJobHistory


@admin.register(TrainingJob)
class TrainingJobAdmin(MirrorAdmin):
    list_display = (
        "name",
        "namespace",
        "kind",
        "state",
        "replica_summary",
        "restarts",
        "created_at",
        "completion_time",
    )
    list_filter = (KindFilter, StateFilter, LiveFilter, "api_group", "namespace")
    search_fields = ("^name",)
    paginator = CappedCountPaginator
    inlines = (ReplicaInline, JobHistoryInline)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "api_group",
                    "kind",
                    "namespace",
                    "name",
                    "uid",
                    "phase",
                    "state_reason",
                    "state_message",
                )
            },
        ),
        ("Replicas", {"fields": ("replica_summary", "restarts")}),
        ("Times", {"fields": ("created_at", "start_time", "completion_time", "updated_at", "deleted_at")}),
        as_the_cluster_holds_it(),
    )

    @admin.display(description="state", ordering="phase")
    def state(self, job: TrainingJob) -> str:
        return f"{job.phase} (deleted)" if job.deleted_at else job.phase
