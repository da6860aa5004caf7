from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from .models import NamespaceGrant, NamespacePodSecurity
from .sensitive import check_grant


class NamespaceGrantForm(forms.ModelForm):
    """A grant on a system or control-plane namespace needs a superuser who ticks the confirmation."""

    confirm_sensitive = forms.BooleanField(
        required=False,
        label="Confirm a system namespace",
        help_text="Required (and only allowed for superusers) when the namespace is the control plane's own "
        "or a kube-* system namespace.",
    )
    request_user: Any = None

    class Meta:
        model = NamespaceGrant
        fields = ["user", "group", "namespace", "role", "confirm_sensitive"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        namespace = cleaned.get("namespace")
        if namespace:
            check_grant(namespace, self.request_user, confirmed=bool(cleaned.get("confirm_sensitive")))
        return cleaned


@admin.register(NamespaceGrant)
class NamespaceGrantAdmin(admin.ModelAdmin):
    form = NamespaceGrantForm
    list_display = ["namespace", "user", "group", "role", "created"]
    list_filter = ["role"]
    search_fields = ["namespace", "user__username", "group__name"]
    autocomplete_fields = ["user", "group"]
    list_select_related = ["user", "group"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        form.request_user = request.user  # type: ignore[attr-defined]
        return form


@admin.register(NamespacePodSecurity)
class NamespacePodSecurityAdmin(admin.ModelAdmin):
    list_display = ["namespace", "level", "service_accounts", "updated"]
    list_filter = ["level"]
    search_fields = ["namespace", "service_accounts"]
