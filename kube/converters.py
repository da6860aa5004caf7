"""URL path converters for Kubernetes names: a URL whose namespace or name is not a valid name does not
match (404) and never reaches a view, a query or the cluster."""

from __future__ import annotations

from kube import names


class _NameConverter:
    format: names.NameFormat

    def to_python(self, value: str) -> str:
        if self.format.problems(value):
            raise ValueError(value)  # Django's resolver treats this as "no match"
        return value

    def to_url(self, value: str) -> str:
        return value


class NamespaceConverter(_NameConverter):
    """`<k8s-namespace:namespace>`: a DNS-1123 label."""

    regex = "[a-z0-9][-a-z0-9]{0,62}"
    format = names.NameFormat.LABEL


class ObjectNameConverter(_NameConverter):
    """`<k8s-name:name>`: a DNS-1123 subdomain, the names of our kinds and Argo's."""

    regex = "[a-z0-9][-a-z0-9.]{0,252}"
    format = names.NameFormat.SUBDOMAIN
