"""Every resource list (jobs, TrainJobs, sweeps) filters alike: by name prefix, whatever the case typed,
and never a name that merely contains the prefix; a forged page link goes back to the first page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.tests import factories

pytestmark = pytest.mark.django_db

LISTS = {
    "dashboard:jobs": lambda name: factories.job(name),
    "dashboard:trainjobs": lambda name: factories.train_job(name),
    "dashboard:sweeps": lambda name: factories.sweep(name),
}


@pytest.mark.parametrize("url_name", LISTS)
@pytest.mark.parametrize("typed", ["mnist", "MNIST", "Mnist-"])
def test_every_list_matches_a_name_prefix_whatever_its_case(as_editor, url_name, typed):
    for name in ("mnist-a", "mnist-b", "bert-mnist", "resnet"):
        LISTS[url_name](name)
    response = as_editor.get(reverse(url_name), {"name": typed})
    assert response.status_code == 200
    assert sorted(row.name for row in response.context["page"].rows) == ["mnist-a", "mnist-b"]


@pytest.mark.parametrize("url_name", LISTS)
def test_every_list_sends_a_forged_page_link_to_the_first_page_with_a_message(as_editor, url_name):
    response = as_editor.get(reverse(url_name), {"after": "not-a-cursor"}, follow=True)
    assert response.redirect_chain == [(reverse(url_name), 302)]
    assert b"out of date" in response.content
