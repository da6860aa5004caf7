"""`POST /webhooks/validate` and `POST /webhooks/mutate`: AdmissionReview v1 in, AdmissionReview v1 out.

The apiserver calls these over TLS; it is authenticated by the certificate, not as a Django user, so
they need no session, token or CSRF token. They accept only POST with a JSON body. A body that is not an
AdmissionReview gets 400 with a JSON error; a review always gets an answer for its `uid`. Our webhooks
have no side effects, so a dry-run review is answered exactly like a real one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.mediatypes import media_type_matches
from rest_framework.views import APIView

from . import mutating, validating
from .review import AdmissionRequest, MalformedReview, Verdict, parse_review, review_response
from .rulecache import current_rules

logger = logging.getLogger(__name__)


class JsonOnly(BaseContentNegotiation):
    """JSON in and JSON out, whatever the Accept header says: the apiserver sends and reads nothing else,
    and skipping the negotiation keeps the hot path short."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        parser = next(iter(parsers))
        return parser if media_type_matches(parser.media_type, request.content_type) else None

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, str(renderer.media_type)


class AdmissionView(APIView):
    """The shared handling of both endpoints; subclasses say how a request is decided."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnly
    http_method_names = ["post"]

    def decide(self, review: AdmissionRequest) -> Verdict:
        raise NotImplementedError

    def post(self, request: Request) -> Response:
        try:
            body = request.data
        except RecursionError:
            return Response({"detail": "JSON parse error - the body is nested too deeply"}, status=400)
        try:
            review = parse_review(body)
        except MalformedReview as malformed:
            return Response({"detail": f"not an AdmissionReview v1 request: {malformed}"}, status=400)
        try:
            verdict = self.decide(review)
        except Exception:
            # The decisions handle their own failures; this is the net under them, never a traceback.
            logger.exception("admission of %s failed", review.display_name)
            verdict = Verdict.deny(500, f"{review.display_name} could not be admitted (internal error)")
        if review.dry_run:
            logger.debug("dry run of %s %s answered", review.operation, review.display_name)
        return Response(review_response(review, verdict))


class ValidateView(AdmissionView):
    def decide(self, review: AdmissionRequest) -> Verdict:
        return validating.review(review)


class MutateView(AdmissionView):
    def decide(self, review: AdmissionRequest) -> Verdict:
        return mutating.review(review, current_rules)
