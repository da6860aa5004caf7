"""Frameworks by custom resource kind: the only place the operator core looks a framework up."""

from __future__ import annotations

from typing import TypeVar

from jobs.frameworks.base import Framework

F = TypeVar("F", bound=type[Framework])

_FRAMEWORKS: dict[str, type[Framework]] = {}


class UnknownKind(LookupError):
    """No framework handles this kind."""


def register(framework: F) -> F:
    """Class decorator: make `framework` handle its `kind`; registering a second class for a kind fails."""
    existing = _FRAMEWORKS.get(framework.kind)
    if existing is not None and existing is not framework:
        raise ValueError(f"kind {framework.kind!r} is already handled by {existing.__name__}")
    _FRAMEWORKS[framework.kind] = framework
    return framework


def unregister(kind: str) -> None:
    """Forget `kind` (tests register toy frameworks and clean up after themselves)."""
    _FRAMEWORKS.pop(kind, None)


def kinds() -> tuple[str, ...]:
    """Every registered kind, sorted."""
    return tuple(sorted(_FRAMEWORKS))


def framework_class(kind: object) -> type[Framework]:
    if not isinstance(kind, str) or kind not in _FRAMEWORKS:
        raise UnknownKind(f"kind {kind!r} is not a training job kind; expected one of {', '.join(kinds())}")
    return _FRAMEWORKS[kind]


def framework_for(kind: object, *, cluster_domain: str = "") -> Framework:
    """The framework handling `kind`, configured with the cluster's DNS domain."""
    return framework_class(kind)(cluster_domain=cluster_domain)
