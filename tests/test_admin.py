"""The admin tier: stored conversations and their messages, the heal action with its
confirmation page, and the one place a message is edited or deleted (MEM-15), each write
through the service and into the repair journal."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from buffers import selectors
from buffers.models import Conversation, Message
from tests.buffers import assistant, placeholder, result, store, user
from tests.integrity import assert_consistent
from tests.plans import assert_message_rows_found_by_slot

pytestmark = pytest.mark.django_db


def changelist(model: str) -> str:
    return reverse(f"admin:buffers_{model}_changelist")


def change(model: str, pk: int) -> str:
    return reverse(f"admin:buffers_{model}_change", args=[pk])


def delete(model: str, pk: int) -> str:
    return reverse(f"admin:buffers_{model}_delete", args=[pk])


def add(model: str) -> str:
    return reverse(f"admin:buffers_{model}_add")


def listed(client: Client, url: str, **query: str) -> list[Any]:
    """The rows a changelist shows, in order."""
    response = client.get(url, query)
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


@pytest.fixture(autouse=True)
def fast_passwords(settings: Any) -> None:
    """admin_client's superuser gets a password; the production hasher takes a second a test."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def crashed() -> Conversation:
    return store([user("go"), assistant("c1", "c2"), result("c1")], title="crashed run", source="a")


@pytest.fixture
def answered() -> Conversation:
    return store([user("go"), assistant("c1"), result("c1")], title="answered run", source="b")


@pytest.fixture
def healed() -> Conversation:
    return store(
        [user("go"), assistant("h1"), placeholder("h1"), user("again")],
        title="healed run",
        source="c",
    )


# Reading.


def test_the_conversation_list_shows_every_conversation_with_its_counts(
    admin_client: Client, crashed: Conversation, answered: Conversation, healed: Conversation
) -> None:
    response = admin_client.get(changelist("conversation"))

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [healed, answered, crashed]
    for title in ("crashed run", "answered run", "healed run"):
        assert title in response.text
    assert '<td class="field-unanswered_count">1</td>' in response.text
    assert '<td class="field-healed_count">1</td>' in response.text


def test_the_message_list_shows_every_message(admin_client: Client, crashed: Conversation) -> None:
    response = admin_client.get(changelist("message"))

    assert response.status_code == 200
    assert response.context["cl"].result_count == 3
    assert "crashed run" in response.text


