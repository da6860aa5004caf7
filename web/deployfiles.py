"""The commands that write deploy/ files rendered from Python declarations (`render_crds`, `render_webhooks`):
the same options, and the same answers when a file is stale and when files are written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class RenderCommand(BaseCommand):
    """Writes the rendered files into a folder of deploy/ (or `--output`), or with `--check` writes nothing
    and fails naming every file missing or out of date, so CI catches a declaration changed without
    rendering. Subclasses name the folder and say in `render` what goes into it."""

    #: The folder under deploy/ the files go into unless `--output` names another.
    folder: str

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", type=Path, default=None, help=f"Directory (default: deploy/{self.folder}/)."
        )
        parser.add_argument(
            "--check", action="store_true", help="Write nothing; fail when a file is missing or out of date."
        )

    def handle(self, *args: Any, output: Path | None, check: bool, **options: Any) -> None:
        self.render(output or Path(settings.BASE_DIR) / "deploy" / self.folder, check=check)

    def render(self, root: Path, *, check: bool) -> None:
        raise NotImplementedError

    def check_fresh(self, problems: list[str], *, stale: str, fresh: str) -> None:
        """Fail with `stale` and every problem under it, one a line; or say `fresh`."""
        if problems:
            raise CommandError("{}:\n  {}".format(stale, "\n  ".join(problems)))
        self.stdout.write(fresh)

    def report_written(self, directory: Path, changed: list[str]) -> None:
        for name in changed:
            self.stdout.write(f"wrote {directory / name}")
