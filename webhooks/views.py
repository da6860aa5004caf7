"""`POST /webhooks/validate` and `POST /webhooks/mutate`: AdmissionReview v1 in, AdmissionReview v1 out.

Served only by the webhook listener (`argoml_site.webhook_urls`), never by the web server the Ingress
exposes: the apiserver reaches the listener over TLS through its own Service, which a NetworkPolicy opens to
the apiserver alone. That is the authentication; the views need no session, token or CSRF token.
They accept only POST with a JSON body of at most WEBHOOK_MAX_BODY_BYTES (413 before it is read). A body
that is not an AdmissionReview gets 400 with a JSON error; a review always gets an answer for its `uid`,
decided within WEBHOOK_REVIEW_BUDGET_SECONDS or else per the kind's failurePolicy (`failures`). Our
webhooks have no side effects, so a dry-run review is answered exactly like a real one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.mediatypes import media_type_matches
from rest_framework.views import APIView

from web import bodies
from workflows import safeyaml

from . import failures, mutating, scaling, trainjobs, validating
from .budget import BudgetExceeded, within_budget
from .review import AdmissionRequest, MalformedReview, Verdict, parse_review, review_response
from .rulecache import current_rules

logger = logging.getLogger(__name__)

TIMED_OUT = "its review ran out of time"
INTERNAL_ERROR = "internal error"


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
    # The API server is the only caller, anonymous and from one address: the API's per-address throttle
    # (API_THROTTLE_ANON) would answer 429 past 60 admissions a minute, and failurePolicy refuse them.
    throttle_classes: list[type] = []
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnly
    http_method_names = ["post"]

    def decide(self, review: AdmissionRequest) -> Verdict:
        raise NotImplementedError

    def post(self, request: Request) -> Response:
        too_big = _body_too_big(request)
        if too_big:
            return Response({"detail": too_big}, status=413)
        if request.body and self.get_content_negotiator().select_parser(request, self.get_parsers()) is None:
            raise UnsupportedMediaType(request.content_type)  # as DRF's parsing would: an empty body is {}
        try:
            # The bounded reader, as every other body is read: its nesting past MAX_YAML_DEPTH, or a
            # number no API server stores, is a 400 naming the bound or the field.
            body = safeyaml.load_json(request.body) if request.body else {}
        except safeyaml.YamlRefused as refused:
            return Response({"detail": f"JSON parse error - {refused}"}, status=400)
        try:
            review = parse_review(body)
        except MalformedReview as malformed:
            return Response({"detail": f"not an AdmissionReview v1 request: {malformed}"}, status=400)
        try:
            verdict = within_budget(lambda: self.decide(review), settings.WEBHOOK_REVIEW_BUDGET_SECONDS)
        except BudgetExceeded:
            logger.warning(
                "admission of %s %s in %s stopped after its %ss budget",
                review.operation,
                review.display_name,
                review.namespace,
                settings.WEBHOOK_REVIEW_BUDGET_SECONDS,
            )
            verdict = failures.undecided(review, TIMED_OUT)
        except Exception:
            # The decisions handle their own failures; this is the net under them, never a traceback.
            logger.exception("admission of %s failed", review.display_name)
            verdict = failures.undecided(review, INTERNAL_ERROR)
        if review.dry_run:
            logger.debug("dry run of %s %s answered", review.operation, review.display_name)
        return Response(review_response(review, verdict))


class ValidateView(AdmissionView):
    def decide(self, review: AdmissionRequest) -> Verdict:
        if scaling.is_scale_request(review):
            return scaling.review(review, scaling.read_job)
        if trainjobs.is_trainer_request(review):
            return trainjobs.review(review, trainjobs.read_runtime)
        return validating.review(review)


class MutateView(AdmissionView):
    def decide(self, review: AdmissionRequest) -> Verdict:
        return mutating.review(review, current_rules)


def _body_too_big(request: Request) -> str:
    """Why the body is refused unread, or "". The declared length is what Django will read, no more."""
    sentence = "the body is {length} bytes; an AdmissionReview may have at most {limit} bytes"
    return bodies.past_limit(request.META, settings.WEBHOOK_MAX_BODY_BYTES, sentence)
