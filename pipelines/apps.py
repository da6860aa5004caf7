from django.apps import AppConfig


class PipelinesConfig(AppConfig):
    name = "pipelines"
