"""Thin Celery tasks of the spawner: the periodic culling of idle instances (scheduled by a migration)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from kube.client import get_client

from . import actions
from .conf import conf_from_settings


@shared_task(name="tensorboard.cull_idle", ignore_result=False)
def cull_idle() -> list[str]:
    """Delete every TensorBoard idle longer than its idleTimeout; returns the deleted instances' keys.

    Two overlapping runs are harmless (each deletion carries the instance's uid and 404 is success), so no
    lock is taken.
    """
    return actions.cull_idle(get_client(), conf_from_settings(), timezone.now())
