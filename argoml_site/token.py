"""POST /api/token/: a username and password in, the user's API token out (created on first use). The
README's way to get a token without the admin. Throttled per address, and locked like the sign-in pages.

Wrong credentials are a 401 (the caller is not authenticated), a body without them a 400 naming the field,
as the schema documents."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.response import Response

from web import bodies, signin
from web.throttling import AnonThrottle, TokenThrottle

WRONG_CREDENTIALS = _("Unable to log in with provided credentials.")  # DRF's own words


class ObtainTokenView(ObtainAuthToken):
    throttle_classes = [AnonThrottle, TokenThrottle]
    # Its 401 names the scheme the token is then used with (WWW-Authenticate: Token); no session, no CSRF.
    authentication_classes = [TokenAuthentication]
    # DRF's view names its own parsers, which read a JSON body whole whatever its size: ours bound it first.
    parser_classes = [bodies.JSONParser, bodies.YAMLParser, bodies.FormParser, bodies.MultiPartParser]

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        username = str(request.data.get("username") or "") if hasattr(request.data, "get") else ""
        address = signin.client_address(request._request, settings.SIGNIN_CLIENT_ADDRESS_HEADER)
        wait = signin.locked_for(username, address)
        if wait:
            raise exceptions.Throttled(wait=wait, detail=signin.lock_message(wait))
        try:
            response = super().post(request, *args, **kwargs)
        except exceptions.ValidationError as error:
            signin.record_failure(username, address)
            if _wrong_credentials(error):
                raise exceptions.AuthenticationFailed(
                    _("Unable to log in with provided credentials.")
                ) from None
            raise
        signin.record_success(username)
        return response


def _wrong_credentials(error: exceptions.ValidationError) -> bool:
    """DRF's serializer says "Unable to log in" with the code `authorization`; missing fields are others."""
    codes = error.get_codes()
    return isinstance(codes, dict) and codes.get("non_field_errors") == ["authorization"]
