"""Sharing from the inspector (issue 15): a conversation's owner says who else may view it,
on the conversation page. A viewer views, never drives (MEM-9); each change is in the
journal; the admin shares through the same service."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from buffers.models import Action, Conversation, SharedWithGroup, SharedWithUser
from tests.buffers import acting_user, assistant, signed_in, store, user

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


@pytest.fixture
def bob(django_user_model: Any) -> User:
    bob: User = django_user_model.objects.create_user("bob")
    return bob


@pytest.fixture
def conversation() -> Conversation:
    return store([user("go"), assistant("c1")], title="shared run")


def share(client: Client, conversation: Conversation, username: str, htmx: bool = True) -> Any:
    return client.post(
        f"/c/{conversation.pk}/share", {"username": username}, headers=HX if htmx else {}
    )


def unshare(client: Client, conversation: Conversation, username: str, htmx: bool = True) -> Any:
    return client.post(
        f"/c/{conversation.pk}/unshare", {"username": username}, headers=HX if htmx else {}
    )


def journal(conversation: Conversation) -> list[tuple[str, str, str, list[Any]]]:
    return [
        (c.action, c.via, c.actor_name, c.rows)
        for c in conversation.changes.order_by("at", "id")
        if c.action != Action.IMPORT
    ]


def test_the_owner_shares_by_username_and_the_panel_swaps_in_place(
    client: Client, conversation: Conversation, bob: User
) -> None:
    answer = share(client, conversation, "bob")

    assert answer.status_code == 200
    assert "{#" not in answer.text
    assert '<section id="sharing"' in answer.text
    assert '<span class="viewer">bob</span>' in answer.text
    assert "Shared with bob: they may view it, never drive it." in answer.text
    assert "<html" not in answer.text
    assert list(conversation.viewers.all()) == [bob]
    assert journal(conversation) == [
        ("owner", "inspector", "tester", [{"change": "viewer added", "user": "bob"}])
    ]


def test_the_viewer_then_sees_it_and_cannot_drive_it(
    client: Client, conversation: Conversation, bob: User
) -> None:
    as_bob = signed_in(bob)
    assert as_bob.get(f"/c/{conversation.pk}/").status_code == 404

    share(client, conversation, "bob")

    page = as_bob.get(f"/c/{conversation.pk}/")
    assert page.status_code == 200
    assert "Only its owner" in page.text
    assert 'id="user-form"' not in page.text
    turn = as_bob.post(f"/c/{conversation.pk}/append", {"kind": "user", "user-content": "hi"})
    assert turn.status_code == 403
    conversation.refresh_from_db()
    assert conversation.message_count == 2


def test_the_owner_stops_sharing_and_the_viewer_loses_sight_of_it(
    client: Client, conversation: Conversation, bob: User
) -> None:
    share(client, conversation, "bob")

    answer = unshare(client, conversation, "bob")

    assert "bob can no longer view it." in answer.text
    assert '<span class="viewer">bob</span>' not in answer.text
    assert "No one by name: only you can see it." in answer.text
    assert signed_in(bob).get(f"/c/{conversation.pk}/").status_code == 404
    assert [rows for *_, rows in journal(conversation)] == [
        [{"change": "viewer added", "user": "bob"}],
        [{"change": "viewer removed", "user": "bob"}],
    ]


def test_without_javascript_sharing_posts_then_redirects_to_the_panel(
    client: Client, conversation: Conversation, bob: User
) -> None:
    answer = share(client, conversation, "bob", htmx=False)

    assert answer.status_code == 302
    assert answer["Location"] == f"/c/{conversation.pk}/#sharing"
    page = client.get(answer["Location"]).text
    assert "Shared with bob: they may view it, never drive it." in page
    assert '<span class="viewer">bob</span>' in page

    gone = unshare(client, conversation, "bob", htmx=False)
    assert gone.status_code == 302
    assert "bob can no longer view it." in client.get(gone["Location"]).text


def test_an_unknown_username_is_told_and_kept_in_the_field(
    client: Client, conversation: Conversation
) -> None:
    answer = share(client, conversation, "nobody-here")

    assert "No one here has the username &#x27;nobody-here&#x27;." in answer.text
    assert 'value="nobody-here"' in answer.text
    assert 'aria-invalid="true"' in answer.text
    assert not conversation.viewers.exists()
    assert journal(conversation) == []

    page = client.get(share(client, conversation, "nobody-here", htmx=False)["Location"])
    assert "No one here has the username &#x27;nobody-here&#x27;." in page.text


def test_an_inactive_account_is_as_unknown(client: Client, conversation: Conversation) -> None:
    User.objects.create_user("gone", is_active=False)

    answer = share(client, conversation, "gone")

    assert "No one here has the username &#x27;gone&#x27;." in answer.text
    assert not conversation.viewers.exists()


def test_the_owner_cannot_share_with_themselves(client: Client, conversation: Conversation) -> None:
    answer = share(client, conversation, "tester")

    assert "tester owns this conversation: they can view and drive it." in answer.text
    assert not conversation.viewers.exists()
    assert journal(conversation) == []


def test_an_empty_username_asks_for_one(client: Client, conversation: Conversation) -> None:
    answer = share(client, conversation, "   ")

    assert "Type the username of the person to share it with." in answer.text
    assert not conversation.viewers.exists()


@pytest.mark.parametrize("typed", ["bo\x00b", "bob\x01", "b" * 10_000])
def test_a_username_no_account_can_have_is_as_unknown_never_an_error(
    client: Client, conversation: Conversation, bob: User, typed: str
) -> None:
    for answer in (share(client, conversation, typed), unshare(client, conversation, typed)):
        assert answer.status_code == 200
        assert "No one here has" in answer.text or "not shared with" in answer.text
    assert not conversation.viewers.exists()


def test_sharing_twice_shares_once_and_says_so(
    client: Client, conversation: Conversation, bob: User
) -> None:
    share(client, conversation, "bob")

    answer = share(client, conversation, "bob")

    assert "bob can already view it." in answer.text
    assert SharedWithUser.objects.filter(conversation=conversation).count() == 1
    assert len(journal(conversation)) == 1


def test_stopping_a_share_that_is_not_there_says_so(
    client: Client, conversation: Conversation, bob: User
) -> None:
    answer = unshare(client, conversation, "bob")

    assert "This conversation is not shared with &#x27;bob&#x27;." in answer.text
    assert journal(conversation) == []


def test_a_viewer_whose_account_was_closed_can_still_be_removed(
    client: Client, conversation: Conversation, bob: User
) -> None:
    share(client, conversation, "bob")
    User.objects.filter(pk=bob.pk).update(is_active=False)

    answer = unshare(client, conversation, "bob")

    assert "bob can no longer view it." in answer.text
    assert not conversation.viewers.exists()


@pytest.mark.rule("MEM-9")
@pytest.mark.parametrize(("who", "status"), [("viewer", 403), ("staff", 403), ("other", 404)])
def test_only_the_owner_shares_and_the_others_change_nothing(
    conversation: Conversation, bob: User, who: str, status: int
) -> None:
    """As the access policy says: those who may view it get a 403, others a 404."""
    conversation.viewers.add(bob)
    caller = {
        "viewer": bob,
        "staff": User.objects.create_user("staff", is_staff=True),
        "other": User.objects.create_user("other"),
    }[who]
    User.objects.create_user("carol")

    added = share(signed_in(caller), conversation, "carol")
    removed = unshare(signed_in(caller), conversation, "bob")

    assert (added.status_code, removed.status_code) == (status, status)
    assert list(conversation.viewers.all()) == [bob]
    assert journal(conversation) == []


def test_only_the_owner_sees_the_panel(conversation: Conversation, bob: User) -> None:
    conversation.viewers.add(bob)
    staff = User.objects.create_user("staff", is_staff=True)

    as_owner = signed_in(acting_user()).get(f"/c/{conversation.pk}/").text
    as_viewer = signed_in(bob).get(f"/c/{conversation.pk}/").text
    as_staff = signed_in(staff).get(f"/c/{conversation.pk}/").text

    assert '<section id="sharing"' in as_owner
    assert '<span class="viewer">bob</span>' in as_owner
    for page in (as_viewer, as_staff):
        assert 'id="sharing"' not in page
        assert "Shared with" not in page


def test_the_panel_names_the_groups_it_is_shared_with(
    client: Client, conversation: Conversation
) -> None:
    conversation.viewer_groups.add(Group.objects.create(name="reviewers"))

    page = client.get(f"/c/{conversation.pk}/").text

    assert "No one by name: only you and the groups below can see it." in page
    assert "Also every member of reviewers (groups are shared in the admin)." in page


def test_every_sharing_post_needs_its_csrf_token(conversation: Conversation, bob: User) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(acting_user())

    assert share(strict, conversation, "bob").status_code == 403
    assert unshare(strict, conversation, "bob").status_code == 403
    assert not conversation.viewers.exists()


def test_the_history_page_lists_each_sharing_change(
    client: Client, conversation: Conversation, bob: User
) -> None:
    share(client, conversation, "bob")
    unshare(client, conversation, "bob")

    html = client.get(f"/c/{conversation.pk}/history").text

    assert "<li>viewer added: bob</li>" in html
    assert "<li>viewer removed: bob</li>" in html


# The admin shares through the same service.


def admin_form(conversation: Conversation, **fields: str) -> dict[str, str]:
    return {
        "owner": str(conversation.owner_id),
        "sharedwithuser_set-TOTAL_FORMS": "0",
        "sharedwithuser_set-INITIAL_FORMS": "0",
        "sharedwithgroup_set-TOTAL_FORMS": "0",
        "sharedwithgroup_set-INITIAL_FORMS": "0",
        **fields,
    }


def test_sharing_in_the_admin_is_journalled_as_in_the_inspector(
    admin_client: Client, conversation: Conversation, bob: User
) -> None:
    url = f"/admin/buffers/conversation/{conversation.pk}/change/"
    added = admin_client.post(
        url,
        admin_form(
            conversation,
            **{"sharedwithuser_set-TOTAL_FORMS": "1", "sharedwithuser_set-0-user": str(bob.pk)},
        ),
    )
    row = SharedWithUser.objects.get(conversation=conversation)
    removed = admin_client.post(
        url,
        admin_form(
            conversation,
            **{
                "sharedwithuser_set-TOTAL_FORMS": "1",
                "sharedwithuser_set-INITIAL_FORMS": "1",
                "sharedwithuser_set-0-id": str(row.pk),
                "sharedwithuser_set-0-conversation": str(conversation.pk),
                "sharedwithuser_set-0-user": str(bob.pk),
                "sharedwithuser_set-0-DELETE": "on",
            },
        ),
    )

    assert (added.status_code, removed.status_code) == (302, 302)
    assert not conversation.viewers.exists()
    assert [(via, rows) for _, via, _, rows in journal(conversation)] == [
        ("admin", [{"change": "viewer added", "user": "bob"}]),
        ("admin", [{"change": "viewer removed", "user": "bob"}]),
    ]


def test_sharing_with_a_group_in_the_admin_is_journalled_too(
    admin_client: Client, conversation: Conversation
) -> None:
    reviewers = Group.objects.create(name="reviewers")
    url = f"/admin/buffers/conversation/{conversation.pk}/change/"
    added = admin_client.post(
        url,
        admin_form(
            conversation,
            **{
                "sharedwithgroup_set-TOTAL_FORMS": "1",
                "sharedwithgroup_set-0-group": str(reviewers.pk),
            },
        ),
    )
    row = SharedWithGroup.objects.get(conversation=conversation)
    removed = admin_client.post(
        url,
        admin_form(
            conversation,
            **{
                "sharedwithgroup_set-TOTAL_FORMS": "1",
                "sharedwithgroup_set-INITIAL_FORMS": "1",
                "sharedwithgroup_set-0-id": str(row.pk),
                "sharedwithgroup_set-0-conversation": str(conversation.pk),
                "sharedwithgroup_set-0-group": str(reviewers.pk),
                "sharedwithgroup_set-0-DELETE": "on",
            },
        ),
    )

    assert (added.status_code, removed.status_code) == (302, 302)
    assert not conversation.viewer_groups.exists()
    assert [(via, rows) for _, via, _, rows in journal(conversation)] == [
        ("admin", [{"change": "group added", "group": "reviewers"}]),
        ("admin", [{"change": "group removed", "group": "reviewers"}]),
    ]
    history = admin_client.get(url).text
    assert "<li>group added: reviewers</li>" in history
    assert "<li>group removed: reviewers</li>" in history


def test_the_admin_will_not_share_a_conversation_with_its_owner(
    admin_client: Client, conversation: Conversation
) -> None:
    answer = admin_client.post(
        f"/admin/buffers/conversation/{conversation.pk}/change/",
        admin_form(
            conversation,
            **{
                "sharedwithuser_set-TOTAL_FORMS": "1",
                "sharedwithuser_set-0-user": str(conversation.owner_id),
            },
        ),
    )

    assert answer.status_code == 200
    assert "This is its owner, who can already view and drive it." in answer.text
    assert not conversation.viewers.exists()


def test_a_viewer_reads_the_history_without_learning_who_else_may_view_it(
    client: Client, conversation: Conversation, bob: User, django_user_model: Any
) -> None:
    """Who else a conversation is shared with is the owner's and staff's to know (the page
    shows a viewer no panel); the history said it all the same."""
    django_user_model.objects.create_user("carol")
    share(client, conversation, "bob")
    share(client, conversation, "carol")
    conversation.viewer_groups.add(Group.objects.create(name="auditors"))

    as_bob = signed_in(bob).get(f"/c/{conversation.pk}/history").text
    as_owner = client.get(f"/c/{conversation.pk}/history").text

    assert "carol" not in as_bob
    assert "viewer added" not in as_bob
    assert "imported 2 messages" in as_bob, "the buffer's own history is still there"
    assert "<li>viewer added: carol</li>" in as_owner


def staff_who_may(django_user_model: Any, *codenames: str) -> Client:
    staff = django_user_model.objects.create_user("clerk", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return signed_in(staff)


def test_staff_who_may_only_view_the_shares_can_still_change_the_owner(
    conversation: Conversation, bob: User, django_user_model: Any
) -> None:
    conversation.viewers.add(bob)
    team = Group.objects.create(name="team")
    conversation.viewer_groups.add(team)
    alice = django_user_model.objects.create_user("alice")
    clerk = staff_who_may(
        django_user_model,
        "view_conversation",
        "change_conversation",
        "view_sharedwithuser",
        "view_sharedwithgroup",
    )
    user_row = SharedWithUser.objects.get(conversation=conversation)
    group_row = SharedWithGroup.objects.get(conversation=conversation)

    answer = clerk.post(
        f"/admin/buffers/conversation/{conversation.pk}/change/",
        {
            **admin_form(conversation, owner=str(alice.pk)),
            "sharedwithuser_set-TOTAL_FORMS": "1",
            "sharedwithuser_set-INITIAL_FORMS": "1",
            "sharedwithuser_set-0-id": str(user_row.pk),
            "sharedwithuser_set-0-conversation": str(conversation.pk),
            "sharedwithgroup_set-TOTAL_FORMS": "1",
            "sharedwithgroup_set-INITIAL_FORMS": "1",
            "sharedwithgroup_set-0-id": str(group_row.pk),
            "sharedwithgroup_set-0-conversation": str(conversation.pk),
        },
    )

    assert answer.status_code == 302
    conversation.refresh_from_db()
    assert conversation.owner == alice
    assert list(conversation.viewers.all()) == [bob]
    assert list(conversation.viewer_groups.all()) == [team]


def test_sharing_with_an_inactive_account_in_the_admin_is_an_error_on_its_row(
    admin_client: Client, conversation: Conversation, django_user_model: Any
) -> None:
    gone = django_user_model.objects.create_user("gone", is_active=False)

    answer = admin_client.post(
        f"/admin/buffers/conversation/{conversation.pk}/change/",
        admin_form(
            conversation,
            **{"sharedwithuser_set-TOTAL_FORMS": "1", "sharedwithuser_set-0-user": str(gone.pk)},
        ),
    )

    assert answer.status_code == 200
    assert "gone&#x27;s account is not active." in answer.text
    assert not conversation.viewers.exists()


def test_a_new_owner_who_was_a_viewer_is_no_longer_listed_as_one(
    conversation: Conversation, bob: User, django_user_model: Any
) -> None:
    conversation.viewers.add(bob)
    clerk = staff_who_may(django_user_model, "view_conversation", "change_conversation")

    answer = clerk.post(
        f"/admin/buffers/conversation/{conversation.pk}/change/",
        admin_form(conversation, owner=str(bob.pk)),
    )

    assert answer.status_code == 302
    conversation.refresh_from_db()
    assert conversation.owner == bob
    assert not conversation.viewers.exists()
    assert journal(conversation)[-1][3] == [
        {"change": "owner", "old": acting_user().username, "new": "bob"},
        {"change": "viewer removed", "user": "bob"},
    ]
