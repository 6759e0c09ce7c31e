"""The admin tier. Read-only for now: repairs and edits come through the service later."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import Conversation, Message


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class HasUnansweredCalls(admin.SimpleListFilter):
    title = "unanswered calls"
    parameter_name = "unanswered"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "has unanswered calls"), ("no", "none")]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        if self.value() == "yes":
            return queryset.with_unanswered_calls()
        if self.value() == "no":
            return queryset.without_unanswered_calls()
        return queryset


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = (
        "__str__",
        "source",
        "message_count",
        "unanswered_count",
        "healed_count",
        "scope",
        "updated_at",
    )
    list_filter = (HasUnansweredCalls, "scope")
    search_fields = ("title", "source", "key")
    readonly_fields = (
        "message_count",
        "unanswered_count",
        "healed_count",
        "created_at",
        "updated_at",
    )


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("conversation", "role", "answers_call_id", "is_placeholder")
    list_filter = ("role", "is_placeholder")
    list_select_related = ("conversation",)
    search_fields = ("answers_call_id",)
    raw_id_fields = ("conversation", "block")
