"""Scopes on stored buffers (MEM-6, 7, 8, 13): a write to a ``user`` or ``session`` buffer
resolves its scope first, from the conversation and never from the caller; a refusal
touches no storage, answers the neutral result and logs one warning."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from buffers import healing, services
from buffers.models import BufferChange, Conversation
from tests.buffers import assistant, signed_in, store, user

pytestmark = pytest.mark.django_db

TURN = healing.parse_messages([user("hello")], appendable=True)


@pytest.fixture
def owner(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("owner")


def user_scoped(owner: Any, scope_id: str | None = None, **fields: Any) -> Conversation:
    return store(
        [user("go"), assistant("c1")],
        scope="user",
        scope_id=str(owner.pk) if scope_id is None else scope_id,
        owner=owner,
        **fields,
    )


def filed_under(conversation: Conversation, **identity: Any) -> Conversation:
    """The conversation with its stored identity changed behind the service's back: as a
    buffer stored before these rules, or whose owner was deleted, would be."""
    Conversation.objects.filter(pk=conversation.pk).update(**identity)
    conversation.refresh_from_db()
    return conversation


def session_buffer(owner: Any, session_id: str, **fields: Any) -> Conversation:
    session = store([user("the session's transcript")], owner=owner, key=f"s-{session_id}")
    buffer = store(
        [user("go"), assistant("c1")],
        scope="session",
        scope_id=str(session.pk),
        owner=owner,
        **fields,
    )
    return filed_under(buffer, scope_id=session_id)


SESSION_NOT_OWNED = (
    'must name a conversation the owner owns in the "session" scope (a session\'s transcript)'
)


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Refused")]


@pytest.mark.rule("MEM-6")
@pytest.mark.rule("MEM-8")
def test_a_user_buffer_resolves_to_its_owner_and_the_append_goes_through(owner: Any) -> None:
    conversation = user_scoped(owner)

    report = services.append_messages(conversation=conversation, messages=TURN, via="tests")

    assert report.refusal == ""
    assert (report.count, report.appended) == (4, 1)  # healed c1, then the turn


@pytest.mark.rule("MEM-6")
@pytest.mark.rule("MEM-7")
def test_a_refused_user_scope_touches_no_storage_answers_nothing_and_warns_once(
    owner: Any, caplog: pytest.LogCaptureFixture
) -> None:
    conversation = user_scoped(owner)
    Conversation.objects.filter(pk=conversation.pk).update(owner=None)  # the owner left
    conversation.refresh_from_db()
    before = (conversation.message_count, conversation.version, BufferChange.objects.count())

    with caplog.at_level(logging.WARNING), CaptureQueriesContext(connection) as queries:
        report = services.append_messages(conversation=conversation, messages=TURN, via="api")

    assert queries.captured_queries == []
    assert (report.count, report.appended, report.appended_any) == (0, 0, False)
    assert (report.healed, report.outcomes) == ((), ())
    assert refusals(caplog) == [
        f"Refused the user scope of conversation {conversation.pk} via api: the execution "
        "context carries no real user (it has none); nothing was read or written."
    ]
    conversation.refresh_from_db()
    assert (
        conversation.message_count,
        conversation.version,
        BufferChange.objects.count(),
    ) == before


@pytest.mark.rule("MEM-8")
def test_the_identity_of_a_user_buffer_is_its_owner_never_the_caller(
    owner: Any, django_user_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Staff heal from the admin: the buffer's user is still its owner, so a buffer stored
    under another user's id refuses, even though the caller is a real user."""
    staff = django_user_model.objects.create_user("staff", is_staff=True)
    someone_elses = filed_under(user_scoped(owner), scope_id=str(staff.pk))

    with caplog.at_level(logging.WARNING):
        report = services.heal_conversation(
            conversation_id=someone_elses.pk, via="admin", by=staff, reason="try"
        )

    assert report.refusal == (
        f"the buffer is stored under user id '{staff.pk}', but its context resolves to '{owner.pk}'"
    )
    assert len(refusals(caplog)) == 1
    assert services.heal_conversation(
        conversation_id=user_scoped(owner, key="mine").pk, via="admin", by=staff
    ).healed


