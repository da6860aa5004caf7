"""Who a request comes from, with the groups Kubernetes assigns (system:authenticated, ...)."""

from __future__ import annotations

from dataclasses import dataclass, field

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
MASTERS = "system:masters"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ADMIN = "kubernetes-admin"


@dataclass(frozen=True)
class User:
    """An authenticated user as the apiserver's `user.Info`: name, uid, groups, extra."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict, hash=False, compare=False)

    def as_user_info(self) -> dict[str, object]:
        """The `userInfo` of a TokenReview, SelfSubjectReview or AdmissionReview."""
        info: dict[str, object] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            info["uid"] = self.uid
        if self.extra:
            info["extra"] = {k: list(v) for k, v in self.extra.items()}
        return info


def service_account_name(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def parse_service_account(username: str) -> tuple[str, str] | None:
    """`system:serviceaccount:ns:name` → (ns, name); None for any other user."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, _, name = username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
    return (namespace, name) if namespace and name and ":" not in name else None


def service_account_user(
    namespace: str, name: str, uid: str, extra: dict[str, list[str]] | None = None
) -> User:
    """A ServiceAccount's identity with the groups the token authenticator adds."""
    return User(
        service_account_name(namespace, name),
        (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED),
        uid,
        extra or {},
    )


def with_authenticated(user: User) -> User:
    """Every authenticated user is in system:authenticated (added once, last, as the apiserver does)."""
    if AUTHENTICATED in user.groups:
        return user
    return User(user.name, (*user.groups, AUTHENTICATED), user.uid, user.extra)


ANONYMOUS_USER = User(ANONYMOUS, (UNAUTHENTICATED,))
