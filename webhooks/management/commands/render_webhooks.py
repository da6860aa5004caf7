"""`manage.py render_webhooks`: write deploy/webhooks/*.yaml from webhooks/configurations.py."""

from __future__ import annotations

from pathlib import Path

from web import deployfiles
from webhooks import render


class Command(deployfiles.RenderCommand):
    help = "Render the webhook Service and configurations into deploy/webhooks/."
    folder = "webhooks"

    def render(self, root: Path, *, check: bool) -> None:
        if check:
            self.check_fresh(
                render.stale(root),
                stale=f"deploy files in {root} are stale (run `manage.py render_webhooks`)",
                fresh=f"{len(render.FILES)} files in {root} are up to date.",
            )
            return
        self.report_written(root, render.write(root))
