"""manage.py api_token create USER [--name N] | list [USER] | revoke HINT_OR_ID: the storage
API's bearer tokens. A token is printed once, when it is made; only its digest is kept."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from buffers import access
from buffers.models import ApiToken


class Command(BaseCommand):
    help = "Make, list and revoke API tokens (Authorization: Bearer <token>)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Make a token for a user; it is printed once.")
        create.add_argument("username")
        create.add_argument("--name", default="made with manage.py api_token")
        listing = actions.add_parser("list", help="Tokens (all, or one user's), never their value.")
        listing.add_argument("username", nargs="?")
        revoke = actions.add_parser("revoke", help="Revoke a token, named by its id or its hint.")
        revoke.add_argument("token", metavar="ID_OR_HINT")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "create":
            user = self._user(options["username"])
            if not access.is_real(user):
                raise CommandError(f"{user.get_username()} is not an active user.")
            row, token = ApiToken.issue(user, self._name(options["name"]))
            self.stderr.write(f"Token {row.pk} for {user.get_username()} ({row.name}). Shown once:")
            self.stdout.write(token)
        elif action == "list":
            tokens = ApiToken.objects.select_related("user").order_by("created_at", "id")
            if options["username"]:
                tokens = tokens.filter(user=self._user(options["username"]))
            for row in tokens:
                state = "live" if row.user.is_active else "inactive user"
                if row.revoked_at:
                    state = f"revoked {row.revoked_at:%Y-%m-%d}"
                used = (
                    f"last used {row.last_used_at:%Y-%m-%d %H:%M}" if row.last_used_at else "unused"
                )
                self.stdout.write(
                    f"{row.pk}\t{row.hint}…\t{row.user.get_username()}\t{row.name}\t{state}\t{used}"
                )
        else:
            self._revoke(options["token"])

    def _name(self, name: str) -> str:
        """The name as the admin's form takes it: stripped, not empty, not too long (SQLite
        would store a longer one, which PostgreSQL then refuses to load from a backup)."""
        name = name.strip()
        limit = ApiToken._meta.get_field("name").max_length
        if not name:
            raise CommandError("--name is empty; name the token, to tell it from the others.")
        if limit is not None and len(name) > limit:
            raise CommandError(
                f"--name is {len(name)} characters long; a token's name holds at most {limit}."
            )
        return name

    def _user(self, username: str) -> Any:
        try:
            return get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"There is no user {username!r}.") from None

    def _revoke(self, named: str) -> None:
        matches = ApiToken.objects.filter(revoked_at__isnull=True)
        matches = matches.filter(pk=int(named)) if named.isdecimal() else matches.filter(hint=named)
        found = list(matches[:2])
        if len(found) != 1:
            what = "no live token" if not found else "more than one live token"
            raise CommandError(f"{named!r} names {what}; use the id from `api_token list`.")
        found[0].revoked_at = timezone.now()
        found[0].save(update_fields=["revoked_at"])
        self.stdout.write(f"Revoked token {found[0].pk} ({found[0]}).")
