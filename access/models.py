"""Namespace grants (a user or a group may act in a namespace as viewer or editor) and each namespace's pod
security (the Pod Security level and service accounts that tenants' pod templates must keep to)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction

from kube import versioned

#: Bumped on commit of any change to a namespace's pod security, so every process reloads its copy.
podsecurity_version = versioned.RedisVersion("argoml:access:pod-security:version")

# A Kubernetes namespace is a DNS-1123 label.
namespace_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "A namespace is at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit.",
)


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer (read)"
    EDITOR = "editor", "Editor (read, create, change, delete)"


class NamespaceGrant(models.Model):
    """Lets one user, or every member of one group, act in one namespace with one role."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="namespace_grants",
    )
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="namespace_grants"
    )
    namespace = models.CharField(max_length=63, validators=[namespace_validator])
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["namespace", "id"]
        constraints = [
            models.CheckConstraint(
                name="grant_has_exactly_one_subject",
                condition=(
                    models.Q(user__isnull=False, group__isnull=True)
                    | models.Q(user__isnull=True, group__isnull=False)
                ),
            ),
            models.UniqueConstraint(
                fields=["user", "namespace"],
                condition=models.Q(user__isnull=False),
                name="one_grant_per_user_namespace",
            ),
            models.UniqueConstraint(
                fields=["group", "namespace"],
                condition=models.Q(group__isnull=False),
                name="one_grant_per_group_namespace",
            ),
        ]
        indexes = [models.Index(fields=["namespace"])]

    def __str__(self) -> str:
        subject = f"user {self.user}" if self.user_id else f"group {self.group}"
        return f"{subject} → {self.namespace} ({self.role})"

    def clean(self) -> None:
        if bool(self.user_id) == bool(self.group_id):
            raise ValidationError("A grant names either a user or a group, not both and not neither.")


class PodSecurityLevel(models.TextChoices):
    """The levels of Kubernetes' Pod Security Standards (`podsecurity` checks them)."""

    PRIVILEGED = "privileged", "Privileged (anything goes)"
    BASELINE = "baseline", "Baseline (no known privilege escalation)"
    RESTRICTED = "restricted", "Restricted (hardened pods)"


# A ServiceAccount name is a DNS-1123 subdomain.
SERVICE_ACCOUNT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def split_service_accounts(text: str) -> list[str]:
    """The names in the admin's text: separated by commas, spaces or new lines."""
    return [name for name in re.split(r"[\s,]+", text) if name]


def validate_service_accounts(text: str) -> None:
    bad = [
        name
        for name in split_service_accounts(text)
        if len(name) > 253 or not SERVICE_ACCOUNT_NAME.match(name)
    ]
    if bad:
        raise ValidationError(
            f"not a ServiceAccount name (lowercase letters, digits, '-' and '.'): {', '.join(bad)}"
        )


class PodSecurityPolicyQuerySet(models.QuerySet["NamespacePodSecurity"]):
    """Bulk changes tell every process to reload the policies too (see `access.podsecurity`)."""

    def delete(self) -> tuple[int, dict[str, int]]:
        result = super().delete()
        transaction.on_commit(podsecurity_version.bump, robust=True)
        return result

    def update(self, **kwargs: Any) -> int:
        count = super().update(**kwargs)
        transaction.on_commit(podsecurity_version.bump, robust=True)
        return count


class NamespacePodSecurity(models.Model):
    """What tenants' pod templates must meet in one namespace: a Pod Security level and the service
    accounts they may name. A namespace without a row gets `POD_SECURITY_DEFAULT_LEVEL` and only the
    `default` service account. Every change reaches each process's cached copy within seconds."""

    namespace = models.CharField(max_length=63, unique=True, validators=[namespace_validator])
    level = models.CharField(
        max_length=16, choices=PodSecurityLevel.choices, default=PodSecurityLevel.BASELINE
    )
    service_accounts = models.TextField(
        blank=True,
        validators=[validate_service_accounts],
        help_text="ServiceAccounts pod templates may name here, separated by commas or new lines; "
        "`default` is always allowed.",
    )
    updated = models.DateTimeField(auto_now=True)

    objects = PodSecurityPolicyQuerySet.as_manager()

    class Meta:
        ordering = ["namespace"]
        verbose_name = "namespace pod security"
        verbose_name_plural = "namespace pod security"

    def __str__(self) -> str:
        return f"{self.namespace}: {self.level}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        transaction.on_commit(podsecurity_version.bump, robust=True)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        result = super().delete(*args, **kwargs)
        transaction.on_commit(podsecurity_version.bump, robust=True)
        return result
