"""POST /api/token/: a username and password in, the user's API token out (created on first use). The
README's way to get a token without the admin. Throttled per address, and locked like the sign-in pages."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.response import Response

from . import signin
from .throttling import AnonThrottle, TokenThrottle


class ObtainTokenView(ObtainAuthToken):
    throttle_classes = [AnonThrottle, TokenThrottle]

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        username = str(request.data.get("username") or "") if hasattr(request.data, "get") else ""
        address = signin.client_address(request._request, settings.SIGNIN_CLIENT_ADDRESS_HEADER)
        wait = signin.locked_for(username, address)
        if wait:
            raise exceptions.Throttled(wait=wait, detail=signin.lock_message(wait))
        try:
            response = super().post(request, *args, **kwargs)
        except exceptions.ValidationError:
            signin.record_failure(username, address)
            raise
        signin.record_success(username)
        return response
