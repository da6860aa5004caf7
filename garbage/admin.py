"""Runs and what they deleted (read only: the collector writes them, and an audit trail is not deleted by
hand), and the per-namespace policies."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import Model
from django.http import HttpRequest

from web.admin import ReadOnlyAdmin, ReadOnlyInline

from .models import GCDeletion, GCNamespacePolicy, GCRun

DELETION_FIELDS = ("kind", "namespace", "name", "uid", "reason", "age_seconds", "already_gone", "created")


class PaginatedInline(ReadOnlyInline):
    """A read-only inline showing one page of rows: a run may have deleted tens of thousands of objects."""

    per_page = 50
    page_param = "deletions_page"
    template = "admin/garbage/paginated_tabular.html"

    def get_formset(self, request: HttpRequest, obj: Model | None = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        per_page, page_param = self.per_page, self.page_param

        class PageFormSet(formset):  # type: ignore[misc, valid-type]
            def get_queryset(self) -> Any:
                if not hasattr(self, "page"):
                    paginator = Paginator(super().get_queryset(), per_page)
                    self.page = paginator.get_page(request.GET.get(page_param))
                    self.page_param = page_param
                    self.page_rows = list(self.page.object_list)
                return self.page_rows

        return PageFormSet


class GCDeletionInline(PaginatedInline):
    model = GCDeletion
    fields = DELETION_FIELDS
    readonly_fields = DELETION_FIELDS


@admin.register(GCRun)
class GCRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "started", "finished", "status", "dry_run", "namespace", "scanned", "deleted",
                    "skipped", "errors"]  # fmt: skip
    list_filter = ["status", "dry_run", "started"]
    search_fields = ["namespace", "note"]
    date_hierarchy = "started"
    readonly_fields = ["started", "finished", "status", "dry_run", "namespace", "scanned", "deleted",
                       "skipped", "errors", "skip_reasons", "failures", "note"]  # fmt: skip
    inlines = [GCDeletionInline]


@admin.register(GCDeletion)
class GCDeletionAdmin(ReadOnlyAdmin):
    list_display = ["created", "kind", "namespace", "name", "reason", "age_seconds", "already_gone", "run"]
    list_filter = ["reason", "kind", "already_gone", "run__dry_run"]
    search_fields = ["namespace", "name", "uid"]
    list_select_related = ["run"]
    readonly_fields = [*DELETION_FIELDS, "run"]
    show_full_result_count = False


@admin.register(GCNamespacePolicy)
class GCNamespacePolicyAdmin(admin.ModelAdmin):
    list_display = [
        "namespace",
        "succeeded_retention_seconds",
        "failed_retention_seconds",
        "excluded",
        "updated",
    ]
    list_editable = ["succeeded_retention_seconds", "failed_retention_seconds", "excluded"]
    list_filter = ["excluded"]
    search_fields = ["namespace"]