@pytest.mark.rule("MEM-8")
@pytest.mark.rule("MEM-6")
def test_an_ownerless_user_buffer_refuses_whoever_drives_it(
    django_user_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    staff = django_user_model.objects.create_user("staff", is_staff=True)
    ownerless = filed_under(user_scoped(staff), owner=None)

    with caplog.at_level(logging.WARNING):
        report = services.heal_conversation(conversation_id=ownerless.pk, via="admin", by=staff)

    assert report.refusal.startswith("the execution context carries no real user")
    assert Conversation.objects.get(pk=ownerless.pk).unanswered_count == 1


@pytest.mark.rule("MEM-13")
@pytest.mark.rule("MEM-7")
@pytest.mark.parametrize("session", ["0", "", "abc", "-1"])
def test_a_session_buffer_without_a_real_session_refuses_with_no_query(
    owner: Any, session: str, caplog: pytest.LogCaptureFixture
) -> None:
    conversation = session_buffer(owner, session)

    with caplog.at_level(logging.WARNING), CaptureQueriesContext(connection) as queries:
        report = services.append_messages(conversation=conversation, messages=TURN, via="tests")

    assert queries.captured_queries == []
    assert (report.count, report.appended) == (0, 0)
    assert len(refusals(caplog)) == 1
    assert f"session scope of conversation {conversation.pk} via tests" in refusals(caplog)[0]


@pytest.mark.rule("MEM-13")
def test_a_session_buffer_of_an_unknown_session_refuses_and_of_a_known_one_appends(
    owner: Any,
) -> None:
    session = store([user("the session's own transcript")], owner=owner)
    unknown = session_buffer(owner, "999999", key="a")
    known = store([user("go")], scope="session", scope_id=str(session.pk), owner=owner, key="b")

    with CaptureQueriesContext(connection) as queries:
        refused = services.append_messages(conversation=unknown, messages=TURN, via="tests")
    appended = services.append_messages(conversation=known, messages=TURN, via="tests")

    assert refused.refusal.startswith("the execution context carries no real session")
    assert [q["sql"] for q in queries.captured_queries if "buffers_message" in q["sql"]] == []
    assert len(queries.captured_queries) == 1  # is there such a session of the owner's?
    assert (appended.refusal, appended.appended) == ("", 1)


@pytest.mark.rule("MEM-13")
@pytest.mark.rule("MEM-8")
def test_a_session_of_someone_else_is_no_session_of_this_buffer(
    owner: Any, django_user_model: Any
) -> None:
    """So that a refusal says nothing about conversations the buffer's owner cannot see."""
    stranger = django_user_model.objects.create_user("stranger")
    theirs = store([user("their session")], owner=stranger)
    mine = filed_under(session_buffer(owner, "1"), scope_id=str(theirs.pk))

    report = services.append_messages(conversation=mine, messages=TURN, via="tests")

    assert report.refusal.startswith("the execution context carries no real session")


@pytest.mark.rule("MEM-6")
@pytest.mark.rule("MEM-13")
@pytest.mark.parametrize(
    ("scope", "scope_id", "sentence"),
    [
        (
            "user",
            "someone",
            'must be the owner\'s id in the "user" scope (the owner is user {owner})',
        ),
        (
            "session",
            "{session}",
            SESSION_NOT_OWNED,
        ),
        (
            "session",
            "0",
            SESSION_NOT_OWNED,
        ),
        (
            "session",
            "9" * 30,  # beyond any database id: refused, not an overflow
            SESSION_NOT_OWNED,
        ),
    ],
)
def test_an_import_cannot_file_a_buffer_under_someone_elses_identity(
    owner: Any, django_user_model: Any, scope: str, scope_id: str, sentence: str
) -> None:
    stranger = django_user_model.objects.create_user("stranger")
    theirs = store([user("their session")], owner=stranger)
    document = {"scope": scope, "scope_id": scope_id.format(session=theirs.pk), "messages": []}

    answer = signed_in(owner).post(
        "/api/imports", {"format": "stored", "document": document}, content_type="application/json"
    )

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {"path": "document.conversation.scope_id", "message": sentence.format(owner=owner.pk)}
    ]
    assert not Conversation.objects.filter(scope=scope).exists()


@pytest.mark.rule("MEM-13")
@pytest.mark.parametrize("spelling", ["0{pk}", " {pk}", "{pk} ", "00{pk}"])
def test_an_import_refuses_a_session_id_spelled_otherwise_than_its_writes_resolve_it(
    owner: Any, spelling: str
) -> None:
    """A write resolves the session to its id in digits alone and refuses a buffer filed
    under another spelling of it: imported so, the buffer would refuse every append."""
    session = store([user("the session's transcript")], owner=owner)
    document = {
        "scope": "session",
        "scope_id": spelling.format(pk=session.pk),
        "messages": [user("go"), assistant("c1")],
    }

    answer = signed_in(owner).post(
        "/api/imports", {"format": "stored", "document": document}, content_type="application/json"
    )

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {
            "path": "document.conversation.scope_id",
            "message": f"must be the session's id as digits alone, '{session.pk}', "
            f"not {spelling.format(pk=session.pk)!r}",
        }
    ]
    assert not Conversation.objects.filter(scope="session").exists()
    document["scope_id"] = str(session.pk)
    imported = signed_in(owner).post(
        "/api/imports", {"format": "stored", "document": document}, content_type="application/json"
    )
    buffer = Conversation.objects.get(pk=imported.json()["conversations"][0]["id"])
    report = services.append_messages(conversation=buffer, messages=TURN, via="tests")
    assert (report.refusal, report.count) == ("", 4)


