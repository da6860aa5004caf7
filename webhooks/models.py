"""Injection rules, managed in the admin: "add this Secret's key as an env var to every Pod of workflows".

The webhook never reads these tables while answering: it holds the enabled rules in memory
(`webhooks.rulecache`), and every change here bumps a version in Redis once the transaction commits,
which tells every web process to load the rules again.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from . import injection
from .rulesversion import bump_rules_version

logger = logging.getLogger(__name__)


class RulesChangeOnWrite(models.Model):
    """A row the injection rules are made of: saving or deleting one tells every web worker, once the
    transaction commits, to reload its cached rules."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        transaction.on_commit(bump_rules_version, robust=True)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        result = super().delete(*args, **kwargs)
        transaction.on_commit(bump_rules_version, robust=True)
        return result


class InjectionRuleQuerySet(models.QuerySet["InjectionRule"]):
    def snapshot(self) -> tuple[injection.Rule, ...]:
        """The enabled rules in the order they apply, as the webhook holds them (two queries).

        A rule stored without the admin's checks (through the ORM) and found malformed is left out and
        logged, so one bad rule never stops the others.
        """
        rules = []
        for rule in self.filter(enabled=True).order_by("priority", "name").prefetch_related("env"):
            try:
                rules.append(rule.as_rule())
            except ValueError:
                logger.exception("injection rule %r is skipped", rule.name)
        return tuple(rules)

    def delete(self) -> tuple[int, dict[str, int]]:
        result = super().delete()
        transaction.on_commit(bump_rules_version, robust=True)
        return result

    def update(self, **kwargs: Any) -> int:
        count = super().update(**kwargs)
        transaction.on_commit(bump_rules_version, robust=True)
        return count


class InjectionRule(RulesChangeOnWrite):
    """Which Pods (namespaces and a label selector) get which additions (Secret env vars, pull secrets,
    labels, annotations). Rules apply in priority order; what a Pod or an earlier rule sets is kept."""

    name = models.SlugField(max_length=63, unique=True)
    description = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    priority = models.PositiveIntegerField(default=100, help_text="Lower applies first and wins conflicts.")
    namespaces = models.JSONField(
        default=list,
        blank=True,
        help_text='Namespace names or patterns, e.g. ["team-*", "research"]. Empty: every namespace '
        "(except those the webhook configuration excludes).",
    )
    pod_selector = models.JSONField(
        default=dict,
        blank=True,
        help_text='A label selector, e.g. {"matchExpressions": [{"key": "workflows.argoproj.io/workflow", '
        '"operator": "Exists"}]}. Empty: every Pod.',
    )
    image_pull_secrets = models.JSONField(
        default=list, blank=True, help_text='Secret names added to imagePullSecrets, e.g. ["registry"].'
    )
    labels = models.JSONField(
        default=dict, blank=True, help_text="Labels added when the Pod has none so named."
    )
    annotations = models.JSONField(
        default=dict, blank=True, help_text="Annotations added when the Pod has none so named."
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = InjectionRuleQuerySet.as_manager()

    class Meta:
        ordering = ["priority", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """Every problem, by field, in Kubernetes' terms: a bad rule must never reach a Pod."""
        problems: dict[str, list[str]] = {}
        for field, found in (
            ("namespaces", injection.namespace_pattern_problems(self.namespaces)),
            ("pod_selector", injection.selector_problems(self.pod_selector)),
            ("labels", injection.label_problems(self.labels, "labels")),
            (
                "annotations",
                injection.label_problems(self.annotations, "annotations", values_are_labels=False),
            ),
            ("image_pull_secrets", _secret_name_problems(self.image_pull_secrets)),
        ):
            if found:
                problems[field] = found
        if problems:
            raise ValidationError(problems)

    def as_rule(self) -> injection.Rule:
        """The in-memory rule the webhook applies; raises ValueError when a stored value is malformed."""
        _require_clean(self, f"injection rule {self.name!r}")
        return injection.Rule(
            name=self.name,
            namespaces=tuple(self.namespaces or ()),
            pod_selector=dict(self.pod_selector or {}),
            env=tuple(variable.as_secret_env() for variable in self.env.all()),
            image_pull_secrets=tuple(self.image_pull_secrets or ()),
            labels=dict(self.labels or {}),
            annotations=dict(self.annotations or {}),
        )


class SecretEnvVar(RulesChangeOnWrite):
    """One env var a rule adds to every container: `name` = key `secret_key` of Secret `secret_name`.

    The Secret must exist in each selected Pod's namespace, unless `optional` (then a missing one is
    skipped by the kubelet instead of keeping the Pod from starting).
    """

    rule = models.ForeignKey(InjectionRule, on_delete=models.CASCADE, related_name="env")
    name = models.CharField(max_length=253, help_text="The env var's name, e.g. WANDB_API_KEY.")
    secret_name = models.CharField(max_length=253)
    secret_key = models.CharField(max_length=253)
    optional = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "name"], name="webhooks_secretenvvar_unique_name")
        ]
        verbose_name = "secret env var"

    def __str__(self) -> str:
        return f"{self.name} from {self.secret_name}/{self.secret_key}"

    def clean(self) -> None:
        checks = (
            (
                "name",
                injection.env_name_ok,
                "An env var name: letters, digits, '_', '-', '.', no leading digit.",
            ),
            (
                "secret_name",
                injection.secret_name_ok,
                "A Secret name: lowercase letters, digits, '-' and '.'.",
            ),
            ("secret_key", injection.secret_key_ok, "A Secret key: letters, digits, '-', '_' and '.'."),
        )
        problems = {field: hint for field, ok, hint in checks if not ok(getattr(self, field))}
        if problems:
            raise ValidationError(problems)

    def as_secret_env(self) -> injection.SecretEnv:
        _require_clean(self, f"env var {self.name!r}")
        return injection.SecretEnv(self.name, self.secret_name, self.secret_key, self.optional)


def _require_clean(row: models.Model, what: str) -> None:
    """A ValueError naming `what` when a stored row fails its own clean() (edited outside the admin, say):
    the webhook applies no malformed rule."""
    try:
        row.clean()
    except ValidationError as invalid:
        raise ValueError(f"{what} is invalid: {invalid.messages}") from invalid


def _secret_name_problems(names: object) -> list[str]:
    if not isinstance(names, list):
        return ["must be a list of Secret names"]
    return [f"{name!r} is not a Secret name" for name in names if not injection.secret_name_ok(name)]
