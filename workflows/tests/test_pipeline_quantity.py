from decimal import Decimal

import pytest

from workflows.pipeline.quantity import QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("250m", Decimal("0.25")),
        ("2", Decimal(2)),
        ("0.5", Decimal("0.5")),
        ("1G", Decimal(10**9)),
        ("1Gi", Decimal(2**30)),
        ("512Mi", Decimal(512 * 2**20)),
        ("1e3", Decimal(1000)),
    ],
)
def test_quantities_are_read_in_base_units(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["lots", "", "-1", "1Gb", "1.2.3", "m"])
def test_anything_else_is_refused_with_examples(text: str) -> None:
    with pytest.raises(QuantityError, match=r"quantity|suffix"):
        parse_quantity(text)
