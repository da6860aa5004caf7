"""The dashboard's views, one module per page family."""
