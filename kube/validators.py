"""Validators for Kubernetes names, worded as the apiserver words them: Django validators for forms and DRF
serializers alike (DRF runs Django validators and keys their message by the field), and an argparse type
for management commands."""

from __future__ import annotations

import argparse

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.utils.deconstruct import deconstructible

from kube import names


@deconstructible
class KubernetesNameValidator(RegexValidator):
    """Refuses a value that is not a valid name of the given format (see `names.NameFormat`).

    A RegexValidator so the OpenAPI schema states the name's pattern (drf-spectacular reads it from there),
    and clients such as schemathesis know what a valid name is; the check and its words are Kubernetes'.
    """

    def __init__(self, name_format: names.NameFormat) -> None:
        super().__init__(rf"^{name_format.regex}$")
        self.name_format = name_format

    def __call__(self, value: object) -> None:
        problems = self.name_format.problems(value) if isinstance(value, str) else ["must be a string"]
        if problems:
            raise ValidationError("; ".join(problems), code="invalid_name")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KubernetesNameValidator) and other.name_format == self.name_format

    def __hash__(self) -> int:
        return hash(self.name_format)


#: A namespace: a DNS-1123 label.
namespace_name = KubernetesNameValidator(names.NameFormat.LABEL)
#: The name of most kinds, our custom resources and Argo's Workflow included: a DNS-1123 subdomain.
object_name = KubernetesNameValidator(names.NameFormat.SUBDOMAIN)


def for_kind(kind: str) -> KubernetesNameValidator:
    """The validator of `kind`'s object names."""
    return KubernetesNameValidator(names.name_format(kind))


def namespace_argument(value: str) -> str:
    """An argparse `type=` for a command's namespace: a bad one ends the command with exit code 2 and one
    line naming the option and the problem, before any work."""
    problems = names.namespace_problems(value)
    if problems:
        raise argparse.ArgumentTypeError(f"{value!r}: {'; '.join(problems)}")
    return value
