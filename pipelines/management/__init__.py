"""Management commands of the pipelines app."""
