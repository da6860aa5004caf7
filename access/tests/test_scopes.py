"""A user's reach: own grants, their groups' grants, editors can read, superusers reach everywhere."""

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.db import IntegrityError

from access.models import NamespaceGrant, Role
from access.scopes import filter_readable, scope_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner")


@pytest.fixture
def teammate(django_user_model):
    return django_user_model.objects.create_user("teammate")


def test_a_user_without_grants_reaches_nothing(owner):
    scope = scope_for(owner)
    assert not scope.can_read("team-a")
    assert not scope.can_write("team-a")


def test_anonymous_users_reach_nothing():
    assert scope_for(AnonymousUser()).readable == frozenset()


def test_a_viewer_grant_lets_read_but_not_write(owner):
    NamespaceGrant.objects.create(user=owner, namespace="team-a", role=Role.VIEWER)
    scope = scope_for(owner)
    assert scope.can_read("team-a")
    assert not scope.can_write("team-a")
    assert not scope.can_read("team-b")


def test_an_editor_grant_lets_read_and_write(owner):
    NamespaceGrant.objects.create(user=owner, namespace="team-a", role=Role.EDITOR)
    scope = scope_for(owner)
    assert scope.can_read("team-a")
    assert scope.can_write("team-a")


def test_group_grants_reach_every_member(owner, teammate):
    group = Group.objects.create(name="ml-team")
    owner.groups.add(group)
    NamespaceGrant.objects.create(group=group, namespace="shared", role=Role.EDITOR)
    assert scope_for(owner).can_write("shared")
    assert not scope_for(teammate).can_read("shared")


def test_the_strongest_of_user_and_group_grants_wins(owner):
    group = Group.objects.create(name="ml-team")
    owner.groups.add(group)
    NamespaceGrant.objects.create(user=owner, namespace="shared", role=Role.VIEWER)
    NamespaceGrant.objects.create(group=group, namespace="shared", role=Role.EDITOR)
    assert scope_for(owner).can_write("shared")


def test_an_inactive_user_reaches_nothing(owner):
    NamespaceGrant.objects.create(user=owner, namespace="team-a", role=Role.EDITOR)
    owner.is_active = False
    owner.save()
    assert not scope_for(owner).can_read("team-a")


def test_a_superuser_reaches_every_namespace(django_user_model):
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    scope = scope_for(root)
    assert scope.can_write("any-namespace-at-all")


def test_the_scope_costs_one_query(owner, django_assert_num_queries):
    group = Group.objects.create(name="g")
    owner.groups.add(group)
    NamespaceGrant.objects.create(user=owner, namespace="a")
    NamespaceGrant.objects.create(group=group, namespace="b")
    with django_assert_num_queries(1):
        scope = scope_for(owner)
    assert scope.readable == {"a", "b"}


def test_a_grant_names_exactly_one_subject(owner):
    with pytest.raises(IntegrityError):
        NamespaceGrant.objects.create(namespace="nobody")


def test_a_user_has_one_grant_per_namespace(owner):
    NamespaceGrant.objects.create(user=owner, namespace="team-a")
    with pytest.raises(IntegrityError):
        NamespaceGrant.objects.create(user=owner, namespace="team-a", role=Role.EDITOR)


def test_querysets_are_filtered_to_readable_namespaces(owner):
    NamespaceGrant.objects.create(user=owner, namespace="team-a")
    other = NamespaceGrant.objects.create(group=Group.objects.create(name="x"), namespace="team-b")
    visible = filter_readable(NamespaceGrant.objects.all(), scope_for(owner))
    assert list(visible.values_list("namespace", flat=True)) == ["team-a"]
    assert other not in visible
