"""Who may see and drive a conversation (MEM-9, MEM-15), tried at every endpoint as every
kind of caller: the answer must be the policy's. The endpoints are read from the URL
configuration and the OpenAPI document, so a new one that is not in ``POLICY`` fails the
suite until someone says who may use it (and then the matrix checks that it asks)."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.backends import BaseBackend
from django.contrib.auth.models import AnonymousUser, Group, Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils import timezone

from buffers import access, services
from buffers.models import ApiToken, Conversation
from buffers.urls import urlpatterns as inspector_patterns
from tests.buffers import assistant, store, user

pytestmark = pytest.mark.django_db

CALLERS = ("anonymous", "owner", "viewer", "group member", "other user", "staff")

# What each endpoint needs: "signed in" (any real user), "view" the conversation, "drive"
# it (owner only), "share" it (owner only: say who else may view it), or "create" (any real
# user; the caller owns what it makes).
POLICY: dict[str, str] = {
    "inspector GET buffers:conversation_list": "signed in",
    "inspector GET buffers:upload": "signed in",
    "inspector POST buffers:upload": "create",
    "inspector GET buffers:conversation": "view",
    "inspector GET buffers:export": "view",
    "inspector GET buffers:sendability": "view",
    "inspector GET buffers:next_problem": "view",
    "inspector GET buffers:conversation_messages": "view",
    "inspector GET buffers:message_json": "view",
    "inspector GET buffers:conversation_search": "view",
    "inspector POST buffers:conversation_append": "drive",
    "inspector GET buffers:conversation_history": "view",
    "inspector GET buffers:conversation_preview": "view",
    "inspector POST buffers:conversation_share": "share",
    "inspector POST buffers:conversation_unshare": "share",
    "api POST /api/conversations": "create",
    "api GET /api/conversations": "signed in",
    "api GET /api/conversations/{conversation_id}": "view",
    "api POST /api/conversations/{conversation_id}/messages": "drive",
    "api GET /api/conversations/{conversation_id}/messages": "view",
    "api GET /api/conversations/{conversation_id}/analysis": "view",
    "api GET /api/conversations/{conversation_id}/search": "view",
    "api GET /api/conversations/{conversation_id}/export": "view",
    "api POST /api/imports": "create",
}

MAY_VIEW = {"owner", "viewer", "group member", "staff"}


def expected_status(need: str, caller: str, api: bool, method: str) -> int:
    if caller == "anonymous":
        return 401 if api else 302  # the API says so; the inspector sends you to sign in
    if need == "view":
        return 200 if caller in MAY_VIEW else 404
    if need in ("drive", "share"):
        if caller == "owner":
            return 200 if api else 302  # the inspector's form posts, then redirects
        return 403 if caller in MAY_VIEW else 404
    if need == "create":
        return 201
    return 200


def inspector_endpoints() -> list[tuple[str, str, URLPattern]]:
    endpoints = []
    for pattern in inspector_patterns:
        assert isinstance(pattern, URLPattern)
        name = f"buffers:{pattern.name}"
        for method in ("GET", "POST"):
            if f"inspector {method} {name}" in POLICY:
                endpoints.append((f"inspector {method} {name}", method, pattern))
    return endpoints


def test_every_endpoint_has_a_policy(client: Client) -> None:
    """A new page or API operation must be added to POLICY, which the matrix then checks."""
    paths = client.get("/api/openapi.json").json()["paths"]
    api = {
        f"api {method.upper()} {path}"
        for path, operations in paths.items()
        for method in operations
    }
    names = {pattern.name for pattern in inspector_patterns if isinstance(pattern, URLPattern)}
    inspector = {key for key in POLICY if key.startswith("inspector ")}

    assert api == {key for key in POLICY if key.startswith("api ")}
    assert {key.split(":")[1] for key in inspector} == names


@pytest.fixture
def people(django_user_model: Any) -> dict[str, Any]:
    owner = django_user_model.objects.create_user("owner")
    viewer = django_user_model.objects.create_user("viewer")
    member = django_user_model.objects.create_user("member")
    other = django_user_model.objects.create_user("other")
    staff = django_user_model.objects.create_user("staff", is_staff=True)
    team = Group.objects.create(name="team")
    member.groups.add(team)
    conversation = store([user("go"), assistant("c1")], owner=owner, title="owned")
    conversation.viewers.add(viewer)
    conversation.viewer_groups.add(team)
    return {
        "owner": owner,
        "viewer": viewer,
        "group member": member,
        "other user": other,
        "staff": staff,
        "conversation": conversation,
    }


def caller_client(people: dict[str, Any], caller: str, *, token: bool = False) -> Client:
    if caller == "anonymous":
        return Client()
    if token:  # a token's requests are checked for CSRF as a browser's would be: no exemption
        _, secret = ApiToken.issue(people[caller], "tests")
        return Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {secret}"})
    signed_in = Client()
    signed_in.force_login(people[caller])
    return signed_in


def inspector_request(client: Client, method: str, pattern: URLPattern, pk: int) -> Any:
    kwargs: dict[str, Any] = {}
    if "<int:pk>" in str(pattern.pattern):
        kwargs["pk"] = pk
    if "<str:format>" in str(pattern.pattern):
        kwargs["format"] = "stored"
    if "<int:index>" in str(pattern.pattern):
        kwargs["index"] = 0
    url = reverse(f"buffers:{pattern.name}", kwargs=kwargs)
    if pattern.name == "next_problem":
        url += "?kind=unanswered_call"
    if method == "GET":  # as htmx asks, so that the preview answers rather than redirects
        return client.get(url, headers={"HX-Request": "true"})
    if pattern.name == "upload":
        document = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()
        return client.post(url, {"transcripts": [SimpleUploadedFile("t.json", document)]})
    return client.post(url, {"kind": "user", "user-content": "hello"})


def api_request(client: Client, method: str, path: str, pk: int) -> Any:
    url = path.replace("{conversation_id}", str(pk))
    if method == "GET":
        return client.get(url, {"format": "stored"} if url.endswith("/export") else {})
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "hello"}]}
    if url.endswith("/imports"):
        body = {"document": body}
    return client.post(url, body, content_type="application/json")


@pytest.mark.rule("MEM-9")
@pytest.mark.rule("MEM-15")
@pytest.mark.parametrize("caller", CALLERS)
def test_every_inspector_page_answers_each_caller_as_the_policy_says(
    people: dict[str, Any], caller: str
) -> None:
    pk = people["conversation"].pk
    answers = {}
    for key, method, pattern in inspector_endpoints():
        answer = inspector_request(caller_client(people, caller), method, pattern, pk)
        answers[key] = answer.status_code
        if caller == "anonymous":
            assert answer["Location"].startswith("/accounts/login/?next="), key

    assert answers == {
        key: expected_status(POLICY[key], caller, api=False, method=method)
        for key, method, _ in inspector_endpoints()
    }


@pytest.mark.api
@pytest.mark.rule("MEM-9")
@pytest.mark.rule("MEM-15")
@pytest.mark.parametrize("token", [True, False], ids=["token", "session"])
@pytest.mark.parametrize("caller", CALLERS)
def test_every_api_operation_answers_each_caller_as_the_policy_says(
    people: dict[str, Any], caller: str, token: bool
) -> None:
    pk = people["conversation"].pk
    answers = {}
    for key in (k for k in POLICY if k.startswith("api ")):
        _, method, path = key.split(" ")
        answers[key] = api_request(caller_client(people, caller, token=token), method, path, pk)

    assert {key: answer.status_code for key, answer in answers.items()} == {
        key: expected_status(POLICY[key], caller, api=True, method=key.split(" ")[1])
        for key in answers
    }
    for answer in answers.values():
        assert answer["Content-Type"].startswith("application/json")
    heads = {  # HEAD is served wherever GET is, and is not in the OpenAPI document
        key: caller_client(people, caller, token=token)
        .head(key.split(" ")[2].replace("{conversation_id}", str(pk)))
        .status_code
        for key in answers
        if key.split(" ")[1] == "GET" and not key.endswith("/export")
    }
    assert heads == {
        key: expected_status(POLICY[key], caller, api=True, method="HEAD") for key in heads
    }


@pytest.mark.rule("MEM-9")
def test_lists_show_only_what_the_caller_may_see(people: dict[str, Any]) -> None:
    store([user("theirs")], owner=people["other user"], title="someone else's")
    store([user("nobody's")], owner=None, title="ownerless")

    def api_titles(caller: str) -> set[str]:
        page = caller_client(people, caller).get("/api/conversations").json()
        return {c["title"] for c in page["conversations"]}

    def page_titles(caller: str, query: str = "") -> bool:
        return "owned" in caller_client(people, caller).get(f"/?q={query}").text

    assert api_titles("owner") == {"owned"}
    assert api_titles("viewer") == api_titles("group member") == {"owned"}
    assert api_titles("other user") == {"someone else's"}
    assert api_titles("staff") == {"owned", "someone else's", "ownerless"}
    assert page_titles("viewer", "own")
    assert not page_titles("other user", "own")  # a search does not reveal it either


@pytest.mark.rule("MEM-9")
def test_a_viewer_sees_the_conversation_but_no_form_to_drive_it(people: dict[str, Any]) -> None:
    pk = people["conversation"].pk

    as_owner = caller_client(people, "owner").get(f"/c/{pk}/").text
    as_viewer = caller_client(people, "viewer").get(f"/c/{pk}/").text

    assert 'id="user-form"' in as_owner
    assert 'id="user-form"' not in as_viewer
    assert "Only its owner" in as_viewer


@pytest.mark.api
@pytest.mark.rule("MEM-9")
def test_a_viewers_append_is_refused_and_writes_nothing(people: dict[str, Any]) -> None:
    conversation = people["conversation"]

    answer = caller_client(people, "viewer", token=True).post(
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [{"role": "user", "content": "let me in"}]},
        content_type="application/json",
    )

    assert answer.status_code == 403
    assert answer.json()["detail"].startswith("You may view this conversation but not drive it")
    conversation.refresh_from_db()
    assert (conversation.message_count, conversation.version) == (2, 0)


@pytest.mark.rule("MEM-9")
def test_an_absent_identity_owns_nothing_not_even_what_nobody_owns() -> None:
    ownerless = store([user("hi")], owner=None)
    unsaved = User(username="ghost")  # a user object with no identity (pk None)
    zero = User(pk=0, username="zero")

    for nobody in (None, AnonymousUser(), unsaved, zero):
        assert not access.owns(nobody, ownerless)
        assert not access.may_drive(nobody, ownerless)
        assert not access.may_view(nobody, ownerless)
    assert Client().get("/api/conversations").status_code == 401


@pytest.mark.rule("MEM-9")
def test_an_inactive_owner_owns_nothing(django_user_model: Any) -> None:
    owner = django_user_model.objects.create_user("gone", is_active=False)
    conversation = store([user("hi")], owner=owner)

    assert not access.owns(owner, conversation)


class GrantsEverything(BaseBackend):
    """An extension that tries to grant what the rules deny."""

    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        return True


@pytest.mark.rule("MEM-15")
def test_no_authentication_backend_can_grant_what_the_policy_denies(
    people: dict[str, Any], settings: Any
) -> None:
    settings.AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.ModelBackend",
        f"{__name__}.GrantsEverything",
    ]
    pk = people["conversation"].pk
    viewer = caller_client(people, "viewer")
    other = caller_client(people, "other user")

    assert viewer.post(f"/c/{pk}/append", {"kind": "user", "user-content": "x"}).status_code == 403
    assert other.get(f"/c/{pk}/").status_code == 404
    assert other.get("/admin/buffers/conversation/").status_code == 302  # not staff: sign in


@pytest.mark.api
@pytest.mark.rule("MEM-15")
@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_no_api_or_inspector_path_updates_or_deletes_a_message(
    people: dict[str, Any], method: str
) -> None:
    pk = people["conversation"].pk
    owner = caller_client(people, "owner")
    paths = [
        f"/api/conversations/{pk}/messages",
        f"/api/conversations/{pk}",
        f"/c/{pk}/",
        f"/c/{pk}/append",
        f"/c/{pk}/messages",
    ]

    answers = [getattr(owner, method)(path).status_code for path in paths]

    assert answers == [405] * len(paths)
    conversation = Conversation.objects.get(pk=pk)
    assert (conversation.message_count, conversation.version) == (2, 0)


@pytest.mark.rule("MEM-15")
def test_a_message_or_conversation_that_does_not_exist_is_not_found_never_an_error(
    admin_client: Client, people: dict[str, Any]
) -> None:
    missing = 10**12

    answers = [
        admin_client.get(f"/admin/buffers/message/{missing}/change/"),
        caller_client(people, "owner").get(f"/api/conversations/{missing}/messages"),
        caller_client(people, "owner").get(f"/c/{missing}/"),
    ]

    assert [a.status_code for a in answers] == [302, 404, 404]
    assert answers[0]["Location"] == "/admin/"  # the admin's "does not exist" answer


# Tokens.


def test_a_revoked_token_or_a_wrong_one_is_refused(people: dict[str, Any]) -> None:
    row, secret = ApiToken.issue(people["owner"], "laptop")
    good = Client(headers={"Authorization": f"Bearer {secret}"})
    wrong = Client(headers={"Authorization": f"Bearer {secret}x"})

    assert good.get("/api/conversations").status_code == 200
    assert wrong.get("/api/conversations").status_code == 401
    row.revoked_at = row.created_at
    row.save()
    assert good.get("/api/conversations").status_code == 401


def test_a_token_of_an_inactive_user_is_refused(people: dict[str, Any]) -> None:
    _, secret = ApiToken.issue(people["owner"], "laptop")
    User.objects.filter(pk=people["owner"].pk).update(is_active=False)

    answer = Client(headers={"Authorization": f"Bearer {secret}"}).get("/api/conversations")
    assert answer.status_code == 401


def test_a_token_stands_for_its_user_and_is_marked_used_at_most_once_a_minute(
    people: dict[str, Any],
) -> None:
    row, secret = ApiToken.issue(people["owner"], "laptop")
    other, _ = ApiToken.issue(people["viewer"], "desk")

    found = access.user_for_token(secret)
    assert found is not None
    assert (found.pk, found.username) == (people["owner"].pk, people["owner"].username)
    first = ApiToken.objects.get(pk=row.pk).last_used_at
    assert first is not None
    assert ApiToken.objects.get(pk=other.pk).last_used_at is None

    access.user_for_token(secret)  # within the minute: not marked again
    assert ApiToken.objects.get(pk=row.pk).last_used_at == first

    an_hour_ago = first - timedelta(hours=1)
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=an_hour_ago)
    access.user_for_token(secret)
    marked = ApiToken.objects.get(pk=row.pk).last_used_at
    assert marked is not None
    assert marked > an_hour_ago


def test_a_tokens_user_is_read_as_the_orm_reads_the_user(people: dict[str, Any]) -> None:
    """The plain statement's row is converted as the ORM converts it (``instance_from_row``):
    on SQLite a boolean comes as 0 or 1 and a datetime as text, which its converters read
    into a bool and an aware datetime."""
    owner = people["owner"]
    User.objects.filter(pk=owner.pk).update(
        last_login=timezone.now() - timedelta(days=2), is_staff=True
    )
    _, secret = ApiToken.issue(owner, "laptop")

    found = access.user_for_token(secret)

    assert found is not None
    expected = User.objects.get(pk=owner.pk)
    for field in User._meta.concrete_fields:
        got, want = getattr(found, field.attname), getattr(expected, field.attname)
        assert (got, type(got)) == (want, type(want)), field.attname
    assert found.last_login.tzinfo is not None
    assert (found._state.adding, found._state.db) == (False, expected._state.db)


def test_a_token_is_stored_only_as_its_digest(people: dict[str, Any]) -> None:
    row, secret = ApiToken.issue(people["owner"], "laptop")

    stored = ApiToken.objects.filter(pk=row.pk).values().get()
    assert secret not in json.dumps(stored, default=str)
    assert stored["digest"] == ApiToken.digest_of(secret)
    assert secret.startswith(stored["hint"])


def test_a_token_made_in_the_admin_is_shown_once(
    admin_client: Client, people: dict[str, Any]
) -> None:
    answer = admin_client.post(
        "/admin/buffers/apitoken/add/", {"user": people["owner"].pk, "name": "ci"}, follow=True
    )

    [message] = [str(m) for m in answer.context["messages"] if "Copy it now" in str(m)]
    secret = message.split(" is ")[1].split(" ")[0]
    assert ApiToken.objects.get(digest=ApiToken.digest_of(secret)).name == "ci"
    again = admin_client.get("/admin/buffers/apitoken/")
    assert secret not in again.text


def test_the_commands_are_the_administrative_tier_and_name_an_owner(
    people: dict[str, Any], tmp_path: Any
) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    out = StringIO()

    call_command("import_transcripts", str(path), owner="viewer", stdout=StringIO())
    call_command("export_transcript", str(people["conversation"].pk), stdout=out)

    assert Conversation.objects.get(title="").owner == people["viewer"]
    assert json.loads(out.getvalue())["title"] == "owned"
    with pytest.raises(CommandError, match="There is no user 'nobody'"):
        call_command("import_transcripts", str(path), owner="nobody", stdout=StringIO())


@pytest.mark.api
def test_a_write_without_a_session_or_a_token_is_a_401_even_with_csrf_checks(
    people: dict[str, Any],
) -> None:
    strict = Client(enforce_csrf_checks=True)
    bad_token = Client(enforce_csrf_checks=True, headers={"Authorization": "Bearer fdw_nope"})
    body = {"messages": [{"role": "user", "content": "hi"}]}

    for client in (strict, bad_token):
        answer = client.post("/api/conversations", body, content_type="application/json")
        assert answer.status_code == 401
        assert answer.json()["detail"] == "Unauthorized"
    assert Conversation.objects.count() == 1


@pytest.mark.api
def test_a_signed_in_session_writes_only_with_its_csrf_token(people: dict[str, Any]) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(people["owner"])
    browser.get("/")  # the page sets the CSRF cookie, as in a browser
    token = browser.cookies["csrftoken"].value
    body = {"messages": [{"role": "user", "content": "hi"}]}

    forged = browser.post("/api/conversations", body, content_type="application/json")
    genuine = browser.post(
        "/api/conversations", body, content_type="application/json", headers={"X-CSRFToken": token}
    )

    assert forged.status_code == 403
    assert genuine.status_code == 201
    assert Conversation.objects.get(pk=genuine.json()["id"]).owner == people["owner"]


@pytest.mark.api
def test_a_session_write_labelled_multipart_is_a_400_that_asks_for_json(
    people: dict[str, Any],
) -> None:
    """The CSRF check reads a multipart body as a form, which leaves nothing for the API's
    JSON: a 400 that says so, not a 500 (review)."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(people["owner"])
    browser.get("/")
    token = browser.cookies["csrftoken"].value
    before = Conversation.objects.count()

    answer = browser.post(
        "/api/conversations",
        json.dumps({"messages": [{"role": "user", "content": "hi"}]}),
        content_type="multipart/form-data; boundary=x",
        headers={"X-CSRFToken": token},
    )

    assert answer.status_code == 400, answer.content
    assert "application/json" in answer.json()["detail"]
    assert Conversation.objects.count() == before


