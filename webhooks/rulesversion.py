"""The injection rules' version number in Redis: every change bumps it, every webhook process reads it.

Its own module so the models (which bump it) and the rule cache (which reads it and loads the models)
import it from below, and neither imports the other's importer. The counter itself is `kube.versioned`'s,
shared with the namespaces' Pod Security policies.
"""

from __future__ import annotations

import logging

from kube import versioned

logger = logging.getLogger(__name__)

VERSION_KEY = "argoml:webhooks:injection-rules:version"

_version = versioned.RedisVersion(VERSION_KEY)


def bump_rules_version() -> None:
    """Tell every process to reload the rules (called on commit of any change to them)."""
    logger.info("injection rules changed: version %s", _version.bump())


def read_rules_version() -> str | None:
    """The current version, or None when no rule was ever changed (or Redis lost the key)."""
    return _version.read()
