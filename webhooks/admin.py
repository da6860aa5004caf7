"""Injection rules in the admin, their Secret env vars inline; a save reaches the webhook in seconds."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from .models import InjectionRule, SecretEnvVar
from .rulecache import CHECK_INTERVAL_SECONDS


class SecretEnvVarInline(admin.TabularInline):
    model = SecretEnvVar
    extra = 1
    fields = ["name", "secret_name", "secret_key", "optional"]


@admin.register(InjectionRule)
class InjectionRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "priority", "namespaces", "pod_selector", "updated"]
    list_filter = ["enabled"]
    list_editable = ["enabled", "priority"]
    search_fields = ["name", "description"]
    inlines = [SecretEnvVarInline]
    actions = ["enable", "disable"]
    fieldsets = [
        (None, {"fields": ["name", "description", "enabled", "priority"]}),
        ("Which Pods", {"fields": ["namespaces", "pod_selector"]}),
        ("What they get", {"fields": ["image_pull_secrets", "labels", "annotations"]}),
    ]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        self.message_user(
            request,
            f"Pods admitted from now on get this rule within {CHECK_INTERVAL_SECONDS:g} seconds; "
            "running Pods keep what they were created with.",
            messages.INFO,
        )

    @admin.action(description="Enable the selected rules")
    def enable(self, request: HttpRequest, queryset: QuerySet[InjectionRule]) -> None:
        queryset.update(enabled=True)

    @admin.action(description="Disable the selected rules")
    def disable(self, request: HttpRequest, queryset: QuerySet[InjectionRule]) -> None:
        queryset.update(enabled=False)