def test_a_write_refuses_when_the_owner_changed_while_it_waited(
    owner: Any, django_user_model: Any
) -> None:
    conversation = store([user("go")], owner=owner)
    checked = Conversation.objects.get(pk=conversation.pk)
    Conversation.objects.filter(pk=conversation.pk).update(
        owner=django_user_model.objects.create_user("new owner")
    )

    report = services.append_messages(conversation=checked, messages=TURN, via="tests")

    assert report.refusal.startswith("the conversation's owner or scope changed")
    assert Conversation.objects.get(pk=conversation.pk).message_count == 1


@pytest.mark.api
@pytest.mark.rule("MEM-7")
@pytest.mark.rule("MEM-13")
@pytest.mark.rule("MEM-14")
def test_over_the_api_a_refused_append_is_the_neutral_answer_and_the_buffer_is_untouched(
    owner: Any, caplog: pytest.LogCaptureFixture
) -> None:
    conversation = session_buffer(owner, "0")

    with caplog.at_level(logging.WARNING), CaptureQueriesContext(connection) as queries:
        answer = signed_in(owner).post(
            f"/api/conversations/{conversation.pk}/messages",
            {"messages": [{"role": "user", "content": "hello"}]},
            content_type="application/json",
        )

    assert answer.status_code == 200
    body = answer.json()
    assert {k: body[k] for k in ("scope", "resolved_scope_id", "count", "appended")} == {
        "scope": "session",
        "resolved_scope_id": "",
        "count": 0,
        "appended": 0,
    }
    assert body["appended_any"] is False
    assert body["refused"].startswith("the execution context carries no real session")
    assert len(refusals(caplog)) == 1
    buffer_tables = (
        "buffers_message",
        "buffers_block",
        "buffers_declaredcall",
        "buffers_bufferchange",
    )
    assert not [q for q in queries.captured_queries if any(t in q["sql"] for t in buffer_tables)]
    conversation.refresh_from_db()
    assert conversation.message_count == 2


@pytest.mark.api
@pytest.mark.rule("MEM-6")
@pytest.mark.rule("MEM-7")
def test_the_global_scope_resolves_to_the_empty_id_and_appends(client: Client) -> None:
    conversation = store([user("go")])

    answer = client.post(
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [{"role": "user", "content": "hello"}]},
        content_type="application/json",
    ).json()

    assert (answer["resolved_scope_id"], answer["refused"], answer["appended"]) == ("", None, 1)


@pytest.mark.rule("MEM-7")
def test_in_the_inspector_a_refused_append_says_so_and_writes_nothing(owner: Any) -> None:
    conversation = session_buffer(owner, "")

    answer = signed_in(owner).post(
        f"/c/{conversation.pk}/append",
        {"kind": "user", "user-content": "hello"},
        headers={"HX-Request": "true"},
    )

    assert answer.status_code == 200
    assert "Nothing was read or written: the buffer&#x27;s scope refused" in answer.text
    assert Conversation.objects.get(pk=conversation.pk).message_count == 2


@pytest.mark.rule("MEM-7")
def test_a_preview_of_a_refused_buffer_says_so_instead_of_planning(owner: Any) -> None:
    conversation = session_buffer(owner, "0")

    answer = signed_in(owner).get(f"/c/{conversation.pk}/preview", headers={"HX-Request": "true"})

    assert "write nothing: the buffer&#x27;s scope refuses it" in answer.text
    assert "heal" not in answer.text.split("A user turn now would")[1]


@pytest.mark.rule("MEM-7")
def test_the_admins_heal_shows_a_refusal_before_and_after_and_writes_nothing(
    owner: Any, admin_client: Client
) -> None:
    conversation = session_buffer(owner, "0")
    url = "/admin/buffers/conversation/"
    chosen = {"action": "heal_unanswered_calls", "_selected_action": [conversation.pk]}

    confirmation = admin_client.post(url, chosen)
    applied = admin_client.post(url, {**chosen, "apply": "1", "reason": "try"}, follow=True)

    assert "Its scope refuses every write, so nothing would change" in confirmation.text
    shown = [str(m) for m in applied.context["messages"]]
    assert shown[0] == "Healed 0 unanswered calls in 0 conversations."
    assert shown[1].startswith("Nothing was written to 1, whose scope refused:")
    conversation.refresh_from_db()
    assert (conversation.unanswered_count, conversation.version) == (1, 0)
