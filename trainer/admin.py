"""Runtimes in the admin: listed with framework, scope, generation and how many TrainJobs name them; a
runtime's page shows its revisions with their diffs; its spec is edited as YAML through
`trainer.runtimes.actions` (the cluster, never the row); a runtime in use cannot be deleted. TrainJobs are
read only: state, runtime and the revision they ran (linked to the runtime's diffs), pods, history and every
progress report.

Who may do what: a namespace's runtimes and TrainJobs are seen by whoever may read the namespace (the
TrainJob counts too) and its runtimes changed by its editors; cluster runtimes are seen by every staff
user and changed only by superusers. What staff see of a cluster runtime's use (in use, its TrainJobs, the
writes its finalizer makes) comes from the namespaces they may read; superusers see the cluster's.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from access.scopes import NO_SCOPE, NamespaceScope, scope_for
from kube.errors import ApiError, ClusterNotConfigured
from trainer import constants as c
from trainer.models import (
    RuntimeRevision,
    TrainerStatusUpdate,
    TrainingRuntime,
    TrainJob,
    TrainJobHistory,
    TrainJobPod,
)
from trainer.models.runtimes import TrainingRuntimeQuerySet
from trainer.runtimes import actions, revisions
from web.admin import (
    HistoryInline,
    LiveFilter,
    MirrorAdmin,
    ReadOnlyAdmin,
    ReadOnlyInline,
    as_the_cluster_holds_it,
)


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


class InUseFilter(admin.SimpleListFilter):
    """In use as far as the namespaces you may read tell (`TrainingRuntime.objects.seen_from`)."""

    title = "in use"
    parameter_name = "in_use"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("1", "Yes"), ("0", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in ("0", "1"):
            return queryset.filter(in_use_seen=self.value() == "1")
        return queryset


class SpecForm(forms.Form):
    spec = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100, "spellcheck": "false"}),
        max_length=actions.SPEC_LIMITS.max_bytes,
        help_text="YAML, checked as Trainer checks a runtime; saved to the cluster, then kept as a revision.",
    )


@admin.register(TrainingRuntime)
class TrainingRuntimeAdmin(MirrorAdmin):
    list_display = (
        "name",
        "scope",
        "framework",
        "generation",
        "train_jobs",
        "in_use",
        "created_at",
        "deleted_at",
    )
    list_filter = ("kind", "framework", LiveFilter, InUseFilter)
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
        queryset: TrainingRuntimeQuerySet = super().get_queryset(request)  # type: ignore[assignment]
        scope = scope_for(request.user)
        if scope.everywhere:
            return queryset.seen_from(None)
        readable = sorted(scope.readable)
        queryset = queryset.filter(Q(kind=TrainingRuntime.Kind.CLUSTER) | Q(namespace__in=readable))
        return queryset.seen_from(readable)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        """Without the cluster's view, a cluster runtime's page leaves out what every write to it moves
        (`resourceVersion`, `updated_at`): the in-use finalizer follows every namespace's TrainJobs."""
        if obj is None or obj.kind != TrainingRuntime.Kind.CLUSTER or scope_for(request.user).everywhere:
            return self.fieldsets
        moved_by_others = {"updated_at", "resource_version"}
        return [
            (title, {**options, "fields": [f for f in options["fields"] if f not in moved_by_others]})
            for title, options in self.fieldsets
        ]

    @admin.display(description="TrainJobs", ordering="train_jobs")
    def train_jobs(self, runtime: TrainingRuntime) -> int:
        """The TrainJob rows (not deleted) naming it, in the namespaces you may read."""
        return int(getattr(runtime, "train_jobs", 0))

    @admin.display(description="in use", boolean=True, ordering="in_use_seen")
    def in_use(self, runtime: TrainingRuntime) -> bool:
        """A TrainJob of a namespace you may read names it (superusers: the in-use finalizer)."""
        return bool(getattr(runtime, "in_use_seen", False))

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
        """As the cluster says, in the namespaces you may read (a cluster runtime's are anyone's)."""
        if runtime.deleted_at is not None:
            return "—"
        try:
            jobs = actions.jobs_using(identity(runtime))
        except (ApiError, ClusterNotConfigured) as error:
            return f"the cluster could not be asked: {error}"
        scope: NamespaceScope = getattr(runtime, "viewer_scope", NO_SCOPE)
        readable = [job for job in jobs if scope.can_read(job.partition("/")[0])]
        return ", ".join(readable) or "none"

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        """The runtime, carrying the viewer's scope for the fields that must not show other namespaces."""
        runtime = super().get_object(request, object_id, from_field)
        if runtime is not None:
            runtime.viewer_scope = scope_for(request.user)
        return runtime

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
            except (ApiError, ClusterNotConfigured) as error:
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


# -- TrainJobs: read only --------------------------------------------------------------------------------
class TrainJobPodInline(ReadOnlyInline):
    """Every pod of the job's steps; a recreated pod shows the one it replaced as deleted."""

    model = TrainJobPod
    fk_name = "train_job"
    fields = readonly_fields = (
        "step", "job_index", "completion_index", "name", "phase", "exit_code", "restarts", "node", "message",
        "deleted_at",
    )  # fmt: skip
    ordering = ("step", "job_index", "completion_index", "created_at", "id")


