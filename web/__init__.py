"""The site's shared web code, under every app and over kube: the REST and admin bases, request bodies and
their bounds, YAML in and out, CSV cells, CSP and the response cap, the sign-in lockout and API throttles,
the OpenAPI additions, and the data-migration helper for beat schedules. No app is imported here."""
