"""Why a TensorBoard cannot be spawned for a source, as exceptions the API turns into specific answers.

Each error carries a stable `code` (for clients), an HTTP status (the API's answer) and a message a user can
act on; `details` hold what was found instead (artifact names, node names), so the message never has to
be parsed.
"""

from __future__ import annotations

from typing import Any


class SpawnError(Exception):
    """Base class: the source cannot become a TensorBoard as it stands."""

    status = 422
    code = "invalid_source"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        return {"detail": self.message, "code": self.code, **self.details}


class SourceNotFound(SpawnError):
    status = 404
    code = "source_not_found"


class NoTensorboardArtifacts(SpawnError):
    """The source recorded no output artifact named `tensorboard` (details: what it recorded instead)."""

    code = "no_tensorboard_artifacts"


class UnusableArtifacts(SpawnError):
    """`tensorboard` artifacts exist but none can be read (unsupported storage, deleted, unknown bucket)."""

    code = "unusable_artifacts"


class NodeStatusUnavailable(SpawnError):
    """The workflow's node status is not in the object (offloaded to Argo's database, or unreadable)."""

    code = "node_status_unavailable"


class MixedObjectStores(SpawnError):
    """Artifacts live on different S3 endpoints; one TensorBoard process talks to one endpoint."""

    code = "mixed_object_stores"


class LogdirNotAllowed(SpawnError):
    """A log directory named by the user is not under a path an administrator allowed."""

    status = 403
    code = "logdir_not_allowed"


class NameTaken(SpawnError):
    """The Tensorboard name for this source is used by an instance of another source."""

    status = 409
    code = "name_taken"
