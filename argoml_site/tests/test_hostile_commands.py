"""Bounded work in every management command: each command of our apps is classified (`doors.COMMANDS`);
the ones that read a tenant's file are run in this process on every hostile case of what they read, and
must end within the budgets of `hostile.measure` — an error naming the field (exit code 2, one line) or
their output — never a traceback (issue 27)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from .hostile import corpus, doors
from .hostile.checks import Answer, Figures, problems
from .hostile.measure import measured

CONFIG = corpus.EXAMPLES / "pipeline" / "config.yaml"
#: The arguments after the file, by command.
ARGUMENTS: dict[str, tuple[str, ...]] = {
    "render_job": (),
    "render_hyperparam": (),
    "transpile": ("--config", str(CONFIG), "-o", "-"),
    "argo_lint": (),
}


def file_cases() -> Iterator[Any]:
    documents = corpus.documents()
    for door in doors.command_doors():
        read = [documents[name] for name in door.documents]
        for document, case in corpus.distinct(read, text=True):
            yield pytest.param(door, case, id=f"{door.key} | {document.name} | {case.id}")


def test_every_command_is_classified():
    """A new command fails here (and in every test below) until COMMANDS says what it reads."""
    assert {door.key for door in doors.command_doors()} == set(doors.COMMANDS)
    assert {door.key for door in doors.COMMANDS.values() if door.reads is doors.Reads.YAML_DOCUMENT} == set(
        ARGUMENTS
    )


@pytest.fixture
def figures(hostile_figures: dict[str, Figures]) -> Figures:
    return hostile_figures.setdefault("commands", Figures("commands"))


def run(name: str, path: Path) -> Answer:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(name, str(path), *ARGUMENTS[name], stdout=out, stderr=err)
    except CommandError as error:  # its problems may be on stderr, one per line, before the summary
        return Answer(0, f"{err.getvalue()[:10_000]}\n{error}", refused=True)
    except SystemExit as exit_:
        return Answer(0, err.getvalue() + out.getvalue()[:10_000], refused=exit_.code not in (0, None))
    except Exception as error:  # an error of the command's own is what this test looks for
        return Answer(0, "", refused=False, error=f"{type(error).__name__}: {error}")
    return Answer(0, out.getvalue()[:10_000], refused=False)


@pytest.mark.django_db
@pytest.mark.parametrize(("door", "case"), list(file_cases()))
def test_every_file_a_command_reads_is_bounded(tmp_path, figures, door, case):
    path = tmp_path / "input.yaml"
    path.write_text(case.as_yaml())
    cost = measured(lambda: run(door.key, path))
    figures.record(case.family.value, f"manage.py {door.key}", cost)
    assert not problems(case, cost), (cost.figures(), problems(case, cost))
