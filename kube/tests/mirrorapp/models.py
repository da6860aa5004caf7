"""Widgets: a concrete mirror model with one column of its own, as an app would write it."""

from __future__ import annotations

from typing import Any

from django.db import models

from kube.models import MirroredResource, MirrorHistory


class Widget(MirroredResource):
    history_model = "mirrorapp.WidgetHistory"

    size = models.IntegerField(null=True, blank=True)

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        size = (obj.get("spec") or {}).get("size")
        return {**super().observed_fields(obj), "size": size if isinstance(size, int) else None}


class WidgetHistory(MirrorHistory):
    resource = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="history")
