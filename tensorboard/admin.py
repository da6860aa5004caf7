"""Read-only admin of TensorBoards: the list shows phase, source and URL; a TensorBoard's page shows its
logdirs and the history of its phases. The mirror owns the rows: nothing is added, changed or deleted here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from tensorboard.models import Tensorboard, TensorboardHistory
from tensorboard.status import FAILED, PENDING, READY
from web.admin import HistoryInline, LiveFilter, MirrorAdmin, as_the_cluster_holds_it


class PhaseFilter(admin.SimpleListFilter):
    """The three phases, listed without a query."""

    title = "phase"
    parameter_name = "phase"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(phase, phase) for phase in (PENDING, READY, FAILED)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(phase=self.value()) if self.value() else queryset


class TensorboardHistoryInline(HistoryInline):
    model = TensorboardHistory


@admin.register(Tensorboard)
class TensorboardAdmin(MirrorAdmin):
    list_display = ("name", "namespace", "state", "source", "link", "last_access", "created_at")
    list_filter = (PhaseFilter, LiveFilter, "source_kind", "namespace")
    search_fields = ("^name", "^source_name")
    inlines = (TensorboardHistoryInline,)
    readonly_fields = ("logdir_table",)
    fieldsets = (
        (None, {"fields": ("namespace", "name", "uid", "phase", "url", "source_kind", "source_name")}),
        ("Log directories", {"fields": ("logdir_table",)}),
        ("Times", {"fields": ("last_access", "created_at", "updated_at", "deleted_at")}),
        as_the_cluster_holds_it(),
    )

    @admin.display(description="phase", ordering="phase")
    def state(self, tensorboard: Tensorboard) -> str:
        return f"{tensorboard.phase} (deleted)" if tensorboard.deleted_at else tensorboard.phase

    @admin.display(description="source", ordering="source_name")
    def source(self, tensorboard: Tensorboard) -> str:
        return tensorboard.source or "logdirs"

    @admin.display(description="URL")
    def link(self, tensorboard: Tensorboard) -> str:
        if not tensorboard.url or tensorboard.deleted_at:
            return "-"
        return format_html('<a href="{}" rel="noopener" target="_blank">open</a>', tensorboard.url)

    @admin.display(description="logdirs")
    def logdir_table(self, tensorboard: Tensorboard) -> str:
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td><code>{}</code></td></tr>",
            ((e.get("name"), e.get("path")) for e in tensorboard.logdirs),
        )
        return format_html("<table><tr><th>run</th><th>path</th></tr>{}</table>", rows)
