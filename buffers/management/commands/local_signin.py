"""manage.py local_signin: what ``make run`` does before it serves. Makes the local account
(on the first start), loads the demo transcripts owned by it, and prints a one-time sign-in
link for it, the way Jupyter prints its token URL. Development server only."""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
from io import StringIO
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

from buffers import services
from buffers.models import Conversation, Scope, SignInLink
from buffers.transcripts import read_transcript_file

DEMO = Path(settings.BASE_DIR) / "buffers" / "demo"


class Command(BaseCommand):
    help = (
        "Make the local account (a superuser with no password, named OWNER or $USER) if it "
        "is missing, load the demo transcripts owned by it, and print a one-time sign-in "
        "link to ADDRESS. Only with FLOWDROP_DEBUG=1: make run calls it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--address",
            default="127.0.0.1:8000",
            help="HOST:PORT the development server listens on, for the link.",
        )
        parser.add_argument(
            "--owner",
            metavar="USERNAME",
            help="The local account's username (default: $USER, or the login name).",
        )

    def handle(self, *args: Any, address: str, owner: str | None, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError(
                "Sign-in links are for the development server only: set FLOWDROP_DEBUG=1 "
                "(make run does). On a server, sign in with a password (make superuser)."
            )
        user = _local_account(owner or os.environ.get("USER") or getpass.getuser())
        self._load_demo(user)
        token = SignInLink.issue(user)
        path = reverse("sign_in_link", args=[token])
        self.stdout.write(f"Sign in: http://{_link_host(address)}{path}")
        self.stdout.write(
            f"(signs in as {user.get_username()}, once, within an hour; "
            "make run prints a new one on every start)",
        )

    def _load_demo(self, user: User) -> None:
        files = sorted(DEMO.glob("*.json*"))
        keys = [c.key for path in files for c in read_transcript_file(path).conversations if c.key]
        # Ownerless ones first: keys are per owner, so the import would not see them.
        given = services.give_ownerless(
            Conversation.objects.filter(scope=Scope.GLOBAL, scope_id="", key__in=keys),
            owner=user,
            via="make run",
            by=f"{getpass.getuser()} (shell)",
            reason="demo transcripts belong to the local account",
        )
        if given:
            self.stdout.write(f"{len(given)} demo transcripts loaded earlier are now yours.")
        call_command(
            "import_transcripts",
            *files,
            skip_existing=True,
            owner=user.get_username(),
            verbosity=0,
            stdout=StringIO(),  # "0 imported, 3 already stored" on every start is noise
            stderr=self.stderr,
        )


_USERNAME = re.compile(r"[^\w.@+-]")


def _local_account(name: str) -> User:
    """The account ``name`` (made a superuser with no usable password when missing)."""
    username = _USERNAME.sub("-", name)[:150] or "local"
    user, created = User.objects.get_or_create(
        username=username, defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    elif not user.is_active:
        raise CommandError(
            f"The account {username!r} is not active; activate it in the admin, or run "
            "make run OWNER=another-name."
        )
    return user


def _link_host(address: str) -> str:
    """``address`` as a browser on this machine reaches it: an unspecified host (0.0.0.0,
    ::) is this machine's loopback."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return f"{host}:{port}"
    if ip.is_unspecified:
        ip = ipaddress.ip_address("::1" if ip.version == 6 else "127.0.0.1")
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"
