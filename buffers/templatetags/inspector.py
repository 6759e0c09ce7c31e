from __future__ import annotations

import json
import uuid

from django import template

from buffers import presenters
from buffers.healing import formats, sendability, verdicts
from buffers.models import Conversation
from buffers.presenters import Window

register = template.Library()


@register.filter
def message_href(window: Window, index: int | None) -> str:
    """A link to message ``index``: its anchor when this page shows it, else the page that
    opens there (a deep link into a long buffer loads only the window around it)."""
    if index is None:
        return ""
    if index in window:
        return f"#m-{index}"
    return f"?at={index}#m-{index}"


@register.filter
def branches(conversation: Conversation) -> presenters.Branches:
    """Where the conversation's traced history branched, as far as its metadata says."""
    return presenters.branches(conversation)


@register.filter
def provider_name(provider: str) -> str:
    """A provider by name: "OpenAI Responses"."""
    return sendability.PROVIDER_NAMES[provider]


@register.filter
def provider_names(providers: list[str]) -> str:
    """Providers by name: "Anthropic, Gemini"."""
    return ", ".join(sendability.PROVIDER_NAMES[p] for p in providers)


@register.filter
def problem_label(kind: str, count: int = 1) -> str:
    """A kind of problem in words, plural for a count other than 1: "2 orphan results"."""
    singular, plural = verdicts.PROBLEM_LABELS[kind], verdicts.PROBLEM_PLURALS[kind]
    return singular if count == 1 else plural


@register.filter
def as_json(value: object) -> str:
    """A stored message (or any JSON value) as indented JSON text, for a <pre>; escaped by
    the template like any other text."""
    return json.dumps(value, indent=2, ensure_ascii=False)


@register.filter
def format_label(format: str) -> str:
    """A format's name in words ("Claude Code session"); empty for none."""
    return formats.label(format) if format else ""


@register.simple_tag
def fresh_key() -> str:
    """A new idempotency key for a form (buffers/idempotency.py)."""
    return uuid.uuid4().hex
