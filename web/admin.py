"""Admin bases for rows the admin only reads: mirrored resources (kube.models), which the mirror and the
controllers own, shown one query per list page with the JSON columns left in the database, and any other
row a process writes (audit trails)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from kube.models import HISTORY_FIELDS, JSON_COLUMNS

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldOpts

#: A MirroredResource's fields as the cluster holds them, below what its page is about.
CLUSTER_FIELDS = ("labels", "spec", "status", "resource_version", "generation", "observed_generation")


def as_the_cluster_holds_it(fields: tuple[str, ...] = CLUSTER_FIELDS) -> tuple[str, _FieldOpts]:
    """The folded fieldset that ends a mirrored resource's page: `fields` (by default every one the
    cluster holds)."""
    return ("As the cluster holds it", {"classes": ("collapse",), "fields": fields})


class ReadOnlyMixin:
    """A process owns these rows (the mirror, a controller, the garbage collector): nothing is added,
    changed or deleted here, on a row's page or in an inline. `obj` is optional because the admin asks a
    page without it and an inline with it."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """A row's page that only shows it."""


class MirrorAdmin(ReadOnlyAdmin):
    """A MirroredResource: newest first, every column read-only, and a list that neither counts the whole
    table nor loads the specs and statuses it does not show."""

    #: Columns the list page never reads; a model with more JSON columns adds them.
    list_deferred: tuple[str, ...] = JSON_COLUMNS
    ordering = ("-created_at", "-id")
    list_per_page = 50
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        changelist = f"{self.opts.app_label}_{self.opts.model_name}_changelist"
        if request.resolver_match and request.resolver_match.url_name == changelist:
            return queryset.defer(*self.list_deferred)
        return queryset

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*(field.name for field in self.opts.concrete_fields), *self.readonly_fields]


class ReadOnlyInline(ReadOnlyMixin, admin.TabularInline):
    """A row's children, shown under it, with no empty form to add one."""

    extra = 0


class HistoryInline(ReadOnlyInline):
    """A resource's MirrorHistory, oldest first; subclasses name the `model`."""

    fields = readonly_fields = HISTORY_FIELDS
    ordering = ("at", "id")


class LiveFilter(admin.SimpleListFilter):
    """Resources still in the cluster, or deleted ones (which keep their rows and history)."""

    title = "in the cluster"
    parameter_name = "live"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No, deleted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "no":
            return queryset.filter(deleted_at__isnull=False)
        if self.value() == "yes":
            return queryset.filter(deleted_at__isnull=True)
        return queryset
