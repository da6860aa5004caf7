"""manage.py transpile."""
