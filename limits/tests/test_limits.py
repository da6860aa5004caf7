import dataclasses
from pathlib import Path

import pytest

import limits


def test_every_bound_is_a_positive_whole_number_with_its_own_setting():
    names = [limits.Limits.setting_name(field) for field in limits.fields()]
    assert len(set(names)) == len(names)
    for field in dataclasses.fields(limits.Limits):
        value = getattr(limits.DEFAULTS, field.name)
        assert isinstance(value, int)
        assert value > 0


def test_an_override_holds_for_its_block_only():
    before = limits.current()
    with limits.overridden(replicas_per_job=7) as inside:
        assert inside.replicas_per_job == 7
        assert limits.current().replicas_per_job == 7
        assert limits.current().trials_per_sweep == before.trials_per_sweep
    assert limits.current() == before


def test_an_override_of_a_field_that_does_not_exist_is_refused():
    with pytest.raises(TypeError), limits.overridden(replicas=7):
        pass


def test_the_message_names_the_bound_its_setting_and_the_count():
    with limits.overridden(replicas_per_job=1000):
        message = limits.too_many("replicas", 100_000, "replicas_per_job")
    assert message == "must be at most 1000 replicas (MAX_REPLICAS_PER_JOB), not 100000"


def test_every_bound_is_in_the_one_table_of_docs_security():
    """docs/security.md "Limits" is the one table of bounds: a field added here without a row there (its
    setting, default and why) fails."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    section = text.split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[2].strip(" `") for line in section.splitlines() if line.startswith("| ")}
    missing = [limits.Limits.setting_name(field) for field in limits.fields()]
    assert [name for name in missing if name not in rows] == []
