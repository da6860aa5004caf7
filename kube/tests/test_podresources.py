"""kube.podresources: the first problem the API server would find in a container's resources."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kube.podresources import amount, first_problem


@pytest.mark.parametrize(
    ("value", "expected"),
    [(4, Decimal(4)), ("1500m", Decimal("1.5")), ("2Gi", Decimal(2**31)), (0, Decimal(0)), (-1, None),
     ("-1", None), (True, None), ("x", None), (None, None), ([], None)],
)  # fmt: skip
def test_amounts(value, expected):
    assert amount(value) == expected


@pytest.mark.parametrize(
    ("resources", "problem"),
    [
        (None, None),
        ({"limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 1}, "requests": {"cpu": "500m"}}, None),
        ({"limits": {"hugepages-2Mi": "1Gi"}}, None),
        ([], ("r", "must be an object with limits and/or requests")),
        ({"limits": "2"}, ("r.limits", "must be a map of resource names to quantities")),
        ({"limits": {"k0": "1"}}, ("r.limits.k0", "must be a standard resource")),
        ({"requests": {"cpu": -1}}, ("r.requests.cpu", "must be a quantity of at least 0")),
        (
            {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}},
            ("r.requests.cpu", "must be less than or equal"),
        ),
    ],
)
def test_first_problem(resources, problem):
    found = first_problem(resources, "r")
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert found[0] == problem[0]
        assert found[1].startswith(problem[1])


def test_only_the_first_of_many_wrong_keys_is_reported():
    resources = {"requests": {f"k{index}": "1" for index in range(20_000)}}
    assert first_problem(resources, "spec.resources") == (
        "spec.resources.requests.k0",
        first_problem({"requests": {"k0": "1"}}, "spec.resources")[1],
    )
