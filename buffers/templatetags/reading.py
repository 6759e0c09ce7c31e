"""Filters for reading one message (templates/buffers/_message.html)."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def kb(size: int) -> str:
    """A size in bytes as kilobytes (1,024 bytes) for a button: "60 KB", "3.2 KB", "0.4 KB"."""
    kilobytes = size / 1024
    if kilobytes >= 10:
        return f"{kilobytes:,.0f} KB"
    return f"{kilobytes:.1f} KB"