def test_the_message_list_costs_the_same_queries_for_3_or_30_messages(
    admin_client: Client,
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(changelist("message")).status_code == 200
        return len(captured.captured_queries)

    store([user("one"), user("two"), user("three")], title="few")
    few = queries()
    for n in range(9):
        store([user("a"), user("b"), user("c")], title=f"more {n}")

    assert queries() == few


def test_a_conversation_page_shows_its_counters(
    admin_client: Client, crashed: Conversation
) -> None:
    response = admin_client.get(change("conversation", crashed.pk))

    assert response.status_code == 200
    assert "crashed run" in response.text
    assert "Declared calls with no result anywhere." in response.text


def test_a_message_page_renders(admin_client: Client, crashed: Conversation) -> None:
    message = Message.objects.filter(conversation=crashed, role="tool").get()

    response = admin_client.get(change("message", message.pk))

    assert response.status_code == 200
    assert "c1" in response.text


def test_markup_in_a_title_is_escaped_in_the_admin(admin_client: Client) -> None:
    conversation = store([user("hi")], title="<script>alert(1)</script>")

    for url in (changelist("conversation"), change("conversation", conversation.pk)):
        response = admin_client.get(url)
        assert "<script>alert(1)</script>" not in response.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text


# Read-only.


@pytest.mark.parametrize("model", ["conversation", "message"])
def test_there_is_no_add(admin_client: Client, model: str) -> None:
    response = admin_client.get(changelist(model))

    assert response.context["has_add_permission"] is False
    assert add(model) not in response.text
    assert admin_client.get(add(model)).status_code == 403
    assert admin_client.post(add(model), {"title": "new"}).status_code == 403


def test_a_conversation_page_edits_only_who_may_see_it_and_has_no_delete(
    admin_client: Client, crashed: Conversation
) -> None:
    response = admin_client.get(change("conversation", crashed.pk))

    assert response.context["has_delete_permission"] is False
    assert delete("conversation", crashed.pk) not in response.text
    assert 'name="owner"' in response.text
    assert 'name="sharedwithuser_set-TOTAL_FORMS"' in response.text
    assert 'name="sharedwithgroup_set-TOTAL_FORMS"' in response.text
    assert 'name="title"' not in response.text


def sharing_form(owner: int | str | None = "", **fields: str) -> dict[str, Any]:
    return {
        "owner": "" if owner is None else owner,
        "sharedwithuser_set-TOTAL_FORMS": "0",
        "sharedwithuser_set-INITIAL_FORMS": "0",
        "sharedwithgroup_set-TOTAL_FORMS": "0",
        "sharedwithgroup_set-INITIAL_FORMS": "0",
        **fields,
    }


def test_posting_a_change_to_a_conversation_changes_its_owner_and_nothing_else(
    admin_client: Client, crashed: Conversation, django_user_model: Any
) -> None:
    alice = django_user_model.objects.create_user("alice")
    response = admin_client.post(
        change("conversation", crashed.pk),
        sharing_form(alice.pk, title="renamed", scope="user", scope_id="1", key="k"),
    )

    assert response.status_code == 302
    crashed.refresh_from_db()
    assert crashed.owner == alice
    assert (crashed.title, crashed.scope, crashed.key) == ("crashed run", "global", crashed.key)


def test_giving_a_conversation_another_owner_in_the_admin_is_journalled(
    admin_client: Client, crashed: Conversation, django_user_model: Any
) -> None:
    old_owner = crashed.owner
    assert old_owner is not None
    alice = django_user_model.objects.create_user("alice")

    given = admin_client.post(change("conversation", crashed.pk), sharing_form(alice.pk))
    taken = admin_client.post(change("conversation", crashed.pk), sharing_form(None))
    unchanged = admin_client.post(change("conversation", crashed.pk), sharing_form(None))

    assert (given.status_code, taken.status_code, unchanged.status_code) == (302, 302, 302)
    crashed.refresh_from_db()
    assert crashed.owner is None
    assert [
        (c.action, c.via, c.actor_name, c.rows)
        for c in crashed.changes.order_by("at", "id")
        if c.action != "import"
    ] == [
        (
            "owner",
            "admin",
            "admin",
            [{"change": "owner", "old": old_owner.username, "new": "alice"}],
        ),
        ("owner", "admin", "admin", [{"change": "owner", "old": "alice", "new": None}]),
    ]
    history = admin_client.get(change("conversation", crashed.pk)).text
    assert f"owner: {old_owner.username} → alice" in history
    assert "owner: alice → nobody" in history


def test_an_owner_who_already_holds_a_conversation_under_its_key_is_refused_on_the_form(
    admin_client: Client, django_user_model: Any
) -> None:
    alice = django_user_model.objects.create_user("alice")
    bob = django_user_model.objects.create_user("bob")
    alices = store([user("go")], title="alice's run", owner=alice, key="run-1")
    bobs = store([user("go")], title="bob's run", owner=bob, key="run-1")
    nobodys = store([user("go")], title="nobody's run", owner=None, key="run-1")

    to_bob = admin_client.post(change("conversation", alices.pk), sharing_form(bob.pk))
    to_nobody = admin_client.post(change("conversation", alices.pk), sharing_form(None))

    assert (to_bob.status_code, to_nobody.status_code) == (200, 200)
    assert to_bob.context["adminform"].form.errors == {
        "owner": [
            f"bob already owns a conversation stored under the key 'run-1' (conversation "
            f"{bobs.pk}): a key names one conversation of each owner's."
        ]
    }
    assert to_nobody.context["adminform"].form.errors == {
        "owner": [
            f"An ownerless conversation is already stored under the key 'run-1' (conversation "
            f"{nobodys.pk}): ownerless conversations share one space of keys."
        ]
    }
    alices.refresh_from_db()
    assert alices.owner == alice
    assert [c.action for c in alices.changes.all()] == ["import"]


def test_sharing_a_conversation_with_a_user_lets_them_see_it(
    admin_client: Client, crashed: Conversation, django_user_model: Any
) -> None:
    bob = django_user_model.objects.create_user("bob")
    response = admin_client.post(
        change("conversation", crashed.pk),
        sharing_form(
            crashed.owner_id,
            **{"sharedwithuser_set-TOTAL_FORMS": "1", "sharedwithuser_set-0-user": str(bob.pk)},
        ),
    )

    assert response.status_code == 302
    assert list(crashed.viewers.all()) == [bob]


@pytest.mark.rule("MEM-15")
def test_an_admin_edit_of_a_message_goes_through_the_service_and_is_journalled(
    admin_client: Client, crashed: Conversation
) -> None:
    message = Message.objects.get(conversation=crashed, answers_call_id="c1")

    response = admin_client.post(
        change("message", message.pk),
        {
            "role": "tool",
            "content": '"fixed by hand"',
            "metadata": '{"tool_call_id": "c2"}',
            "reason": "wrong call id",
        },
    )

    assert response.status_code == 302, response.content
    assert selectors.buffer_messages(crashed)[2].as_stored() == result("c2", "fixed by hand")
    assert_consistent(crashed)
    assert crashed.unanswered_count == 1  # c1 lost its result, c2 gained one
    change_made = crashed.changes.first()
    assert change_made is not None
    assert (change_made.action, change_made.via, change_made.reason) == (
        "edit",
        "admin",
        "wrong call id",
    )
    assert change_made.rows[0]["old"] == result("c1")


def test_an_admin_edit_without_a_reason_or_with_a_bad_message_writes_nothing(
    admin_client: Client, crashed: Conversation
) -> None:
    message = Message.objects.get(conversation=crashed, answers_call_id="c1")

    no_reason = admin_client.post(
        change("message", message.pk), {"role": "tool", "content": '"x"', "metadata": "{}"}
    )
    bad_metadata = admin_client.post(
        change("message", message.pk),
        {"role": "tool", "content": '"x"', "metadata": '{"tool_calls": 3}', "reason": "r"},
    )

    assert no_reason.status_code == bad_metadata.status_code == 200
    assert no_reason.context["adminform"].form.errors["reason"]
    assert "must be a list of calls, not a number" in bad_metadata.text
    assert [c.action for c in crashed.changes.all()] == ["import"]


@pytest.mark.parametrize(
    ("field", "typed", "error"),
    [
        (
            "content",
            '{"text": "a", "text": "b"}',
            'the key "text" appears twice (line 1, column 15)',
        ),
        (
            "metadata",
            '{"tool_call_id": "c1", "extra": [{"k": 1, "k": 2}]}',
            'extra[0]: the key "k" appears twice (line 1, column 43)',
        ),
        ("content", "1" * 5000, "cannot be read: Exceeds the limit (4300 digits)"),
        ("content", "[" * 5000 + "]" * 5000, "nests arrays or objects too deeply to read"),
        ("content", '"\\ud800"', "holds the character U+D800, which cannot be stored"),
        ("content", '{"text": }', "Enter a valid JSON: Expecting value (line 1, column 10)."),
    ],
)
def test_json_an_admin_edit_cannot_store_is_an_error_on_its_field_never_a_500(
    admin_client: Client, crashed: Conversation, field: str, typed: str, error: str
) -> None:
    message = Message.objects.get(conversation=crashed, answers_call_id="c1")
    fields = {"role": "tool", "content": '"x"', "metadata": '{"tool_call_id": "c1"}'}

    answer = admin_client.post(
        change("message", message.pk), {**fields, field: typed, "reason": "r"}
    )

    assert answer.status_code == 200
    assert error in " ".join(answer.context["adminform"].form.errors[field])
    assert [c.action for c in crashed.changes.all()] == ["import"]
    assert_consistent(crashed)


def test_an_admin_edit_with_an_unknown_role_names_the_role_given_once(
    admin_client: Client, crashed: Conversation
) -> None:
    message = Message.objects.get(conversation=crashed, answers_call_id="c1")

    answer = admin_client.post(
        change("message", message.pk),
        {"role": "bot", "content": '"x"', "metadata": "{}", "reason": "r"},
    )

    assert answer.status_code == 200
    assert answer.context["adminform"].form.errors == {
        "role": ["Select a valid choice. bot is not one of the available choices."]
    }
    assert [c.action for c in crashed.changes.all()] == ["import"]


@pytest.mark.rule("MEM-15")
def test_an_admin_delete_of_a_message_goes_through_the_service_and_keeps_it(
    admin_client: Client, crashed: Conversation
) -> None:
    message = Message.objects.get(conversation=crashed, answers_call_id="c1")

    confirm = admin_client.get(delete("message", message.pk))
    response = admin_client.post(delete("message", message.pk), {"post": "yes"})

    assert confirm.status_code == 200
    assert response.status_code == 302
    assert [m.role for m in selectors.buffer_messages(crashed)] == ["user", "assistant"]
    assert_consistent(crashed)
    deleted = crashed.changes.first()
    assert deleted is not None
    assert deleted.rows == [{"change": "deleted", "index": 2, "old": result("c1")}]


def test_the_heal_action_shows_the_plan_first_and_writes_nothing(
    admin_client: Client, crashed: Conversation, answered: Conversation
) -> None:
    response = admin_client.post(
        changelist("conversation"),
        {"action": "heal_unanswered_calls", "_selected_action": [crashed.pk, answered.pk]},
    )

    assert response.status_code == 200
    assert (
        "a placeholder for call c2 right after the turn at message 1 (numbered as the buffer "
        "is now); once healed, it is message 2" in response.text
    )
    assert "No unanswered calls: nothing would change." in response.text
    assert [m.role for m in selectors.buffer_messages(crashed)] == ["user", "assistant", "tool"]


def test_the_heal_action_once_confirmed_heals_through_the_service(
    admin_client: Client, crashed: Conversation
) -> None:
    response = admin_client.post(
        changelist("conversation"),
        {
            "action": "heal_unanswered_calls",
            "_selected_action": [crashed.pk],
            "apply": "Heal these calls",
            "reason": "crashed agent",
        },
        follow=True,
    )

    assert "Healed 1 unanswered call in 1 conversation." in response.text
    assert selectors.buffer_messages(crashed)[2].as_stored() == placeholder("c2")
    assert_consistent(crashed)
    assert crashed.unanswered_count == 0
    healed = crashed.changes.first()
    assert healed is not None
    assert (healed.action, healed.reason, healed.actor_name) == ("heal", "crashed agent", "admin")


def test_the_heal_action_counts_only_the_conversations_it_wrote_to(
    admin_client: Client, crashed: Conversation, answered: Conversation
) -> None:
    response = admin_client.post(
        changelist("conversation"),
        {
            "action": "heal_unanswered_calls",
            "_selected_action": [crashed.pk, answered.pk],
            "apply": "Heal these calls",
            "reason": "crashed agent",
        },
        follow=True,
    )

    assert (
        "Healed 1 unanswered call in 1 conversation; 1 had none, and was left as it was."
        in response.text
    )
    assert [c.action for c in answered.changes.all()] == ["import"]


def test_the_heal_action_needs_a_reason(admin_client: Client, crashed: Conversation) -> None:
    response = admin_client.post(
        changelist("conversation"),
        {"action": "heal_unanswered_calls", "_selected_action": [crashed.pk], "apply": "Heal"},
    )

    assert response.status_code == 200
    assert "This field is required." in response.text
    assert crashed.changes.count() == 1


def test_a_conversation_page_shows_its_buffer_with_highlights_and_its_journal(
    admin_client: Client, crashed: Conversation
) -> None:
    response = admin_client.get(change("conversation", crashed.pk))

    assert response.status_code == 200
    assert "unanswered call c2" in response.text
    assert 'id="m-2"' in response.text
    assert "Edit message 2" in response.text
    assert "imported 3 messages" in response.text


def test_a_conversation_pages_message_rows_are_found_in_their_blocks_by_slot(
    admin_client: Client,
) -> None:
    """The page's rows, read again for their keys (the edit links), are found in the blocks
    that hold the page and by their slots there, as the window's are: filtered on the
    conversation and the index (start plus slot), every row of the conversation was read
    (100,000 rows on PostgreSQL, 34 ms for a page of 50)."""
    from tests.test_append_queries import healthy

    conversation = store(healthy(120))
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(change("conversation", conversation.pk) + "?at=60")
    assert response.status_code == 200
    keys = [
        q["sql"]
        for q in captured.captured_queries
        if '"buffers_message"."id" AS "pk"' in q["sql"] and ' AS "index"' in q["sql"]
    ]
    assert len(keys) == 1, keys

    assert_message_rows_found_by_slot(keys[0])


@pytest.mark.parametrize("method", ["get", "post"])
def test_deleting_a_conversation_is_refused(
    admin_client: Client, crashed: Conversation, method: str
) -> None:
    response = getattr(admin_client, method)(delete("conversation", crashed.pk), {"post": "yes"})

    assert response.status_code == 403
    assert Conversation.objects.filter(pk=crashed.pk).exists()
    assert Message.objects.filter(conversation=crashed).count() == 3


@pytest.mark.parametrize("model", ["conversation", "message"])
def test_the_bulk_delete_action_is_not_offered(
    admin_client: Client, crashed: Conversation, model: str
) -> None:
    response = admin_client.get(changelist(model))

    assert "delete_selected" not in response.text


def test_the_bulk_delete_action_cannot_be_posted(
    admin_client: Client, crashed: Conversation
) -> None:
    response = admin_client.post(
        changelist("conversation"),
        {"action": "delete_selected", "_selected_action": [crashed.pk], "index": 0, "post": "yes"},
        follow=True,
    )

    # An action the list does not offer only shows the list again.
    assert response.status_code == 200
    assert "Are you sure?" not in response.text
    assert Conversation.objects.filter(pk=crashed.pk).exists()


# Filtering and search.


def test_the_unanswered_filter_keeps_conversations_with_unanswered_calls(
    admin_client: Client, crashed: Conversation, answered: Conversation, healed: Conversation
) -> None:
    url = changelist("conversation")

    assert listed(admin_client, url, unanswered="yes") == [crashed]
    assert listed(admin_client, url, unanswered="no") == [healed, answered]
    assert listed(admin_client, url) == [healed, answered, crashed]


def test_the_unanswered_filter_is_offered_in_the_sidebar(
    admin_client: Client, crashed: Conversation
) -> None:
    response = admin_client.get(changelist("conversation"))

    assert "By unanswered calls" in response.text
    assert "?unanswered=yes" in response.text
    assert "has unanswered calls" in response.text


def test_search_finds_conversations_by_title(
    admin_client: Client, crashed: Conversation, answered: Conversation, healed: Conversation
) -> None:
    url = changelist("conversation")

    assert listed(admin_client, url, q="crashed") == [crashed]
    assert listed(admin_client, url, q="RUN") == [healed, answered, crashed]
    assert listed(admin_client, url, q="nothing like it") == []


def test_search_and_filter_combine(
    admin_client: Client, crashed: Conversation, answered: Conversation
) -> None:
    url = changelist("conversation")

    assert listed(admin_client, url, q="answered", unanswered="yes") == []
    assert listed(admin_client, url, q="answered", unanswered="no") == [answered]


def test_messages_are_found_by_the_call_they_answer(
    admin_client: Client, crashed: Conversation, healed: Conversation
) -> None:
    url = changelist("message")

    [found] = listed(admin_client, url, q="h1")
    assert found.conversation == healed
    assert found.is_placeholder


def test_the_admin_needs_a_staff_login(client: Client, crashed: Conversation) -> None:
    response = client.get(changelist("conversation"))

    assert response.status_code == 302
    assert response.headers["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize("model", ["conversation", "message"])
def test_admin_pages_name_the_site_icon(
    admin_client: Client, crashed: Conversation, model: str
) -> None:
    # Otherwise the browser asks for /favicon.ico, a 404 in its console on every admin page.
    pk = crashed.pk if model == "conversation" else crashed.messages.values_list("pk", flat=True)[0]
    icon = '<link rel="icon" href="/static/buffers/favicon.svg" type="image/svg+xml">'

    for url in (changelist(model), change(model, pk)):
        assert icon in admin_client.get(url).text


def test_a_user_buffer_cannot_be_given_to_another_owner_whose_id_it_is_not_stored_under(
    admin_client: Client, django_user_model: Any
) -> None:
    """A user-scope buffer is stored under its owner's id (MEM-8): under another owner every
    write would be refused, a state no import can make."""
    alice = django_user_model.objects.create_user("alice")
    bob = django_user_model.objects.create_user("bob")
    mine = store([user("go")], owner=alice, scope="user", scope_id=str(alice.pk))

    answer = admin_client.post(change("conversation", mine.pk), sharing_form(bob.pk))

    assert answer.status_code == 200
    [why] = answer.context["adminform"].form.errors["owner"]
    assert why.startswith(f"It is a user buffer stored under user id '{alice.pk}'")
    mine.refresh_from_db()
    assert mine.owner == alice


def test_an_admin_edit_refused_deep_in_its_json_says_where(
    admin_client: Client, crashed: Conversation
) -> None:
    message = Message.objects.get(conversation=crashed, answers_call_id="c1")
    metadata = '{"tool_call_id": "c1", "extra": {"deep": ["ok", "\\u0000"]}}'

    answer = admin_client.post(
        change("message", message.pk),
        {"role": "tool", "content": '"x"', "metadata": metadata, "reason": "r"},
    )

    assert answer.status_code == 200
    assert answer.context["adminform"].form.errors["metadata"] == [
        "extra.deep[1]: holds the character U+0000, which cannot be stored"
    ]
