from __future__ import annotations

from django import template

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