def staff_with(django_user_model: Any, *codenames: str) -> Client:
    staff = django_user_model.objects.create_user("helpdesk", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(staff)
    return client


def test_staff_make_api_tokens_for_themselves_only(
    people: dict[str, Any], django_user_model: Any
) -> None:
    helpdesk = staff_with(django_user_model, "add_apitoken", "view_apitoken")

    answer = helpdesk.post(
        "/admin/buffers/apitoken/add/", {"user": people["owner"].pk, "name": "impersonate"}
    )

    assert answer.status_code == 200  # the form again, with its error
    assert "Select a valid choice" in answer.text
    assert not ApiToken.objects.filter(user=people["owner"]).exists()


def test_revoking_a_token_needs_more_than_the_right_to_see_it(
    people: dict[str, Any], django_user_model: Any
) -> None:
    row, _ = ApiToken.issue(people["owner"], "laptop")
    viewer_of_tokens = staff_with(django_user_model, "view_apitoken")

    viewer_of_tokens.post(
        "/admin/buffers/apitoken/", {"action": "revoke", "_selected_action": [row.pk]}
    )

    row.refresh_from_db()
    assert row.revoked_at is None


@pytest.mark.rule("MEM-15")
def test_a_message_whose_conversation_is_gone_is_not_found_in_the_admin(
    admin_client: Client,
) -> None:
    conversation = store([user("orphan me")])
    message = conversation.messages.get()
    dangle = "UPDATE buffers_message SET conversation_id = %s WHERE id = %s"
    with connection.cursor() as cursor:
        # A dangling row, as a damaged database could hold: both databases check foreign
        # keys only at commit (Django makes them deferred). Put right before the test's
        # end, where the test case checks them.
        cursor.execute(dangle, [10**12, message.pk])
        try:
            change = admin_client.get(f"/admin/buffers/message/{message.pk}/change/")
            listing = admin_client.get("/admin/buffers/message/")
        finally:
            cursor.execute(dangle, [conversation.pk, message.pk])

    assert change.status_code == 302
    assert listing.status_code == 200
    assert "orphan me" not in listing.text


# Keys are per owner (issue 16): a key someone else uses says nothing about theirs.


def import_keyed(caller: User, key: str) -> Any:
    _, secret = ApiToken.issue(caller, "tests")
    document = {"key": key, "messages": [{"role": "user", "content": "x"}]}
    return Client(headers={"Authorization": f"Bearer {secret}"}).post(
        "/api/imports", {"document": document}, content_type="application/json"
    )


def test_a_key_another_owner_uses_is_free_and_reveals_nothing(people: dict[str, Any]) -> None:
    store([user("mine")], owner=people["owner"], key="standup")

    answer = import_keyed(people["other user"], "standup")

    assert answer.status_code == 201, answer.json()
    owners = Conversation.objects.filter(key="standup").values_list("owner__username", flat=True)
    assert sorted(owners) == ["other", "owner"]


def test_a_key_is_unique_within_one_owners_conversations(people: dict[str, Any]) -> None:
    store([user("mine")], owner=people["owner"], key="standup")

    answer = import_keyed(people["owner"], "standup")

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {
            "path": "document.conversation.key",
            "message": "a conversation with key 'standup' in scope 'global' is already stored",
        }
    ]
    with pytest.raises(IntegrityError):  # and the database holds to it
        Conversation.objects.create(key="standup", owner=people["owner"])


def test_ownerless_conversations_share_one_namespace_of_keys(db: None) -> None:
    store([user()], key="demo", owner=None)

    with pytest.raises(IntegrityError):
        Conversation.objects.create(key="demo")


def test_an_ownerless_conversation_whose_key_its_new_owner_holds_stays_ownerless(
    people: dict[str, Any],
) -> None:
    owner = people["owner"]
    theirs = store([user()], key="demo", owner=owner)
    loose = store([user()], key="demo", owner=None)
    other = store([user()], key="other", owner=None)

    given = services.give_ownerless(
        Conversation.objects.filter(pk__in=[loose.pk, other.pk]),
        owner=owner,
        via="make run",
        by="alice (shell)",
        reason="the local account",
    )

    assert given == [other]
    loose.refresh_from_db()
    theirs.refresh_from_db()
    assert (loose.owner, theirs.owner) == (None, owner)
    assert [c.action for c in loose.changes.all()] == ["import"]
