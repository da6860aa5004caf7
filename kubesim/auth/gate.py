"""Authentication and RBAC authorization in front of dispatch, as one layer (the apiserver's filter chain).

Credentials, in the apiserver's order: a TLS client certificate (CN = user, O = groups), then a bearer token
(the static admin token, a token added with `add_token`, or a ServiceAccount token this simulator issued).
Bad credentials answer 401 whatever the path; no credentials answer 401 too unless `anonymous=True`
(`--anonymous-auth`), which makes the caller system:anonymous. Then RBAC decides (403 with the
apiserver's wording).
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from kubesim.auth import rbac
from kubesim.auth.tokens import ISSUER, Claims, TokenError, TokenSigner
from kubesim.errors import ApiError
from kubesim.identity import (
    ADMIN,
    ANONYMOUS_USER,
    MASTERS,
    User,
    parse_service_account,
    service_account_user,
    with_authenticated,
)
from kubesim.server.types import ApiRequest
from kubesim.store import Store

_GROUP = "rbac.authorization.k8s.io"


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def _subject_names(certificate: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """CN and every O of a certificate as `getpeercert()` returns it."""
    common_name, organizations = "", []
    for rdn in certificate.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                common_name = value
            elif key == "organizationName":
                organizations.append(value)
    return common_name, tuple(organizations)


class Gate:
    """Authenticates and authorizes every request against the store's RBAC objects."""

    def __init__(
        self,
        store: Store,
        *,
        admin_token: str | None = None,
        anonymous: bool = False,
        audiences: tuple[str, ...] = (ISSUER,),
    ) -> None:
        self.store = store
        self.admin_token = admin_token or secrets.token_urlsafe(32)
        self.anonymous = anonymous
        self.audiences = audiences
        self.signer = TokenSigner()
        self._tokens: dict[str, User] = {self.admin_token: User(ADMIN, (MASTERS,))}
        self._policy: tuple[str, rbac.Policy] | None = None  # (store resourceVersion, policy read then)
        #: every request RBAC refused, in order: what a test asserts is empty to prove a grant sufficient
        self.denials: list[rbac.Attributes] = []

    def add_token(self, token: str, user: User) -> None:
        """Accept `token` as `user` (a static token file entry)."""
        self._tokens[token] = user

    # --- authentication ------------------------------------------------------------------------------

    def authenticate(self, request: ApiRequest) -> User:
        if request.peer_certificate:
            name, groups = _subject_names(request.peer_certificate)
            if name:
                return with_authenticated(User(name, groups))
        header = request.headers.get("authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise unauthorized()
            try:
                return self.token_user(token.strip(), self.audiences)
            except TokenError:
                raise unauthorized() from None
        if self.anonymous:
            return ANONYMOUS_USER
        raise unauthorized()

    def token_user(self, token: str, audiences: tuple[str, ...]) -> User:
        """The user a bearer token stands for (static, or a live ServiceAccount's signed token)."""
        if token in self._tokens:
            return with_authenticated(self._tokens[token])
        claims = self.signer.verify(token, int(self.store.clock.time()), audiences)
        self._check_alive(claims)
        if claims.legacy:
            self._check_held(claims, token)
        extra: dict[str, list[str]] = {}
        if claims.bound_kind == "pod":
            extra = {
                "authentication.kubernetes.io/pod-name": [claims.bound_name],
                "authentication.kubernetes.io/pod-uid": [claims.bound_uid],
            }
        return service_account_user(
            claims.namespace, claims.service_account, claims.service_account_uid, extra
        )

    def _check_held(self, claims: Claims, token: str) -> None:
        """A legacy token works while its Secret still holds it (as upstream's legacy validator)."""
        try:
            secret = self.store.get("secrets", claims.bound_name, claims.namespace)
        except ApiError:
            raise TokenError("token secret was deleted") from None
        held = (secret.get("data") or {}).get("token", "")
        if secret["metadata"].get("deletionTimestamp") or held != base64.b64encode(token.encode()).decode():
            raise TokenError("token does not match the secret")

    def _check_alive(self, claims: Claims) -> None:
        """A token stops working when its ServiceAccount (or the pod it is bound to) is deleted."""
        account = self._uid("serviceaccounts", claims.service_account, claims.namespace)
        if account != claims.service_account_uid:
            raise TokenError("service account was deleted")
        if claims.bound_kind in ("pod", "secret") and not claims.legacy:
            plural = "pods" if claims.bound_kind == "pod" else "secrets"
            if self._uid(plural, claims.bound_name, claims.namespace) != claims.bound_uid:
                raise TokenError(f"bound {claims.bound_kind} was deleted")

    def _uid(self, resource: str, name: str, namespace: str) -> str | None:
        try:
            return str(self.store.get(resource, name, namespace)["metadata"]["uid"])
        except ApiError:
            return None

    # --- authorization -------------------------------------------------------------------------------

    def policy(self) -> rbac.Policy:
        """The RBAC objects as of now, read again only after a write (reads are most requests)."""
        version = self.store.resource_version  # read first: a write meanwhile makes the next call re-read
        cached = self._policy
        if cached is not None and cached[0] == version:
            return cached[1]
        policy = self._read_policy()
        self._policy = (version, policy)
        return policy

    def _read_policy(self) -> rbac.Policy:
        store = self.store
        return rbac.Policy(
            cluster_roles={r["metadata"]["name"]: r for r in store.list(f"clusterroles.{_GROUP}")["items"]},
            cluster_role_bindings=store.list(f"clusterrolebindings.{_GROUP}")["items"],
            roles={
                (r["metadata"]["namespace"], r["metadata"]["name"]): r
                for r in store.list(f"roles.{_GROUP}")["items"]
            },
            role_bindings=store.list(f"rolebindings.{_GROUP}")["items"],
        )

    def allowed(self, attributes: rbac.Attributes) -> bool:
        return self.policy().allows(attributes)

    def _deny(self, attributes: rbac.Attributes) -> ApiError:
        self.denials.append(attributes)
        return rbac.forbidden(attributes)

    def admit(self, request: ApiRequest) -> None:
        request.user = self.impersonated(request, self.authenticate(request))
        attributes = request_attributes(request, request.user)
        if not self.allowed(attributes):
            raise self._deny(attributes)

    def impersonated(self, request: ApiRequest, user: User) -> User:
        """`Impersonate-User` / `Impersonate-Group` (kubectl --as, --as-group): allowed by the `impersonate`
        verb on users, groups or serviceaccounts, as the apiserver's impersonation filter checks."""
        name = request.headers.get("impersonate-user", "")
        groups = [v.strip() for v in request.headers.get("impersonate-group", "").split(",") if v.strip()]
        if not name:
            if groups:
                raise ApiError(500, "InternalError", "requested impersonation of groups without a user")
            return user
        account = parse_service_account(name)
        checks = (
            [
                rbac.Attributes(
                    user, "impersonate", namespace=account[0], resource="serviceaccounts", name=account[1]
                )
            ]
            if account
            else [rbac.Attributes(user, "impersonate", resource="users", name=name)]
        )
        checks += [rbac.Attributes(user, "impersonate", resource="groups", name=g) for g in groups]
        for check in checks:
            if not self.allowed(check):
                raise self._deny(check)
        if account:
            impersonated = service_account_user(account[0], account[1], "")
            return User(impersonated.name, (*impersonated.groups[:2], *groups, impersonated.groups[2]))
        return with_authenticated(User(name, tuple(groups)))


def request_attributes(request: ApiRequest, user: User) -> rbac.Attributes:
    """What the request asks, as the apiserver's RequestInfo resolver derives it from the URL."""
    route = request.route
    if route.kind != "resource":
        return rbac.Attributes(user, request.method.lower(), resource_request=False, path=request.path)
    name, namespace = route.name, route.namespace or ""
    if route.plural == "namespaces" and route.group == "" and name:
        namespace = name  # /api/v1/namespaces/x addresses namespace x
    verb = request.verb
    if verb in ("list", "watch") and not name:
        name = _selected_name(request.query.get("fieldSelector") or "")
    return rbac.Attributes(
        user,
        verb,
        namespace=namespace,
        api_group=route.group,
        resource=route.plural,
        subresource=route.subresource,
        name=name,
    )


def _selected_name(field_selector: str) -> str:
    """`metadata.name=x` in a list or watch makes it a request for object x (so resourceNames apply)."""
    for term in field_selector.split(","):
        key, operator, value = term.partition("==") if "==" in term else term.partition("=")
        if operator and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""
