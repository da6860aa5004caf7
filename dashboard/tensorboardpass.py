"""Who may use a TensorBoard on its own origin (docs/security.md, "The TensorBoard proxy").

The TensorBoard origin never reads the dashboard's session: a page a TensorBoard serves is a tenant's
content, so that origin trusts only what the dashboard handed it for one instance.

- A *ticket*: minted by the dashboard's Open (a POST with its CSRF token, by a signed-in reader), carried
  once in the redirect's query string, good for TICKET_SECONDS, bound to the user, the namespace and the
  name, and redeemed once (its nonce is claimed in the cache).
- A *pass*: what a redeemed ticket becomes, a cookie of the TensorBoard origin scoped to that instance's
  path (HttpOnly, SameSite=Lax), good for TENSORBOARD_PASS_SECONDS, bound the same way.

Both are signed with SECRET_KEY (django.core.signing, a salt each, so one never reads as the other) and
carry a digest of the user's session hash, so a password change ends them. Neither is the authority: each
request re-reads the user (still active) and their grants (tensorboardproxy.py).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core import signing
from django.core.cache import cache
from django.utils.crypto import constant_time_compare, salted_hmac

#: The query parameter the Open redirect carries the ticket in.
TICKET_PARAMETER = "ticket"
#: The pass's cookie on the TensorBoard origin (one per instance: each is scoped to its own path).
COOKIE_NAME = "argoml_tensorboard"
#: A ticket is used by the redirect it rides in: a minute covers a slow network, not a link passed on.
TICKET_SECONDS = 60
#: Ours are ~200 characters; anything longer is not ours and is refused before it is verified.
MAX_TOKEN_CHARS = 1024
TICKET_SALT = "argoml.tensorboard.ticket"
PASS_SALT = "argoml.tensorboard.pass"  # noqa: S105 - a signing salt, not a secret
USER_SALT = "argoml.tensorboard.user"


class Refused(Exception):
    """A ticket or pass that lets nobody in: `message` says why (shown to the browser, names no user)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Bearer:
    """Whom a ticket or pass was issued to: the user's id and a digest of their session hash then."""

    user_id: int
    user_digest: str


class _Signer(signing.TimestampSigner):
    """Django's timestamp signer with the time it stamps injectable (tests issue tokens in the past)."""

    def __init__(self, salt: str, clock: Callable[[], float]) -> None:
        super().__init__(salt=salt)
        self.clock = clock

    def timestamp(self) -> str:
        return signing.b62_encode(int(self.clock()))


def user_digest(user: AbstractBaseUser) -> str:
    """A digest of the user's session hash (which changes with their password), not the hash itself."""
    return salted_hmac(USER_SALT, user.get_session_auth_hash()).hexdigest()


def bearer_of(user: AbstractBaseUser) -> Bearer:
    return Bearer(int(user.pk), user_digest(user))


def _issue(salt: str, bearer: Bearer, namespace: str, name: str, extra: dict[str, Any], now: float) -> str:
    payload = {"u": bearer.user_id, "h": bearer.user_digest, "ns": namespace, "n": name, **extra}
    return _Signer(salt, lambda: now).sign_object(payload)


def _read(salt: str, value: str, max_age: int, namespace: str, name: str) -> dict[str, Any]:
    if len(value) > MAX_TOKEN_CHARS:
        raise Refused("It is not one the dashboard issued.")
    try:
        payload = _Signer(salt, time.time).unsign_object(value, max_age=max_age)
    except signing.SignatureExpired:
        raise Refused("It has expired.") from None
    except signing.BadSignature:
        raise Refused("It is not one the dashboard issued.") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("u"), int):
        raise Refused("It is not one the dashboard issued.")
    if (payload.get("ns"), payload.get("n")) != (namespace, name):
        raise Refused("It was issued for another TensorBoard.")
    return payload


def issue_ticket(bearer: Bearer, namespace: str, name: str, *, now: float | None = None) -> str:
    """A one-time ticket for `bearer` to open `namespace/name` on the TensorBoard origin."""
    nonce = secrets.token_urlsafe(16)
    return _issue(TICKET_SALT, bearer, namespace, name, {"x": nonce}, time.time() if now is None else now)


def read_ticket(value: str, namespace: str, name: str) -> tuple[Bearer, str]:
    """The ticket's bearer and nonce; Refused if it is forged, expired or for another instance."""
    payload = _read(TICKET_SALT, value, TICKET_SECONDS, namespace, name)
    return Bearer(payload["u"], str(payload.get("h"))), str(payload.get("x"))


def claim_once(nonce: str) -> bool:
    """True the first time a ticket's nonce is claimed, False ever after (within its life, which is all
    that matters: past it the signature has expired)."""
    return bool(cache.add(f"tensorboard-ticket:{nonce}", 1, timeout=TICKET_SECONDS + 5))


def issue_pass(bearer: Bearer, namespace: str, name: str, *, now: float | None = None) -> str:
    return _issue(PASS_SALT, bearer, namespace, name, {}, time.time() if now is None else now)


def read_pass(value: str, namespace: str, name: str, max_age: int) -> Bearer:
    """The pass's bearer; Refused if it is forged, older than `max_age` seconds or for another instance."""
    payload = _read(PASS_SALT, value, max_age, namespace, name)
    return Bearer(payload["u"], str(payload.get("h")))


def holder(bearer: Bearer) -> AbstractBaseUser:
    """The user a ticket or pass names, as they are now: still there, active, same password. Refused if
    not (the user's grants are checked by the caller, on every request)."""
    user = get_user_model().objects.filter(pk=bearer.user_id, is_active=True).first()
    if user is None or not constant_time_compare(user_digest(user), bearer.user_digest):
        raise Refused("It was issued to a user who has since signed in differently or left.")
    return user
