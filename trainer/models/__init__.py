"""The trainer app's models, one module per concern; Django finds them through this package."""
