"""The inspector's forms: what a person types, turned into messages for the one service."""

from __future__ import annotations

from typing import Any

from django import forms

from .healing.formats import READABLE


class TurnForm(forms.Form):
    """A user turn. Empty or whitespace-only text is refused: MEM-16 turns empty content into
    no message at all rather than an empty turn, and here nothing would be appended, so the
    form says so instead (docs/decisions.md, MEM-16)."""

    content = forms.CharField(
        label="Your turn",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Type a user turn…"}),
        max_length=100_000,
        strip=False,
        error_messages={"required": "A user turn needs some text."},
    )

    def clean_content(self) -> str:
        content: str = self.cleaned_data["content"]
        if not content.strip():
            raise forms.ValidationError("A user turn needs some text, not only whitespace.")
        return content

    def messages(self) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.cleaned_data["content"]}]


class ToolResultForm(forms.Form):
    """QA: a tool result for a chosen call id."""

    tool_call_id = forms.CharField(label="Answers call id", max_length=512)
    content = forms.CharField(
        label="Result", widget=forms.Textarea(attrs={"rows": 2}), max_length=100_000, strip=False
    )

    def messages(self) -> list[dict[str, Any]]:
        return [
            {
                "role": "tool",
                "content": self.cleaned_data["content"],
                "tool_call_id": self.cleaned_data["tool_call_id"],
            }
        ]


class AssistantTurnForm(forms.Form):
    """QA: an assistant turn declaring calls (ids separated by commas or spaces)."""

    call_ids = forms.CharField(label="Declares call ids", max_length=5_000)
    name = forms.CharField(label="Tool name", max_length=200, initial="search")
    content = forms.CharField(
        label="Text",
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        max_length=100_000,
        strip=False,
    )

    def clean_call_ids(self) -> list[str]:
        ids: list[str] = self.cleaned_data["call_ids"].replace(",", " ").split()
        if not ids:
            raise forms.ValidationError("Name at least one call id.")
        return ids

    def messages(self) -> list[dict[str, Any]]:
        calls = [
            {"id": cid, "name": self.cleaned_data["name"]} for cid in self.cleaned_data["call_ids"]
        ]
        return [{"role": "assistant", "content": self.cleaned_data["content"], "tool_calls": calls}]


FORMS: dict[str, type[TurnForm | ToolResultForm | AssistantTurnForm]] = {
    "user": TurnForm,
    "tool": ToolResultForm,
    "assistant": AssistantTurnForm,
}


class _ManyFiles(forms.ClearableFileInput):
    allow_multiple_selected = True


class _FilesField(forms.FileField):
    """Several files from one input (Django's documented recipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", _ManyFiles())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = list(data) if isinstance(data, list | tuple) else [data]
        # No file at all is cleaned as one missing file, so that "required" holds.
        return [super(_FilesField, self).clean(file, initial) for file in files or [None]]


class UploadForm(forms.Form):
    """Transcript files to import, in the stored shape, a provider's or an agent runtime's."""

    transcripts = _FilesField(
        label="Transcript files",
        help_text=".json, .jsonl or .traj, up to 32 MB each; several at once, up to 64 MB in all.",
        widget=_ManyFiles(attrs={"accept": ".json,.jsonl,.traj,application/json"}),
    )
    format = forms.ChoiceField(
        label="Format",
        choices=[("auto", "Detect it"), *((f.name, f.label) for f in READABLE.values())],
        initial="auto",
        required=False,
    )

    def clean_transcripts(self) -> list[Any]:
        files: list[Any] = self.cleaned_data["transcripts"]
        if len(files) > MAX_UPLOAD_FILES:
            raise forms.ValidationError(f"Upload at most {MAX_UPLOAD_FILES} files at once.")
        total = sum(file.size for file in files)
        if total > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                f"These files add up to {total / 1024 / 1024:.1f} MB; upload at most "
                f"{MAX_UPLOAD_BYTES / 1024 / 1024:,.0f} MB at once, or import them with "
                "manage.py import_transcripts."
            )
        return files


MAX_UPLOAD_FILES = 20
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
"""What one upload reads in all: each file is read whole and the import holds every one
until it is stored, several times its size in memory."""
