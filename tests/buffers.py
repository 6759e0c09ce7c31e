"""Two ways to hold a buffer, one interface: the pure planner on a list, and the service on
the database. Spec examples and property tests run through both and must agree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from buffers import healing, selectors, services
from buffers.models import ApiToken, Conversation

if TYPE_CHECKING:  # the test client's response type, known to the stubs only
    from django.test.client import _MonkeyPatchedWSGIResponse as TestResponse

TESTER = "tester"


def acting_user() -> User:
    """The user the tests act as: it owns what ``store`` stores, and ``client`` (the
    fixture) is signed in as it. Access tests make their own users."""
    user, _ = User.objects.get_or_create(username=TESTER)
    return user


def signed_in(user: User | None = None) -> Client:
    client = Client()
    client.force_login(user or acting_user())
    return client


def parse(raw: list[dict[str, Any]]) -> list[healing.Message]:
    return healing.parse_messages(raw)


def stored_shape(messages: list[healing.Message]) -> list[dict[str, Any]]:
    return [m.as_stored() for m in messages]


class PureBuffer:
    engine = "pure"

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = parse(messages)

    def append(self, batch: list[dict[str, Any]]) -> healing.AppendReport:
        incoming = healing.parse_messages(batch, appendable=True)
        plan = healing.plan_append(healing.facts_from_messages(self.messages), incoming)
        self.messages = healing.apply_plan(self.messages, plan)
        return plan.report

    def stored(self) -> list[dict[str, Any]]:
        return stored_shape(self.messages)


class StoredBuffer:
    engine = "db"

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.conversation = store(messages)

    def append(self, batch: list[dict[str, Any]]) -> healing.AppendReport:
        return services.append_messages(
            conversation_id=self.conversation.pk,
            messages=healing.parse_messages(batch, appendable=True),
            via="tests",
        )

    def stored(self) -> list[dict[str, Any]]:
        self.conversation.refresh_from_db()
        return stored_shape(selectors.buffer_messages(self.conversation))


class ApiBuffer:
    """The storage API over Django's test client: what an outside client sees."""

    engine = "api"

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.client = signed_in()
        created = self.client.post(
            "/api/conversations", {"messages": messages}, content_type="application/json"
        )
        assert created.status_code == 201, created.content
        self.url = created["Location"]
        self.conversation = Conversation.objects.get(pk=created.json()["id"])

    def append(self, batch: list[dict[str, Any]]) -> healing.AppendReport:
        answer = self.client.post(
            f"{self.url}/messages", {"messages": batch}, content_type="application/json"
        )
        body = answer.json()
        if answer.status_code == 422:
            problems = [healing.Problem(p["path"], p["message"]) for p in body["problems"]]
            raise healing.InvalidInput(problems)
        assert answer.status_code == 200, body
        report = healing.AppendReport(
            count=body["count"],
            appended=body["appended"],
            healed=tuple(healing.Healed(**h) for h in body["healed"]),
            replaced=tuple(healing.Replaced(**r) for r in body["replaced"]),
            dropped=tuple(
                healing.Dropped(d["batch_index"], d["reason"], d["tool_call_id"], d["answered_at"])
                for d in body["dropped"]
            ),
            outcomes=tuple(healing.Outcome(**o) for o in body["outcomes"]),
            orphans=tuple(healing.Orphan(**o) for o in body["orphans"]),
        )
        assert body["appended_any"] == report.appended_any
        return report

    def stored(self) -> list[dict[str, Any]]:
        page = self.client.get(f"{self.url}/messages", {"limit": 500}).json()
        assert page["count"] == len(page["messages"]), "tests keep buffers under a page"
        messages: list[dict[str, Any]] = page["messages"]
        return messages


def store(
    messages: list[dict[str, Any]], *, owner: User | str | None = TESTER, **fields: Any
) -> Conversation:
    """A conversation stored verbatim, owned by the tester unless ``owner`` says otherwise
    (``None``: nobody)."""
    [conversation] = services.import_conversations(
        [services.ConversationIn(messages=parse(messages), **fields)],
        via="tests",
        owner=acting_user() if owner == TESTER else owner if isinstance(owner, User) else None,
    )
    return conversation


def assistant(
    *ids: str, content: str | None = "", spelling: str = "tool_call_id"
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "metadata": {"tool_calls": [{spelling: i, "name": "search"} for i in ids]},
    }


def result(call_id: str, content: str = "result") -> dict[str, Any]:
    return {"role": "tool", "content": content, "metadata": {"tool_call_id": call_id}}


def placeholder(call_id: str) -> dict[str, Any]:
    return healing.placeholder_for(call_id).as_stored()


def user(content: str = "next") -> dict[str, Any]:
    return {"role": "user", "content": content, "metadata": {}}


def keyed_api_append(
    conversation: Conversation, owner: User, key: str, text: str = "still there?"
) -> tuple[TestResponse, list[str]]:
    """A user turn appended through the API with a token and an Idempotency-Key, and the
    SQL it ran."""
    headers = {
        "Authorization": f"Bearer {ApiToken.issue(owner, 'tests')[1]}",
        "Idempotency-Key": key,
    }
    with CaptureQueriesContext(connection) as captured:
        answer = Client().post(
            f"/api/conversations/{conversation.pk}/messages",
            {"messages": [user(text)]},
            content_type="application/json",
            headers=headers,
        )
    return answer, [q["sql"] for q in captured.captured_queries]
