from django.apps import AppConfig


class MirrorAppConfig(AppConfig):
    name = "kube.tests.mirrorapp"
    label = "mirrorapp"
    default_auto_field = "django.db.models.BigAutoField"