class TrainJobHistoryInline(HistoryInline):
    model = TrainJobHistory


def runtime_row() -> Subquery:
    """The pk of the runtime row a TrainJob row names (kind, name; a TrainingRuntime of the job's
    namespace), the newest created before the job: a name reused later is not the one it ran."""
    runtimes = TrainingRuntime.objects.filter(
        Q(kind=c.CLUSTER_TRAINING_RUNTIME, namespace="")
        | Q(kind=c.TRAINING_RUNTIME, namespace=OuterRef("namespace")),
        kind=OuterRef("runtime_kind"),
        name=OuterRef("runtime_name"),
        created_at__lte=OuterRef("created_at"),
    )
    return Subquery(runtimes.order_by("-created_at", "-id").values("pk")[:1])


@admin.register(TrainJob)
class TrainJobAdmin(MirrorAdmin):
    list_display = (
        "name", "namespace", "state", "runtime", "revision", "progress", "steps_summary", "created_at",
        "completion_time",
    )  # fmt: skip
    list_filter = ("phase", LiveFilter, "runtime_kind", "namespace")
    search_fields = ("^name", "^runtime_name")
    inlines = (TrainJobPodInline, TrainJobHistoryInline)
    fieldsets = (
        (None, {"fields": ("namespace", "name", "uid", "phase", "state_reason", "state_message")}),
        ("Runtime", {"fields": ("runtime_kind", "runtime_name", "revision")}),
        ("Progress", {"fields": ("steps_summary", "progress", "estimated_remaining_seconds", "reports")}),
        ("Times", {"fields": ("created_at", "start_time", "completion_time", "updated_at", "deleted_at")}),
        as_the_cluster_holds_it(),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request).annotate(runtime_pk=runtime_row())
        scope = scope_for(request.user)
        return queryset if scope.everywhere else queryset.filter(namespace__in=sorted(scope.readable))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*super().get_readonly_fields(request, obj), "revision", "progress", "reports"]

    @admin.display(description="state", ordering="phase")
    def state(self, job: TrainJob) -> str:
        return f"{job.phase} (deleted)" if job.deleted_at else job.phase

    @admin.display(description="runtime", ordering="runtime_name")
    def runtime(self, job: TrainJob) -> str:
        return f"{job.runtime_kind} {job.runtime_name}"

    @admin.display(description="revision ran")
    def revision(self, job: TrainJob) -> SafeString | str:
        """The runtime generation it started from, linked to the runtime's page with each revision's diff."""
        runtime_pk = getattr(job, "runtime_pk", None)
        if job.runtime_generation is None:
            return "—"
        if runtime_pk is None:
            return f"generation {job.runtime_generation} (runtime not mirrored)"
        url = reverse("admin:trainer_trainingruntime_change", args=[runtime_pk])
        return format_html('<a href="{}#revisions-group">generation {}</a>', url, job.runtime_generation)

    @admin.display(description="progress", ordering="progress_percentage")
    def progress(self, job: TrainJob) -> str:
        return "—" if job.progress_percentage is None else f"{job.progress_percentage}%"

    @admin.display(description="progress reports")
    def reports(self, job: TrainJob) -> SafeString | str:
        count = TrainerStatusUpdate.objects.of(job).count()
        if not count:
            return "none"
        url = reverse("admin:trainer_trainerstatusupdate_changelist")
        query = urlencode({"namespace": job.namespace, "trainjob_name": job.name, "trainjob_uid": job.uid})
        return format_html('<a href="{}?{}">{} reports</a>', url, query, count)


@admin.register(TrainerStatusUpdate)
class TrainerStatusUpdateAdmin(ReadOnlyAdmin):
    """Every progress report a TrainJob's pods pushed (KEP-2779), read only, in your namespaces."""

    list_display = (
        "trainjob_name",
        "namespace",
        "pod",
        "progress",
        "metrics_text",
        "reported_at",
        "received_at",
    )
    list_filter = ("namespace",)
    search_fields = ("^trainjob_name",)
    ordering = ("-received_at", "-id")
    list_per_page = 100
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        scope = scope_for(request.user)
        return queryset if scope.everywhere else queryset.filter(namespace__in=sorted(scope.readable))

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        return lookup in ("trainjob_name", "trainjob_uid") or super().lookup_allowed(lookup, value, request)

    @admin.display(description="progress", ordering="progress_percentage")
    def progress(self, update: TrainerStatusUpdate) -> str:
        return "—" if update.progress_percentage is None else f"{update.progress_percentage}%"

    @admin.display(description="metrics")
    def metrics_text(self, update: TrainerStatusUpdate) -> str:
        metrics = update.metrics if isinstance(update.metrics, list) else []
        shown = (f"{m.get('name')}={m.get('value')}" for m in metrics if isinstance(m, dict))
        return ", ".join(shown) or "—"
