from django.apps import AppConfig


class HyperparamConfig(AppConfig):
    name = "hyperparam"
