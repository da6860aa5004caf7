"""Runtimes in the admin: listed with framework, scope, generation and whether TrainJobs use them; a
runtime's page shows its revisions with their diffs; its spec is edited as YAML through
`trainer.actions` (the cluster, never the row); a runtime in use cannot be deleted.

Who may do what: a namespace's runtimes are seen by whoever may read the namespace and changed by its
editors; cluster runtimes are seen by every staff user and changed only by superusers.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from access.scopes import scope_for
from kube.admin import LiveFilter, MirrorAdmin, ReadOnlyInline
from kube.errors import ApiError
from trainer import actions, revisions
from trainer.models import RuntimeRevision, TrainingRuntime


def identity(runtime: TrainingRuntime) -> actions.RuntimeIdentity:
    return actions.RuntimeIdentity(
        runtime.kind, runtime.namespace, runtime.name, runtime.uid, runtime.resource_version
    )


def may_change(request: HttpRequest, runtime: TrainingRuntime) -> bool:
    """Superusers change any live runtime; an editor of its namespace (with the model permission) a
    namespaced one."""
    user = request.user
    if runtime.deleted_at is not None or not user.is_active or not user.is_staff:
        return False
    if user.is_superuser:
        return True
    if runtime.kind == TrainingRuntime.Kind.CLUSTER:
        return False
    return user.has_perm("trainer.change_trainingruntime") and scope_for(user).can_write(runtime.namespace)


def diff_html(diff: str) -> SafeString:
    """A unified diff as a <pre> whose added and removed lines are coloured by classes (the CSP allows no
    inline style)."""
    if not diff:
        return format_html("<em>{}</em>", "no change to the spec (or the first revision seen)")
    classes = {"+": "diff-add", "-": "diff-del", "@": "diff-hunk"}  # trainer/static/trainer/admin.css
    lines = format_html_join(
        "\n", '<span class="{}">{}</span>', ((classes.get(line[:1], ""), line) for line in diff.splitlines())
    )
    return format_html('<pre class="runtime-diff">{}</pre>', lines)


class RevisionInline(ReadOnlyInline):
    """Every generation the mirror saw, newest first, with its diff from the one before."""

    model = RuntimeRevision
    fields = readonly_fields = ("generation", "author", "recorded_at", "changes")
    ordering = ("-generation",)

    @admin.display(description="changed by")
    def author(self, revision: RuntimeRevision) -> str:
        return revision.author

    @admin.display(description="diff from the revision before")
    def changes(self, revision: RuntimeRevision) -> SafeString:
        return diff_html(revision.diff)


class SpecForm(forms.Form):
    spec = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100, "spellcheck": "false"}),
        max_length=actions.SPEC_LIMITS.max_bytes,
        help_text="YAML, checked as Trainer checks a runtime; saved to the cluster, then kept as a revision.",
    )


@admin.register(TrainingRuntime)
class TrainingRuntimeAdmin(MirrorAdmin):
    list_display = ("name", "scope", "framework", "generation", "in_use", "created_at", "deleted_at")
    list_filter = ("kind", "framework", LiveFilter, "in_use")
    search_fields = ("^name",)
    inlines = (RevisionInline,)
    actions = None  # no bulk delete: each deletion checks the TrainJobs using the runtime
    fieldsets = (
        (None, {"fields": ("kind", "namespace", "name", "uid", "framework", "generation", "jobs_using")}),
        ("Times", {"fields": ("created_at", "updated_at", "deleting_since", "deleted_at")}),
        ("As the cluster holds it", {"fields": ("spec_yaml", "labels", "resource_version")}),
    )
    change_form_template = "admin/trainer/trainingruntime/change_form.html"

    class Media:
        css = {"all": ("trainer/admin.css",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        scope = scope_for(request.user)
        if scope.everywhere:
            return queryset
        return queryset.filter(Q(kind=TrainingRuntime.Kind.CLUSTER) | Q(namespace__in=sorted(scope.readable)))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*super().get_readonly_fields(request, obj), "spec_yaml", "jobs_using"]

    @admin.display(description="scope", ordering="namespace")
    def scope(self, runtime: TrainingRuntime) -> str:
        return runtime.scope

    @admin.display(description="spec")
    def spec_yaml(self, runtime: TrainingRuntime) -> SafeString:
        return format_html("<pre>{}</pre>", revisions.spec_text(runtime.spec))

    @admin.display(description="TrainJobs using it now")
    def jobs_using(self, runtime: TrainingRuntime) -> str:
        if runtime.deleted_at is not None:
            return "—"
        try:
            jobs = actions.jobs_using(identity(runtime))
        except ApiError as error:
            return f"the cluster could not be asked: {error}"
        return ", ".join(jobs) or "none"

    # -- deleting: from the cluster, refused while TrainJobs use the runtime ---------------------------
    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is None:
            return bool(request.user.is_superuser or request.user.has_perm("trainer.delete_trainingruntime"))
        return may_change(request, obj) and (
            request.user.is_superuser or request.user.has_perm("trainer.delete_trainingruntime")
        )

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[list[Any], dict, set, list]:
        """Deleting removes the runtime alone; TrainJobs using it are listed as protected, which makes
        the confirmation page refuse (the finalizer would keep the runtime Terminating anyway)."""
        runtimes = list(objs)
        protected: list[str] = []
        for runtime in runtimes:
            try:
                protected += [f"TrainJob {job}" for job in actions.jobs_using(identity(runtime))]
            except ApiError as error:
                protected.append(f"(the cluster could not be asked which TrainJobs use {runtime}: {error})")
        return [str(runtime) for runtime in runtimes], {"runtimes": len(runtimes)}, set(), protected

    def delete_model(self, request: HttpRequest, obj: TrainingRuntime) -> None:
        try:
            actions.delete_runtime(identity(obj))
        except actions.InUse as error:
            raise PermissionDenied(f"{obj} is {error}") from None

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id: Any) -> HttpResponse:
        self.message_user(
            request, f"{obj_display}: deletion asked of the cluster; the row is marked when it is gone."
        )
        return HttpResponseRedirect(reverse("admin:trainer_trainingruntime_changelist"))

    # -- editing the spec: one action, to the cluster ------------------------------------------------
    def get_urls(self) -> list[URLPattern]:
        edit = path(
            "<path:object_id>/spec/",
            self.admin_site.admin_view(self.edit_spec_view),
            name="trainer_trainingruntime_edit_spec",
        )
        return [edit, *super().get_urls()]

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        runtime = kwargs.get("obj")
        context["can_edit_spec"] = runtime is not None and may_change(request, runtime)
        return super().render_change_form(request, context, *args, **kwargs)

    def edit_spec_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        runtime = self.get_object(request, object_id)
        if runtime is None:
            raise Http404("No such runtime, or not one you may see.")
        if not may_change(request, runtime):
            raise PermissionDenied
        if request.method == "POST":
            form = SpecForm(request.POST)
            if form.is_valid() and self._write_spec(request, runtime, form):
                return HttpResponseRedirect(
                    reverse("admin:trainer_trainingruntime_change", args=[runtime.pk])
                )
        else:
            form = SpecForm(initial={"spec": revisions.spec_text(runtime.spec)})
        context = {
            **self.admin_site.each_context(request),
            "title": f"Edit the spec of {runtime.kind} {runtime}",
            "opts": self.opts,
            "original": runtime,
            "form": form,
        }
        return TemplateResponse(request, "admin/trainer/trainingruntime/edit_spec.html", context)

    def _write_spec(self, request: HttpRequest, runtime: TrainingRuntime, form: SpecForm) -> bool:
        """Write through the action; False with the errors on the form when it refuses."""
        try:
            stored = actions.change_runtime_spec(
                identity(runtime), form.cleaned_data["spec"], request.user.get_username()
            )
        except actions.RuntimeRejected as error:
            for problem in error.errors:
                form.add_error("spec", f"{problem.path}: {problem.message}")
            return False
        except actions.ChangedMeanwhile as error:
            form.add_error(None, f"The runtime changed meanwhile ({error}): reload it and edit again.")
            return False
        except ApiError as error:
            form.add_error(None, f"The cluster refused the change: {error}")
            return False
        if stored is None:
            self.message_user(request, "The spec is unchanged: nothing was written.", messages.INFO)
        else:
            generation = (stored.get("metadata") or {}).get("generation")
            self.message_user(request, f"Saved to the cluster as generation {generation}.", messages.SUCCESS)
        return True
