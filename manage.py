#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys

# Commands that sign nothing and store nothing (they read files and print manifests, or, like ping_worker,
# send one task through the broker), so they need no SECRET_KEY: settings.py stands a throwaway key in.
OFFLINE_COMMANDS = frozenset(
    {
        "argo_lint",
        "render_job",
        "render_hyperparam",
        "transpile",
        "render_crds",
        "render_webhooks",
        "fetch_tensorboard_logs",
        "ping_worker",
    }
)
# A setting that is missing or wrong is a configuration problem (exit 2), not the command's verdict (exit 1).
CONFIGURATION_EXIT_CODE = 2


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
    if len(sys.argv) > 1 and sys.argv[1] in OFFLINE_COMMANDS:
        os.environ["ARGOML_OFFLINE_COMMAND"] = sys.argv[1]
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        print(f"configuration: {error}", file=sys.stderr)
        sys.exit(CONFIGURATION_EXIT_CODE)


if __name__ == "__main__":
    main()
