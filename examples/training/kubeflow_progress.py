"""Report a TrainJob's progress and metrics from its training pod, as Kubeflow's SDK does.

Kubeflow Trainer (KEP-2779) injects into every trainer container the URL of its status endpoint
(`KUBEFLOW_TRAINER_SERVER_URL`), the CA that signed the endpoint's certificate
(`KUBEFLOW_TRAINER_SERVER_CA_CERT`) and a projected ServiceAccount token of the TrainJob's own audience
(`KUBEFLOW_TRAINER_SERVER_TOKEN`, a file the kubelet rotates). A report is a POST of
`{"trainerStatus": {...}}` with that token as Bearer; the server writes it into the TrainJob's
`status.trainerStatus`.

`update_trainjob_status` here is the SDK's (`from kubeflow.trainer import update_trainjob_status`,
kubeflow 0.5.0, kubeflow/trainer/backends/kubernetes/utils.py) with `requests` alone: the same variables,
body, TLS check, timeout and throttle (at most one report every 5 s; a report inside the window is dropped
and False returned, never an exception). The SDK is not in the frameworks virtualenv, as it brings the
Kubernetes client and pydantic; Trainer's user guide gives this same request for code without it
(docs/user-guides/trainjob-progress.md, "Raw HTTP"). Two things differ, both from that guide: the token
file is read at every report (it rotates; the SDK keeps it 5 minutes), and `wait=True` waits out the
throttle instead of dropping the report, for the last one, which must not be lost.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"  # noqa: S105 - a variable's name, not a secret
#: the SDK's throttle and limits
MIN_INTERVAL_SECONDS = 5.0
MAX_METRICS = 256
TIMEOUT_SECONDS = 5

logger = logging.getLogger(__name__)


def trainer_status(
    progress_percent: int | None,
    estimated_remaining_seconds: int | None,
    metrics: Mapping[str, float | int | str] | None,
    now: datetime,
) -> dict[str, Any]:
    """The report's `trainerStatus`, as the SDK builds it: progress clamped to 0-100, the estimate to 0 or
    more, at most 256 metrics with every value as text (`str(value)`), the time in ISO 8601 with its UTC
    offset; what is None is left out."""
    status: dict[str, Any] = {"lastUpdatedTime": now.astimezone(UTC).isoformat()}
    if progress_percent is not None:
        status["progressPercentage"] = max(0, min(100, progress_percent))
    if estimated_remaining_seconds is not None:
        status["estimatedRemainingSeconds"] = max(0, estimated_remaining_seconds)
    if metrics:
        kept = list(metrics.items())[:MAX_METRICS]
        status["metrics"] = [{"name": str(name), "value": str(value)} for name, value in kept]
    return status


class Reporter:
    """One pod's reporter: its throttle, its HTTP session, and the last status the server accepted."""

    def __init__(
        self,
        environ: Mapping[str, str] = os.environ,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.environ = environ
        self.clock = clock
        self.sleep = sleep
        self.accepted: list[dict[str, Any]] = []  # every trainerStatus the server answered 200 with
        self._last_sent: float | None = None
        self._lock = threading.Lock()
        self._session: Any = None

    def seconds_until_next(self) -> float:
        """How long until a report would not be throttled."""
        if self._last_sent is None:
            return 0.0
        return max(0.0, MIN_INTERVAL_SECONDS - (self.clock() - self._last_sent))

    def update(
        self,
        progress_percent: int | None = None,
        estimated_remaining_seconds: int | None = None,
        metrics: Mapping[str, float | int | str] | None = None,
        *,
        wait: bool = False,
    ) -> bool:
        """Send one report; True when the server accepted it. False, and a warning logged, when it was
        not sent (outside a TrainJob, throttled, no token) or refused: reporting never stops training."""
        url = self.environ.get(ENV_URL)
        if not url:
            return False
        with self._lock:
            if wait:
                self.sleep(self.seconds_until_next())
            elif self.seconds_until_next() > 0:
                return False
            token = self._token()
            if not token:
                logger.debug("no token to report with")
                return False
            body = {
                "trainerStatus": trainer_status(
                    progress_percent, estimated_remaining_seconds, metrics, datetime.now(UTC)
                )
            }
            ca_file = self.environ.get(ENV_CA_CERT)
            verify: bool | str = ca_file if ca_file and os.path.exists(ca_file) else True
            import requests  # the frameworks virtualenv has it; imported here so the pure part needs nothing

            try:
                if self._session is None:
                    self._session = requests.Session()
                response = self._session.post(
                    url,
                    json=body,
                    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                    verify=verify,
                    timeout=TIMEOUT_SECONDS,
                )
            except requests.RequestException as error:
                logger.warning("Failed to send status update: %s", error)
                return False
            if response.status_code != 200:
                logger.warning("Status update failed: HTTP %s %.500s", response.status_code, response.text)
                return False
            self._last_sent = self.clock()
            self.accepted.append(response.json().get("trainerStatus") or {})
            return True

    def _token(self) -> str:
        path = self.environ.get(ENV_TOKEN)
        if not path or not os.path.exists(path):
            return ""
        try:
            with open(path) as file:
                return file.read().strip()
        except OSError as error:
            logger.warning("Unable to read token from %s: %s", path, error)
            return ""


_default = Reporter()


def update_trainjob_status(
    progress_percent: int | None = None,
    estimated_remaining_seconds: int | None = None,
    metrics: Mapping[str, float | int | str] | None = None,
    *,
    wait: bool = False,
) -> bool:
    """The SDK's function: one report from this process (see the module docstring)."""
    return _default.update(progress_percent, estimated_remaining_seconds, metrics, wait=wait)


def accepted() -> list[dict[str, Any]]:
    """The trainer statuses this process's reports were stored as, in order."""
    return list(_default.accepted)
