from django.apps import AppConfig


class TensorboardConfig(AppConfig):
    name = "tensorboard"
