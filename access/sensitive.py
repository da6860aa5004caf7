"""Namespaces whose grants need a superuser's explicit confirmation: the control plane's own namespace
(its Secrets, its service account tokens) and Kubernetes' system namespaces (`kube-system`, `kube-public`,
`kube-node-lease`, any `kube-*`). A grant there lets a tenant run pods next to the cluster's own."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError

SYSTEM_PREFIX = "kube-"


def is_sensitive(namespace: str, own_namespace: str) -> bool:
    """Whether granting `namespace` needs a confirmed superuser (pure: the own namespace is passed in)."""
    return namespace == own_namespace or namespace.startswith(SYSTEM_PREFIX)


def check_grant(
    namespace: str, user: AbstractBaseUser | AnonymousUser, *, confirmed: bool, field: str = "namespace"
) -> None:
    """Raise a ValidationError naming `field` unless `user` may grant `namespace` as asked. Every way to
    create or change a grant (the admin, any API or command) calls this before saving."""
    if not is_sensitive(namespace, settings.ARGOML_NAMESPACE):
        return
    if not getattr(user, "is_superuser", False):
        raise ValidationError(
            {field: f"Only a superuser may grant access to {namespace!r}, a system or control-plane one."}
        )
    if not confirmed:
        raise ValidationError(
            {
                "confirm_sensitive": (
                    f"{namespace!r} is a system or control-plane namespace: confirm that this grant is "
                    "intended."
                )
            }
        )
