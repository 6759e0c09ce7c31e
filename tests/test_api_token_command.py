"""``manage.py api_token``: make, list and revoke tokens as README shows, and refuse what the
admin's form refuses, in one line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from buffers.models import ApiToken

pytestmark = pytest.mark.django_db


def api_token(*arguments: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("api_token", *arguments, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_token_is_printed_once_listed_by_its_hint_and_revoked_by_its_id() -> None:
    User.objects.create_user("ada")

    token, said = api_token("create", "ada", "--name", "agent runner")
    [row] = ApiToken.objects.all()
    listed, _ = api_token("list", "ada")
    revoked, _ = api_token("revoke", str(row.pk))

    assert said == f"Token {row.pk} for ada (agent runner). Shown once:\n"
    assert token.strip().startswith(row.hint)
    assert token.strip() not in listed
    assert listed.split("\t")[:5] == [str(row.pk), f"{row.hint}…", "ada", "agent runner", "live"]
    assert revoked.startswith(f"Revoked token {row.pk}")
    assert "revoked" in api_token("list")[0]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("x" * 101, "--name is 101 characters long; a token's name holds at most 100."),
        ("", "--name is empty; name the token, to tell it from the others."),
        ("  ", "--name is empty; name the token, to tell it from the others."),
    ],
)
def test_a_name_the_admin_would_refuse_is_refused_and_nothing_stored(name: str, said: str) -> None:
    """From the operator's hunt: SQLite stored a 101-character name, which the README's move
    to PostgreSQL then failed to load (nothing of the dump at all)."""
    User.objects.create_user("ada")

    with pytest.raises(CommandError) as refused:
        api_token("create", "ada", "--name", name)

    assert str(refused.value) == said
    assert not ApiToken.objects.exists()


def test_the_list_says_when_a_tokens_user_can_no_longer_use_it() -> None:
    ada = User.objects.create_user("ada")
    api_token("create", "ada", "--name", "laptop")
    ada.is_active = False
    ada.save()

    listed, _ = api_token("list")

    assert listed.split("\t")[4] == "inactive user"
