"""Which namespaces a user may act in. The one place that answers it; APIs and pages call these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from .models import NamespaceGrant, Role


@dataclass(frozen=True)
class NamespaceScope:
    """The namespaces a user can read and write. `everywhere` is a superuser's scope."""

    readable: frozenset[str]
    writable: frozenset[str]
    everywhere: bool = False

    def can_read(self, namespace: str) -> bool:
        return self.everywhere or namespace in self.readable

    def can_write(self, namespace: str) -> bool:
        return self.everywhere or namespace in self.writable

    def allows(self, namespace: str, role: Role) -> bool:
        return self.can_write(namespace) if role == Role.EDITOR else self.can_read(namespace)


NO_SCOPE = NamespaceScope(readable=frozenset(), writable=frozenset())
EVERYWHERE = NamespaceScope(readable=frozenset(), writable=frozenset(), everywhere=True)


def scope_for(user: AbstractBaseUser | AnonymousUser) -> NamespaceScope:
    """One query: the user's own grants and their groups' grants; an editor can also read."""
    if not user.is_authenticated or not user.is_active:
        return NO_SCOPE
    if getattr(user, "is_superuser", False):
        return EVERYWHERE
    grants = NamespaceGrant.objects.filter(Q(user=user) | Q(group__user=user)).values_list(
        "namespace", "role"
    )
    readable: set[str] = set()
    writable: set[str] = set()
    for namespace, role in grants:
        readable.add(namespace)
        if role == Role.EDITOR:
            writable.add(namespace)
    return NamespaceScope(readable=frozenset(readable), writable=frozenset(writable))


def request_scope(request: Any) -> NamespaceScope:
    """The scope of the request's user, computed once per request (one query): a page's HttpRequest or an
    API view's DRF Request."""
    scope = getattr(request, "_namespace_scope", None)
    if scope is None:
        scope = scope_for(request.user)
        request._namespace_scope = scope
    return scope


def filter_readable(queryset: QuerySet, scope: NamespaceScope, field: str = "namespace") -> QuerySet:
    """Restrict any queryset with a namespace column to what the scope may read."""
    if scope.everywhere:
        return queryset
    return queryset.filter(**{f"{field}__in": sorted(scope.readable)})
