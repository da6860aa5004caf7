"""Namespace grants: a user or a group may act in a Kubernetes namespace as viewer or editor."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.validators import RegexValidator
from django.db import models

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
        from django.core.exceptions import ValidationError

        if bool(self.user_id) == bool(self.group_id):
            raise ValidationError("A grant names either a user or a group, not both and not neither.")
