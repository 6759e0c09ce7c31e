"""What ``manage.py check --deploy`` says of a deployment beyond Django's own checks
(``make serve`` runs it first, and does not start on any finding)."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register


@register(Tags.security, deploy=True)
def secret_key_from_the_environment(**kwargs: Any) -> list[CheckMessage]:
    """Debug off and no FLOWDROP_SECRET_KEY would run on the key committed in settings.py,
    which anyone can read: sessions and password resets could be forged."""
    if settings.DEBUG or os.environ.get("FLOWDROP_SECRET_KEY"):
        return []
    return [
        Error(
            "FLOWDROP_SECRET_KEY is not set, so the server would run on the development key "
            "committed in flowdrop_web/settings.py.",
            hint="Set FLOWDROP_SECRET_KEY to a long random value, e.g. "
            '`python3 -c "import secrets; print(secrets.token_urlsafe(50))"`.',
            id="flowdrop.E001",
        )
    ]
