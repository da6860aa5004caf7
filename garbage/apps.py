from django.apps import AppConfig


class GarbageConfig(AppConfig):
    """The `gc` of ARCHITECTURE.md; a package named `gc` would be shadowed by Python's built-in module."""

    name = "garbage"
