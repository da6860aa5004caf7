"""Submit: paste or upload one resource as YAML → checked with the webhook's rules and previewed with the
controllers' render logic → created in the cluster through the app's actions (dashboard.submission)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core import validators
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from access.scopes import request_scope
from dashboard import submission
from dashboard.submission import Problem, Rejected
from web import bodies

from .common import page

SAMPLE = """apiVersion: argoml.io/v1alpha1
kind: PyTorchJob
metadata:
  name: mnist
  namespace: team-a
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: example.io/mnist:1
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: example.io/mnist:1
"""


class SubmitForm(forms.Form):
    manifest = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 22, "spellcheck": "false", "autocomplete": "off"}),
        label="Manifest (YAML)",
    )
    upload = forms.FileField(required=False, label="…or upload a file")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The pasted text has the uploads' limit; longer form fields Django refuses before any view runs.
        self.fields["manifest"].validators.append(validators.MaxLengthValidator(settings.MAX_UPLOAD_BYTES))

    def text(self) -> str:
        upload = self.cleaned_data.get("upload")
        if upload is not None:
            try:
                return upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise Rejected([Problem("", f"{upload.name} is not UTF-8 text")]) from None
        return self.cleaned_data.get("manifest") or ""


class NotAllowed(Rejected):
    """The user may not write in the document's namespace: answered 403, before any expensive check."""


def _checked(request: HttpRequest, text: str) -> dict[str, Any]:
    """Parse (bounded), check access, then check the document; raises Rejected with every problem.

    Access comes before the webhook's rules so that a user with no grant cannot make the server lint,
    expand or preview a large document (issue 16)."""
    manifest = submission.parse(text)
    _, namespace, _ = submission.identity(manifest)
    if namespace and not request_scope(request).can_write(namespace):
        raise NotAllowed(
            [Problem("metadata.namespace", f"you may not create resources in namespace {namespace!r}")]
        )
    problems = submission.check(manifest)
    if problems:
        raise Rejected(problems)
    return manifest


def _created_url(created: submission.Created) -> str:
    if created.kind == submission.SWEEP_KIND:
        return reverse("dashboard:sweep-by-name", args=[created.namespace, created.name])
    if created.kind == submission.TENSORBOARD_KIND:
        return f"{reverse('dashboard:tensorboards')}?namespace={created.namespace}"
    return reverse("dashboard:job-by-name", args=[created.namespace, created.kind, created.name])


@page
def submit(request: HttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"kinds": submission.submittable_kinds(), "sample": SAMPLE}
    if request.method != "POST":
        context["form"] = SubmitForm(initial={"manifest": SAMPLE})
        return render(request, "dashboard/submit.html", context)
    form = SubmitForm(request.POST, request.FILES)
    context["form"] = form
    refused = bodies.upload_refused(request)  # the upload handler stopped reading a file past the limit
    if refused:
        form.add_error("upload", refused)
        return render(request, "dashboard/submit.html", context, status=413)
    if not form.is_valid():
        return render(request, "dashboard/submit.html", context, status=400)
    try:
        text = form.text()
        if form.cleaned_data.get("upload") is not None:
            # The form shows what was uploaded, so the next click submits the same text.
            form = SubmitForm({"manifest": text})
            form.is_valid()
            context["form"] = form
        manifest = _checked(request, text)
        if request.POST.get("action") == "create":
            created = submission.create(manifest)
            note = f" {created.note}" if created.note else ""
            messages.success(request, f"Created {created.kind} {created.namespace}/{created.name}.{note}")
            return HttpResponseRedirect(_created_url(created))
        context["preview"] = submission.preview(manifest)
    except Rejected as rejected:
        context["problems"] = rejected.problems
        status = 403 if isinstance(rejected, NotAllowed) else 422
        return render(request, "dashboard/submit.html", context, status=status)
    return render(request, "dashboard/submit.html", context)
