"""`make run` signs you in: the local account, the demo it owns, and the one-time link."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, override_settings
from django.utils import timezone

from buffers.models import BufferChange, Conversation, SignInLink
from buffers.transcripts import read_transcript_file
from tests.chromium import FIND_CHROMIUM, find_chromium

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"^Sign in: http://(?P<address>[^/]+)(?P<path>/accounts/first-run/[^/]+/)$", re.M)
DEMO_FILES = sorted((ROOT / "buffers" / "demo").glob("*.json*"))
DEMO_KEYS = {c.key for path in DEMO_FILES for c in read_transcript_file(path).conversations}


def start(address: str = "127.0.0.1:8000", owner: str | None = "alice") -> re.Match[str]:
    """One `make run` start: what local_signin prints, its link line parsed."""
    out = StringIO()
    with override_settings(DEBUG=True):
        call_command("local_signin", address=address, owner=owner, stdout=out)
    found = LINK.search(out.getvalue())
    assert found, out.getvalue()
    return found


def open_link(client: Client, path: str, remote_addr: str = "127.0.0.1"):
    with override_settings(DEBUG=True):
        return client.get(path, REMOTE_ADDR=remote_addr)


def test_the_first_start_makes_a_passwordless_superuser_who_owns_the_demo() -> None:
    assert not User.objects.exists()
    start(owner="alice")
    alice = User.objects.get()
    assert alice.username == "alice"
    assert alice.is_superuser
    assert alice.is_staff
    assert not alice.has_usable_password()
    demo = Conversation.objects.all()
    assert demo.count() == len(DEMO_KEYS)
    assert set(demo.values_list("owner", flat=True)) == {alice.pk}


def test_the_local_account_is_named_after_user_when_no_owner_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("USER", "bob")
    start(owner=None)
    assert User.objects.get().username == "bob"


def test_the_link_uses_the_address_given_and_loopback_for_an_unspecified_host() -> None:
    assert start(address="127.0.0.1:8123")["address"] == "127.0.0.1:8123"
    assert start(address="0.0.0.0:9000")["address"] == "127.0.0.1:9000"
    assert start(address="localhost:8001")["address"] == "localhost:8001"


def test_later_starts_print_a_fresh_link_for_the_same_account_and_load_nothing_twice() -> None:
    first = start()
    second = start()
    assert first["path"] != second["path"]
    assert User.objects.count() == 1
    assert Conversation.objects.count() == len(DEMO_KEYS)
    assert SignInLink.objects.filter(user__username="alice").count() == 2


def test_the_link_signs_in_once_and_lands_on_the_list() -> None:
    path = start()["path"]
    browser = Client()
    response = open_link(browser, path)
    assert response.status_code == 302
    assert response["Location"] == "/"
    page = browser.get("/")
    assert page.status_code == 200
    assert "Signed in as <strong>alice</strong>" in page.text

    again = open_link(Client(), path)
    assert again.status_code == 403
    assert "has been used" in again.text


def test_only_the_digest_of_the_token_is_stored() -> None:
    token = start()["path"].rstrip("/").rsplit("/", 1)[1]
    link = SignInLink.objects.get()
    assert token not in {link.digest, str(link.pk)}
    assert link.digest == SignInLink.objects.get(digest=link.digest).digest
    assert len(link.digest) == 64


def test_an_expired_link_is_refused_with_a_page_that_says_so() -> None:
    path = start()["path"]
    SignInLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = open_link(Client(), path)
    assert response.status_code == 403
    assert "has expired" in response.text
    assert "make run" in response.text


def test_links_expire_after_an_hour() -> None:
    start()
    link = SignInLink.objects.get()
    assert link.expires_at - link.created_at == timedelta(hours=1)


def test_an_unknown_token_is_refused_with_a_page_that_says_so() -> None:
    start()
    response = open_link(Client(), "/accounts/first-run/not-a-token-anyone-made/")
    assert response.status_code == 403
    assert "not one that make run printed" in response.text


def test_a_link_to_an_account_made_inactive_is_refused() -> None:
    path = start()["path"]
    User.objects.update(is_active=False)
    response = open_link(Client(), path)
    assert response.status_code == 403
    assert "not active" in response.text


def test_a_browser_on_another_machine_gets_a_404() -> None:
    path = start()["path"]
    response = open_link(Client(), path, remote_addr="192.0.2.7")
    assert response.status_code == 404
    assert SignInLink.objects.usable().count() == 1  # not spent by the refusal


def test_without_debug_the_link_path_is_a_404_and_the_command_makes_no_account() -> None:
    with override_settings(DEBUG=True):
        call_command("local_signin", owner="alice", stdout=StringIO())
    token = SignInLink.issue(User.objects.get())
    assert not settings.DEBUG
    response = Client().get(f"/accounts/first-run/{token}/")
    assert response.status_code == 404
    assert "_auth_user_id" not in Client().session

    User.objects.all().delete()
    with pytest.raises(CommandError, match="FLOWDROP_DEBUG=1"):
        call_command("local_signin", owner="carol", stdout=StringIO())
    assert not User.objects.exists()


def test_demo_loaded_ownerless_earlier_is_given_to_the_local_account_once_journalled() -> None:
    call_command("import_transcripts", *DEMO_FILES, stdout=StringIO())
    assert set(Conversation.objects.values_list("owner", flat=True)) == {None}
    start(owner="alice")
    alice = User.objects.get(username="alice")
    assert set(Conversation.objects.values_list("owner", flat=True)) == {alice.pk}
    entries = BufferChange.objects.filter(action="owner")
    assert entries.count() == len(DEMO_KEYS)
    assert all(e.rows == [{"change": "owner", "old": None, "new": "alice"}] for e in entries)
    assert {e.via for e in entries} == {"make run"}

    start(owner="alice")
    assert BufferChange.objects.filter(action="owner").count() == len(DEMO_KEYS)


def test_demo_owned_by_someone_else_stays_theirs_and_the_local_account_gets_its_own() -> None:
    dana = User.objects.create_user("dana")
    call_command("import_transcripts", *DEMO_FILES, owner="dana", stdout=StringIO())
    theirs = set(Conversation.objects.values_list("pk", flat=True))

    start(owner="alice")

    assert set(Conversation.objects.filter(owner=dana).values_list("pk", flat=True)) == theirs
    alices = Conversation.objects.filter(owner__username="alice")
    assert alices.count() == len(theirs)  # keys are per owner: a copy of each, hers


def test_the_account_the_link_signs_in_can_drive_every_demo_conversation() -> None:
    path = start()["path"]
    browser = Client()
    open_link(browser, path)
    for conversation in Conversation.objects.all():
        page = browser.get(f"/c/{conversation.pk}/")
        assert 'id="user-form"' in page.text, conversation.title
    crashed = Conversation.objects.filter(unanswered_count__gt=0).first()
    assert crashed is not None
    response = browser.post(
        f"/c/{crashed.pk}/append", {"kind": "user", "at": "0", "user-content": "go on"}
    )
    assert response.status_code == 302
    crashed.refresh_from_db()
    assert crashed.unanswered_count == 0


def test_an_inactive_local_account_stops_the_start_with_what_to_do() -> None:
    User.objects.create_user("alice", is_active=False)
    with pytest.raises(CommandError, match="not active"):
        start(owner="alice")


def test_the_browser_tests_find_chromium_through_the_makefiles_lookup(tmp_path: Path) -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert ".ci/find-chromium" in makefile
    chromium, _ = find_chromium()
    looked_up = subprocess.run(
        [FIND_CHROMIUM, "--no-install"], capture_output=True, text=True, check=False
    )
    assert (chromium or "") == looked_up.stdout.strip()

    fake = tmp_path / "my-chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    chosen = subprocess.run(
        [FIND_CHROMIUM, "--no-install"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "CHROMIUM_PATH": str(fake)},
    )
    assert chosen.stdout.strip() == str(fake)


def test_without_a_chromium_the_lookup_stops_with_the_one_command_to_run(tmp_path: Path) -> None:
    bare = subprocess.run(
        ["/bin/sh", FIND_CHROMIUM, "--no-install"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": str(tmp_path)},  # no chromium, no apt-get
    )
    assert bare.returncode == 1
    assert bare.stdout == ""
    assert "apt-get install chromium" in bare.stderr
