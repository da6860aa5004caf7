"""The project's settings with STATIC_ROOT from TEST_STATIC_ROOT, so tests collect and serve the static
files in a temporary folder instead of the repository's."""

import os

from argoml_site import settings as project

globals().update({name: getattr(project, name) for name in dir(project) if name.isupper()})
STATIC_ROOT = os.environ["TEST_STATIC_ROOT"]
