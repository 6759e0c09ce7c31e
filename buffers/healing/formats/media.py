"""Content parts that are not text (images, documents, audio) in each provider's shape, and
the translation of one provider's into another's where both take the same thing.

Every exporter writes text in its own spelling. A part that is not text is written in the
shape it was read in when it is its provider's own, or when it cannot be translated; then
the provider refuses it, and sendability says so (``sendability.refused_part``). Known:

- the family of a part (``part_family``): the provider whose API alone takes its type, in
  that provider's shape (Anthropic ``image`` with a ``source``, OpenAI Chat ``image_url``,
  OpenAI Responses ``input_image``...); Gemini for a part without ``type`` that has one of
  Gemini's keys (``inlineData``...); both OpenAI APIs for ``refusal``; OpenTelemetry's
  ``blob`` and ``uri``, which are no provider's;
- what it holds (``Media``): an image, a PDF or audio, inline (base64, with its media
  type) or at an http(s) URL;
- where each provider takes another's (``_TAKEN``: by the role of the message that holds
  it, of which kinds), and its own (``_OWN_PARTS``).

Translated: inline images and PDFs between all four (and from OpenTelemetry), image and
PDF URLs between Anthropic and OpenAI, inline WAV and MP3 audio between OpenAI Chat and
Gemini, a refusal as its text. Not: a provider's file ids (another provider cannot open
them), Gemini ``fileData`` (a file the Gemini API holds), a Responses ``file_url`` (any
kind of file), Anthropic text and content documents, media in roles the provider does not
take them in (an OpenAI Chat tool message holds text only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from .common import text_of

Family = Literal[
    "anthropic", "openai-chat", "openai-responses", "gemini", "openai", "otel", "none", "textless"
]
"""A part's family: a provider's; ``openai``, a part both OpenAI APIs take (``refusal``);
``otel``, an OpenTelemetry GenAI ``blob`` or ``uri`` part, which no provider takes as it
is but whose image or PDF each can be sent; ``none``, a part named as a provider's type
names one but not in its shape (an ``image`` without Anthropic's ``source``), which no
provider takes; ``textless``, a text part without its text, which no provider takes."""

_TYPED_PARTS: dict[Family, frozenset[str]] = {
    "anthropic": frozenset(
        {
            "image",
            "document",
            "search_result",
            "thinking",
            "redacted_thinking",
            "server_tool_use",
            "web_search_tool_result",
            "web_fetch_tool_result",
            "code_execution_tool_result",
            "bash_code_execution_tool_result",
            "text_editor_code_execution_tool_result",
            "mcp_tool_use",
            "mcp_tool_result",
            "container_upload",
            "tool_use",
            "tool_result",
        }
    ),
    "openai-chat": frozenset({"image_url", "input_audio", "file"}),
    "openai-responses": frozenset({"input_image", "input_file"}),
    "openai": frozenset({"refusal"}),
    "otel": frozenset({"blob", "uri"}),
}
"""Content part types by family: each provider's, which its API alone takes; ``refusal``,
both OpenAI APIs'; OpenTelemetry's, which none takes as they are."""
_NO_PROVIDERS = frozenset({"none", "textless"})
"""The families no provider takes."""
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
"""The types of a text part, in each provider's spelling: one without a string ``text``
(OpenTelemetry's when content is not captured; a log's ``"text": null``) is no provider's."""
_SHAPES: dict[str, tuple[str, ...]] = {
    "image": ("source",),
    "document": ("source",),
    "image_url": ("image_url",),
    "input_audio": ("input_audio",),
    "file": ("file",),
    "input_image": ("image_url", "file_id"),
    "input_file": ("file_data", "file_id", "file_url"),
    "refusal": ("refusal",),
    "blob": ("content",),
    "uri": ("uri",),
    "thinking": ("signature",),
}
"""What a part of a type other formats also use must hold to be its provider's: one of
these keys, an object (``source``, ``image_url`` in OpenAI Chat, ``input_audio``,
``file``) or a string (the others; a thinking block's signature, which Anthropic
requires)."""
_OBJECTS = frozenset({"source", "input_audio", "file"})
_GEMINI_PARTS = (
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
    "thought",
    "inline_data",
    "file_data",
    "executable_code",
    "code_execution_result",
)
"""Keys of a Gemini part that is not plain text (Gemini parts have no ``type``; its JSON
API takes the keys in either spelling)."""


def part_family(part: object) -> tuple[Family, str] | None:
    """Whose shape a content part that is not text is in, and its name as that provider
    spells it; None for a text part in any spelling (every exporter writes text in its
    own) or a part of no known family."""
    if not isinstance(part, dict) or text_of(part) is not None:
        return None
    kind = part.get("type")
    if isinstance(kind, str):
        if kind in _TEXT_TYPES:  # its text is missing or not a string (text_of said so)
            return "textless", _part_named(kind)
        for family, kinds in _TYPED_PARTS.items():
            if kind in kinds:
                name = _part_named(kind)
                return (family if _shaped(part, kind) else "none"), name
        return None
    if "type" in part:
        return None
    for key in _GEMINI_PARTS:
        if key in part:
            return "gemini", f"a Gemini {key} part"
    return None


def _shaped(part: dict[str, Any], kind: str) -> bool:
    keys = _SHAPES.get(kind)
    if keys is None:
        return True
    if kind == "image_url":
        return isinstance(part.get("image_url"), dict)
    if kind == "refusal":  # an empty refusal is one too
        return isinstance(part.get("refusal"), str)
    return any(
        isinstance(part.get(key), dict if key in _OBJECTS else str) and part.get(key)
        for key in keys
    )


@dataclass(frozen=True)
class Media:
    """What a part holds: ``data`` (base64) of ``mime``, or a ``url``; a ``filename`` if
    the part named one."""

    kind: Literal["image", "pdf", "audio"]
    mime: str | None
    data: str | None = None
    url: str | None = None
    filename: str | None = None


_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)", re.S)
_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types all four providers take inline."""
_AUDIO = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
"""The audio types OpenAI Chat takes, by the ``format`` it names them with."""


def held(part: dict[str, Any], family: Family) -> Media | None:
    """What a part of ``family`` holds, when it is something another provider may take."""
    if family == "otel":
        return _otel(part)
    if family == "anthropic":
        return _anthropic(part)
    if family == "openai-chat":
        return _openai_chat(part)
    if family == "openai-responses":
        return _openai_responses(part)
    return _gemini(part)


def _kind_of(mime: str | None) -> Literal["image", "pdf", "audio"] | None:
    if mime in _IMAGES:
        return "image"
    if mime == "application/pdf":
        return "pdf"
    if mime in _AUDIO:
        return "audio"
    return None


def _inline(mime: object, data: object, filename: object = None) -> Media | None:
    if not isinstance(mime, str) or not isinstance(data, str) or not data:
        return None
    mime = _SAME_TYPES.get(mime.lower(), mime.lower())
    kind = _kind_of(mime)
    if kind is None:
        return None
    name = filename if isinstance(filename, str) else None
    return Media(kind, mime, data=data, filename=name)


_SAME_TYPES = {"image/jpg": "image/jpeg"}
"""Media types written in the wild for one the providers name otherwise."""


def _from_url(url: object, kind: Literal["image", "pdf"], filename: object = None) -> Media | None:
    """A data URL's inline media, or an http(s) URL's: of the kind the part says, else
    None (a URL source holding another kind's data is not guessed at)."""
    if not isinstance(url, str):
        return None
    if (inline := _DATA_URL.fullmatch(url)) is not None:
        found = _inline(inline["mime"], inline["data"], filename)
        return found if found is not None and found.kind == kind else None
    if url.startswith(("https://", "http://")):
        return Media(kind, None, url=url, filename=filename if isinstance(filename, str) else None)
    return None


def _anthropic(part: dict[str, Any]) -> Media | None:
    source = part.get("source")
    if part.get("type") not in ("image", "document") or not isinstance(source, dict):
        return None
    kind: Literal["image", "pdf"] = "image" if part["type"] == "image" else "pdf"
    title = part.get("title")
    if source.get("type") == "base64":
        found = _inline(source.get("media_type"), source.get("data"), title)
        return found if found is not None and found.kind == kind else None
    if source.get("type") == "url":
        return _from_url(source.get("url"), kind, title)
    return None


def _openai_chat(part: dict[str, Any]) -> Media | None:
    kind = part.get("type")
    if kind == "image_url" and isinstance(part.get("image_url"), dict):
        return _from_url(part["image_url"].get("url"), "image")
    if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
        audio = part["input_audio"]
        mime = {"wav": "audio/wav", "mp3": "audio/mpeg"}.get(str(audio.get("format")))
        return _inline(mime, audio.get("data"))
    if kind == "file" and isinstance(part.get("file"), dict):
        file = part["file"]
        return _from_url(file.get("file_data"), "pdf", file.get("filename"))
    return None


def _openai_responses(part: dict[str, Any]) -> Media | None:
    kind = part.get("type")
    if kind == "input_image":
        return _from_url(part.get("image_url"), "image")
    if kind == "input_file":  # a file_url may be any kind of file: only a PDF's data crosses
        found = _from_url(part.get("file_data"), "pdf", part.get("filename"))
        return found if found is not None and found.data else None
    return None


def _otel(part: dict[str, Any]) -> Media | None:
    if part.get("type") == "blob":
        return _inline(part.get("mime_type"), part.get("content"))
    mime = part.get("mime_type")
    kind: Literal["image", "pdf"] = "pdf" if mime == "application/pdf" else "image"
    if kind == "image" and part.get("modality") != "image":
        return None
    return _from_url(part.get("uri"), kind)


def _gemini(part: dict[str, Any]) -> Media | None:
    if len(part) != 1:
        return None
    key, inline = next(iter(part.items()))
    if key not in ("inlineData", "inline_data") or not isinstance(inline, dict):
        return None
    return _inline(inline.get("mimeType", inline.get("mime_type")), inline.get("data"))


_TAKEN: dict[tuple[str, str], frozenset[str]] = {
    ("anthropic", "user"): frozenset({"image", "pdf"}),
    ("anthropic", "tool"): frozenset({"image", "pdf"}),
    ("openai-chat", "user"): frozenset({"image", "pdf", "audio"}),
    ("openai-responses", "user"): frozenset({"image", "pdf"}),
    ("openai-responses", "system"): frozenset({"image", "pdf"}),
    ("openai-responses", "tool"): frozenset({"image", "pdf"}),
    ("gemini", "user"): frozenset({"image", "pdf", "audio"}),
    ("gemini", "assistant"): frozenset({"image", "pdf", "audio"}),
}
"""What each provider takes, by the role of the message whose content holds it (a tool
row's content is a result's: Anthropic's ``tool_result``, Responses'
``function_call_output``)."""


_OWN_PARTS: dict[str, dict[str, frozenset[str]]] = {
    "openai-chat": {
        "user": frozenset({"image_url", "input_audio", "file"}),
        "assistant": frozenset({"refusal"}),
        "system": frozenset(),
        "tool": frozenset(),
    },
    "openai-responses": {
        "user": frozenset({"input_image", "input_file"}),
        "system": frozenset({"input_image", "input_file"}),
        "tool": frozenset({"input_image", "input_file"}),
        "assistant": frozenset({"refusal"}),
    },
    "anthropic": {
        "system": frozenset(),
        "tool": frozenset({"image", "document", "search_result"}),
    },
    "gemini": {"system": frozenset()},
}
"""Which of a provider's own parts (by type, or Gemini key) a ``role`` message takes,
where its API says (a role not named takes them all): the OpenAI APIs' types; Anthropic's
``system`` holds text blocks, and a ``tool_result`` text, images, documents and search
results; Gemini's system instruction is text."""


def _part_named(kind: str) -> str:
    """A part's type in a sentence, with its article: an image part, a uri part."""
    article = "an" if kind[0] in "aeio" or kind.startswith("un") else "a"
    return f"{article} {kind} part"


def taken(part: object, provider: str, role: str) -> bool:
    """Whether ``provider`` takes ``part``, as its exporter writes it, in a ``role``
    message: a part of no known family is not judged; one in no provider's shape is
    refused; one of ``provider``'s own is judged by ``_OWN_PARTS``; another provider's
    must translate."""
    found = part_family(part)
    if found is None:
        return True
    family = found[0]
    if family in _NO_PROVIDERS:
        return False
    if family == provider or (family == "openai" and provider.startswith("openai")):
        assert isinstance(part, dict)
        kind = part.get("type")
        if kind is None:  # a Gemini part: its key
            kind = next((key for key in _GEMINI_PARTS if key in part), None)
        allowed = _OWN_PARTS.get(provider, {}).get(role)
        return (allowed is None or kind in allowed) and not _file_data_unnamed(part)
    return translated(part, provider, role) is not None


def _file_data_unnamed(part: dict[str, Any]) -> bool:
    """An OpenAI file sent inline without its ``filename``, which both OpenAI APIs refuse
    ("Missing required parameter"), though their SDKs' types leave it optional."""
    inner = part.get("file") if part.get("type") == "file" else part
    return (
        part.get("type") in ("file", "input_file")
        and isinstance(inner, dict)
        and inner.get("file_data") is not None
        and not inner.get("filename")
    )


def translated(part: object, provider: str, role: str) -> dict[str, Any] | None:
    """``part`` in ``provider``'s shape, for a ``role`` message, when it is another
    provider's and ``provider`` takes what it holds there; else None."""
    found = part_family(part)
    if found is None or found[0] == provider or found[0] in _NO_PROVIDERS:
        return None
    assert isinstance(part, dict)
    if found[0] == "openai":  # a refusal, to a provider that has no part for one: its text
        if provider.startswith("openai"):
            return None
        text = part["refusal"]
        return {"text": text} if provider == "gemini" else {"type": "text", "text": text}
    media = held(part, found[0])
    if media is None or media.kind not in _TAKEN.get((provider, role), frozenset()):
        return None
    return _write(media, provider)


def written(part: object, provider: str, role: str) -> object:
    """``part`` as ``provider``'s exporter writes it in a ``role`` message: translated
    when it can be, else as it was read."""
    found = translated(part, provider, role)
    return part if found is None else found


def _write(media: Media, provider: str) -> dict[str, Any] | None:
    data_url = None if media.data is None else f"data:{media.mime};base64,{media.data}"
    filename = media.filename or "document.pdf"
    if provider == "anthropic":
        if media.kind == "audio":
            return None
        source = (
            {"type": "base64", "media_type": media.mime, "data": media.data}
            if media.data is not None
            else {"type": "url", "url": media.url}
        )
        return {"type": "image" if media.kind == "image" else "document", "source": source}
    if provider == "openai-chat":
        if media.kind == "image":
            return {"type": "image_url", "image_url": {"url": data_url or media.url}}
        if media.kind == "audio" and media.data is not None:
            audio = {"data": media.data, "format": _AUDIO[str(media.mime)]}
            return {"type": "input_audio", "input_audio": audio}
        if media.kind == "pdf" and data_url is not None:
            return {"type": "file", "file": {"filename": filename, "file_data": data_url}}
        return None
    if provider == "openai-responses":
        if media.kind == "image":
            return {"type": "input_image", "image_url": data_url or media.url, "detail": "auto"}
        if media.kind == "pdf" and data_url is not None:
            return {"type": "input_file", "filename": filename, "file_data": data_url}
        if media.kind == "pdf":
            return {"type": "input_file", "file_url": media.url}
        return None
    if media.data is None:
        return None
    mime = "audio/mp3" if media.mime == "audio/mpeg" else media.mime  # as Gemini names it
    return {"inlineData": {"mimeType": mime, "data": media.data}}
