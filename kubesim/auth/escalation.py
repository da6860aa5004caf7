"""RBAC escalation prevention, as the apiserver's RBAC storage enforces it (pkg/registry/rbac/*/policybased).

A user may create or update a Role or ClusterRole only with rules they already hold, unless they have the
`escalate` verb on it; a RoleBinding or ClusterRoleBinding only to a role whose rules they hold, unless they
have the `bind` verb on that role. `system:masters` may do anything. Writes the simulator makes itself
(no user: bootstrap, the aggregation controller, the store API) are never checked.
"""

from __future__ import annotations

from typing import Any

from kubesim.auth import rbac
from kubesim.auth.gate import Gate
from kubesim.errors import ApiError
from kubesim.identity import MASTERS, User
from kubesim.store import AdmissionRequest

_ROLES = f"roles.{rbac.RBAC_GROUP}"
_CLUSTER_ROLES = f"clusterroles.{rbac.RBAC_GROUP}"
_BINDINGS = (f"rolebindings.{rbac.RBAC_GROUP}", f"clusterrolebindings.{rbac.RBAC_GROUP}")
#: what a garbage collector changes; an update touching only these is never an escalation
_BOOKKEEPING = ("ownerReferences", "finalizers", "managedFields", "resourceVersion", "generation")


def only_bookkeeping_changed(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Upstream `IsOnlyMutatingGCFields`: an update that changes nothing but owner references and
    finalizers (and what the server keeps itself) needs no escalation check."""

    def significant(obj: dict[str, Any]) -> dict[str, Any]:
        metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _BOOKKEEPING}
        return {**obj, "metadata": metadata}

    return significant(new) == significant(old)


class EscalationCheck:
    """A store admission hook; `admit` raises 403 (or 404 for a binding's missing role) on escalation."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def admit(self, request: AdmissionRequest) -> None:
        user, key, obj = request.user, request.resource.key, request.object
        if user is None or MASTERS in user.groups or obj is None or request.subresource:
            return
        if request.operation not in ("CREATE", "UPDATE"):
            return
        if key not in (_ROLES, _CLUSTER_ROLES, *_BINDINGS):
            return
        if request.old_object is not None and only_bookkeeping_changed(obj, request.old_object):
            return
        if key in _BINDINGS:
            self._check_binding(request, user, obj)
        else:
            self._check_role(request, user, obj)

    def _check_role(self, request: AdmissionRequest, user: User, role: dict[str, Any]) -> None:
        escalate = rbac.Attributes(
            user,
            "escalate",
            namespace=request.namespace,
            api_group=rbac.RBAC_GROUP,
            resource=request.resource.plural,
            name=request.name if request.operation == "UPDATE" else "",
        )
        if self.gate.allowed(escalate):
            return
        rules = [r for r in role.get("rules") or [] if isinstance(r, dict)]
        self._confirm_no_escalation(request, user, rules)

    def _check_binding(self, request: AdmissionRequest, user: User, binding: dict[str, Any]) -> None:
        reference = binding.get("roleRef") or {}
        kind, name = reference.get("kind"), str(reference.get("name") or "")
        if kind not in ("Role", "ClusterRole"):
            return  # validation refuses it
        plural = "roles" if kind == "Role" else "clusterroles"
        bind = rbac.Attributes(
            user, "bind", namespace=request.namespace, api_group=rbac.RBAC_GROUP, resource=plural, name=name
        )
        if self.gate.allowed(bind):
            return
        if kind == "Role":
            role = self.gate.store.get(_ROLES, name, request.namespace)  # 404 as upstream's role getter
        else:
            role = self.gate.store.get(_CLUSTER_ROLES, name)
        rules = [r for r in role.get("rules") or [] if isinstance(r, dict)]
        self._confirm_no_escalation(request, user, rules)

    def _confirm_no_escalation(self, request: AdmissionRequest, user: User, rules: list[rbac.Rule]) -> None:
        held = self.gate.policy().rules_for(user, request.namespace)
        message = rbac.escalation_message(user, rbac.uncovered(held, rules))
        if message is None:
            return
        plural = request.resource.plural
        raise ApiError(
            403,
            "Forbidden",
            f'{plural}.{rbac.RBAC_GROUP} "{request.name}" is forbidden: {message}',
            {"name": request.name, "group": rbac.RBAC_GROUP, "kind": plural},
        )
