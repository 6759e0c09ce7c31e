"""The admin tier (MEM-15): the only place a stored message is edited or deleted, and where
operators repair conversations. Every write goes through ``buffers.services`` (which keeps
the buffer's order, index and counters right and journals the change); nothing here saves
a buffer row itself."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import ActionLocation, BaseModelAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.forms.fields import InvalidJSONInput, JSONString
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.utils import timezone

from . import access, healing, presenters, selectors, services, transcripts
from .healing import jsontext
from .models import (
    ApiToken,
    BufferChange,
    Conversation,
    Message,
    SharedWithGroup,
    SharedWithUser,
)


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


class SourceFilter(admin.AllValuesFieldListFilter):
    """Django's filter of every source, with a conversation of none (every runtime's log
    imported from a file) named "(none)" rather than an empty link."""

    def choices(self, changelist: Any) -> Iterator[Any]:
        for choice in super().choices(changelist):
            if choice["display"] == "":
                choice["display"] = "(none)"
            yield choice


class HasHealedPlaceholders(admin.SimpleListFilter):
    title = "healed placeholders"
    parameter_name = "healed"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "has healed placeholders"), ("no", "none")]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        if self.value() == "yes":
            return queryset.healed()
        if self.value() == "no":
            return queryset.filter(healed_count=0)
        return queryset


class HealForm(forms.Form):
    reason = forms.CharField(
        max_length=500, help_text="Why: kept in each conversation's repair journal."
    )


class AdministrativeTier(BaseModelAdmin[Any]):
    """MEM-15: every permission here is Django's AND the policy's administrative tier, so
    no backend or grant can open the admin to someone the policy keeps out."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return access.is_administrative(request.user) and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_administrative(request.user) and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return access.is_administrative(request.user) and super().has_add_permission(request, *args)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_administrative(request.user) and super().has_change_permission(
            request, obj
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return access.is_administrative(request.user) and super().has_delete_permission(
            request, obj
        )


class SharedWithUserFormSet(forms.BaseInlineFormSet[SharedWithUser, Conversation, Any]):
    """The sharing service's rule, said on the form rather than as an error page: a
    conversation is never shared with its owner."""

    def clean(self) -> None:
        super().clean()
        for form in self.forms:
            cleaned = getattr(form, "cleaned_data", {})
            # A row shown read-only (no change permission) holds its user's pk, not the user.
            viewer = cleaned.get("user")
            if viewer is None or cleaned.get("DELETE"):
                continue
            if getattr(viewer, "pk", viewer) == self.instance.owner_id:
                form.add_error("user", "This is its owner, who can already view and drive it.")
            elif form.has_changed() and not viewer.is_active:
                form.add_error("user", f"{viewer.get_username()}'s account is not active.")


class SharedWithUserInline(AdministrativeTier, admin.TabularInline[SharedWithUser, Conversation]):
    model = SharedWithUser
    formset = SharedWithUserFormSet
    raw_id_fields = ("user",)
    extra = 0
    verbose_name = "user it is shared with (may view, never drive)"
    verbose_name_plural = "shared with users"


class SharedWithGroupInline(AdministrativeTier, admin.TabularInline[SharedWithGroup, Conversation]):
    model = SharedWithGroup
    extra = 0
    verbose_name = "group it is shared with (its members may view, never drive)"
    verbose_name_plural = "shared with groups"


class ConversationForm(forms.ModelForm[Conversation]):
    """Its owner, the one field edited here: refused on the form when the new owner already
    holds a conversation under its storage identity (keys are per owner)."""

    class Meta:
        model = Conversation
        fields = ("owner",)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "owner" in cleaned and (why := services.owner_refusal(self.instance, cleaned["owner"])):
            self.add_error("owner", why)
        return cleaned


@dataclass(frozen=True)
class _Shares:
    """An inline of shares as the sharing service changes them: the row's field and the
    model it names, the service's pair, and the service's keyword for who."""

    field: str
    model: type[User] | type[Group]
    share: Callable[..., object]
    unshare: Callable[..., object]
    keyword: str


_SHARES = {
    SharedWithUser: _Shares(
        "user", User, services.share_conversation, services.unshare_conversation, "viewer"
    ),
    SharedWithGroup: _Shares(
        "group", Group, services.share_with_group, services.unshare_with_group, "group"
    ),
}


@admin.register(Conversation)
class ConversationAdmin(AdministrativeTier, admin.ModelAdmin[Conversation]):
    list_display = (
        "__str__",
        "owner",
        "source",
        "message_count",
        "unanswered_count",
        "healed_count",
        "scope",
        "updated_at",
    )
    list_filter = (
        HasUnansweredCalls,
        HasHealedPlaceholders,
        ("source", SourceFilter),
        "scope",
        "owner",
    )
    list_select_related = ("owner",)
    search_fields = ("title", "source", "key", "owner__username")
    # Who may see and drive it (its owner, and below whom it is shared with) is the one
    # thing edited here; the buffer changes only through the heal action and the message
    # pages.
    fields = (
        "owner",
        "title",
        "source",
        "source_format",
        "scope",
        "scope_id",
        "key",
        "message_count",
        "unanswered_count",
        "healed_count",
        "created_at",
        "updated_at",
        "metadata",
    )
    readonly_fields = fields[1:]
    form = ConversationForm
    raw_id_fields = ("owner",)
    inlines = (SharedWithUserInline, SharedWithGroupInline)
    actions = ("heal_unanswered_calls",)
    change_form_template = "admin/buffers/conversation/change_form.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Conversation, form: Any, change: bool) -> None:
        """Its owner changes through the ownership service (journalled); nothing else of
        the conversation is edited here."""
        services.change_owner(
            conversation=obj, owner=form.cleaned_data["owner"], via="admin", by=request.user
        )

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return super().changeform_view(request, *args, **kwargs)
        except services.OwnershipRefused as refused:  # taken since the form was checked
            self.message_user(request, f"Nothing was changed: {refused}", messages.ERROR)
            return redirect(request.get_full_path())

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        """Users and groups it is shared with change through the sharing service, as in the
        inspector (journalled); a row whose user or group is changed stops one share and
        makes another."""
        shares = _SHARES.get(formset.model)
        if shares is None:
            super().save_formset(request, form, formset, change)
            return
        field = shares.field

        def through(service: Callable[..., object], who: User | Group) -> None:
            service(
                conversation=form.instance, via="admin", by=request.user, **{shares.keyword: who}
            )

        # What formset.save() would have noted, for the admin's own history message.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for inline in formset.forms:
            old = inline.initial.get(field) if inline.instance.pk else None
            deleted = inline in formset.deleted_forms
            new = None if deleted else inline.cleaned_data.get(field)
            # A row shown read-only (no change permission) holds a pk: unchanged.
            if old == getattr(new, "pk", new):
                continue
            if deleted:
                formset.deleted_objects.append(inline.instance)
            elif old is None:
                formset.new_objects.append(inline.instance)
            else:
                formset.changed_objects.append((inline.instance, [field]))
            if old is not None:
                through(shares.unshare, shares.model.objects.get(pk=old))
            if new is not None:
                through(shares.share, new)

    def has_heal_permission(self, request: HttpRequest) -> bool:
        """Healing writes to buffers: for staff who may change messages."""
        return access.is_administrative(request.user) and request.user.has_perm(
            "buffers.change_message"
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting a conversation would take its journal with it: nothing is ever lost.
        return False

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        conversation = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if conversation is not None and self.has_view_or_change_permission(request, conversation):
            start = presenters.start_at(conversation, _int(request.GET.get("at")))
            context["window"] = presenters.window(
                conversation,
                start,
                start + presenters.PAGE,
                problems=presenters.open_calls(conversation),
            )
            context["changes"] = conversation.changes.select_related("actor")[:50]
            # The page's rows found as the window's are, in their blocks: filtered on the
            # index (start plus slot) alone, every row of the conversation was read (100,000
            # rows, 34 ms on PostgreSQL, for a page of 50).
            pk_at = dict(
                selectors.messages_page(
                    conversation, offset=start, limit=presenters.PAGE
                ).values_list("index", "pk")
            )
            context["admin_messages"] = [
                (m, pk_at.get(m.index)) for m in context["window"].messages
            ]
        return super().change_view(request, object_id, form_url, extra_context=context)

    @admin.action(description="Heal unanswered calls", permissions=["heal"])
    def heal_unanswered_calls(
        self, request: HttpRequest, queryset: QuerySet[Conversation]
    ) -> HttpResponse | None:
        """First a confirmation page with the plan (what would be inserted where); then,
        once confirmed with a reason, the same healing through the service."""
        chosen = list(queryset.order_by("pk")[:100])
        form = HealForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            healed = written = 0
            refused: list[str] = []
            for conversation in chosen:
                report = services.heal_conversation(
                    conversation_id=conversation.pk,
                    via="admin",
                    by=request.user,
                    reason=form.cleaned_data["reason"],
                )
                healed += len(report.healed)
                written += bool(report.healed)
                if report.refusal:
                    refused.append(f"{conversation} ({report.refusal})")
            untouched = len(chosen) - written - len(refused)
            self.message_user(
                request,
                f"Healed {healed} unanswered call{pluralize(healed)} in "
                f"{written} conversation{pluralize(written)}"
                + (
                    f"; {untouched} had none, and {pluralize(untouched, 'was,were')} left as "
                    f"{pluralize(untouched, 'it was,they were')}."
                    if untouched
                    else "."
                ),
                messages.SUCCESS,
            )
            if refused:
                self.message_user(
                    request,
                    f"Nothing was written to {len(refused)}, whose scope refused: "
                    + "; ".join(refused),
                    messages.WARNING,
                )
            return None
        plans = []
        for conversation in chosen:
            plan = services.preview_heal(conversation_id=conversation.pk)
            plans.append((conversation, plan, presenters.heal_plan_sentences(plan)))
        return TemplateResponse(
            request,
            "admin/buffers/conversation/heal_confirmation.html",
            {
                **self.admin_site.each_context(request),
                "title": "Heal unanswered calls?",
                "opts": self.model._meta,
                "plans": plans,
                "form": form,
                "selected": [c.pk for c in chosen],
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
            },
        )


class MessageJSONField(forms.JSONField):
    """JSON typed into the admin, read as an API body is (``jsontext.loads``): a key named
    twice is refused, and a text nested too deeply or holding an integer too long to read
    is an error on its field, as is one that is not JSON, each saying what and where. What
    cannot be read is shown back as typed."""

    def to_python(self, value: Any) -> Any:
        if self.disabled or value in self.empty_values or not isinstance(value, str):
            return super().to_python(value)
        try:
            converted, _ = jsontext.loads(value)
        except jsontext.DuplicateKey as error:
            raise forms.ValidationError(
                f"{error.msg} (line {error.lineno}, column {error.colno})", code="invalid"
            ) from None
        except json.JSONDecodeError as error:
            raise forms.ValidationError(
                f"Enter a valid JSON: {error.msg} (line {error.lineno}, column {error.colno}).",
                code="invalid",
            ) from None
        except RecursionError:
            raise forms.ValidationError(transcripts.TOO_DEEP, code="invalid") from None
        except ValueError as error:  # an integer of more than 4,300 digits
            raise forms.ValidationError(f"cannot be read: {error}", code="invalid") from None
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data: Any, initial: Any) -> Any:
        if self.disabled or not isinstance(data, str):
            return super().bound_data(data, initial)
        try:
            return jsontext.loads(data)[0]
        except (json.JSONDecodeError, RecursionError, ValueError):
            return InvalidJSONInput(data)

    def prepare_value(self, value: Any) -> Any:
        shown = super().prepare_value(value)
        try:
            shown.encode()
        except UnicodeEncodeError:  # a lone surrogate typed as an escape: shown as one
            return json.dumps(value, cls=self.encoder)
        return shown


class MessageForm(forms.ModelForm[Message]):
    """One message, edited at the admin tier: checked by the pure core as an import is, and
    saved through the service with the reason given."""

    content = MessageJSONField(required=False)
    metadata = MessageJSONField(required=False)
    reason = forms.CharField(max_length=500, help_text="Why: kept in the repair journal.")

    class Meta:
        model = Message
        fields = ("role", "content", "metadata")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if any(name in self.errors for name in self.Meta.fields):
            return cleaned  # a field's own check failed: the message is not read with a gap
        raw = {
            "role": cleaned.get("role"),
            "content": cleaned.get("content"),
            "metadata": cleaned.get("metadata") or {},
        }
        try:
            cleaned["message"] = healing.parse_message(raw, "message")
        except healing.InvalidInput as error:
            for problem in error.problems:
                path = problem.path.removeprefix("message.")
                field = path.split(".")[0].split("[")[0]
                # Where inside the field, when it is deeper: "extra.deep[1]: holds ...".
                inside = path.removeprefix(field).lstrip(".")
                said = f"{inside}: {problem.message}" if inside else problem.message
                self.add_error(field if field in self.fields else None, said)
        return cleaned


@admin.register(Message)
class MessageAdmin(AdministrativeTier, admin.ModelAdmin[Message]):
    form = MessageForm
    list_display = ("conversation", "buffer_index", "role", "answers_call_id", "is_placeholder")
    list_filter = ("role", "is_placeholder")
    list_select_related = ("conversation", "block")
    search_fields = ("answers_call_id",)
    readonly_fields = ("conversation", "buffer_index", "answers_call_id", "is_placeholder")
    fields = ("conversation", "buffer_index", "role", "content", "metadata", "reason")

    @admin.display(description="index")
    def buffer_index(self, message: Message) -> int:
        return message.block.start + message.slot

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Message]:
        # An inner join: a message whose conversation cannot be loaded is not found here,
        # so it is denied (the admin's "does not exist"), never served (MEM-15).
        return super().get_queryset(request).select_related("conversation", "block")

    def get_actions(
        self, request: HttpRequest, action_location: Any = ActionLocation.CHANGE_LIST
    ) -> Any:
        actions = super().get_actions(request, action_location)
        actions.pop("delete_selected", None)  # one message at a time, each through the service
        return actions

    # The message is named by its index and its row: a heal or an append landing between
    # this request's read and its write moves the row, and the service then writes nothing.

    def save_model(self, request: HttpRequest, obj: Message, form: Any, change: bool) -> None:
        services.edit_message(
            conversation_id=obj.conversation_id,
            index=self.buffer_index(obj),
            message_id=obj.pk,
            message=form.cleaned_data["message"],
            via="admin",
            by=request.user,
            reason=form.cleaned_data["reason"],
        )

    def delete_model(self, request: HttpRequest, obj: Message) -> None:
        services.delete_message(
            conversation_id=obj.conversation_id,
            index=self.buffer_index(obj),
            message_id=obj.pk,
            via="admin",
            by=request.user,
            reason="deleted in the admin",
        )

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refused_as_a_message(request, super().changeform_view, *args, **kwargs)

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self._refused_as_a_message(request, super().delete_view, *args, **kwargs)

    def _refused_as_a_message(
        self, request: HttpRequest, view: Any, *args: Any, **kwargs: Any
    ) -> HttpResponse:
        """What the service refused (nothing written), said on the page shown again."""
        try:
            response: HttpResponse = view(request, *args, **kwargs)
        except healing.InvalidInput as refused:
            self.message_user(request, "; ".join(map(str, refused.problems)), messages.ERROR)
            return redirect(request.get_full_path())
        return response


@admin.register(BufferChange)
class BufferChangeAdmin(AdministrativeTier, admin.ModelAdmin[BufferChange]):
    """The repair journal, read-only: every old message a write replaced, edited or deleted
    is in ``rows``."""

    list_display = ("at", "conversation", "action", "via", "actor_name", "message_count")
    list_filter = ("action", "via")
    list_select_related = ("conversation",)
    search_fields = ("conversation__title", "actor_name", "reason")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ApiTokenForm(forms.ModelForm[ApiToken]):
    class Meta:
        model = ApiToken
        fields = ("user", "name")


@admin.register(ApiToken)
class ApiTokenAdmin(AdministrativeTier, admin.ModelAdmin[ApiToken]):
    """Tokens for the storage API. Adding one shows the token once, on the next page; only
    its digest is stored. A token is revoked, never edited or deleted."""

    form = ApiTokenForm
    list_display = ("name", "user", "hint", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    list_select_related = ("user",)
    search_fields = ("name", "user__username", "hint")
    raw_id_fields = ("user",)
    actions = ("revoke",)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None and not request.user.is_superuser and "user" in form.base_fields:
            # A token acts as its user: staff make tokens for themselves; only a
            # superuser, who could act as anyone anyway, makes one for someone else.
            users = form.base_fields["user"]
            assert isinstance(users, forms.ModelChoiceField)
            users.queryset = User.objects.filter(pk=request.user.pk or 0)
            users.initial = request.user.pk
        return form

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("user", "name")
        return ("user", "name", "hint", "created_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return () if obj is None else self.get_fields(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return access.is_administrative(request.user) and request.user.has_perm(
            "buffers.change_apitoken"
        )

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        row, token = ApiToken.issue(form.cleaned_data["user"], form.cleaned_data["name"])
        obj.pk = row.pk
        self.message_user(
            request,
            f"The token for {row.user.get_username()} is {token} . Copy it now: it is not "
            "shown again, and only its digest is stored.",
            messages.WARNING,
        )

    def get_actions(
        self, request: HttpRequest, action_location: Any = ActionLocation.CHANGE_LIST
    ) -> Any:
        actions = super().get_actions(request, action_location)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request: HttpRequest, tokens: QuerySet[ApiToken]) -> None:
        revoked = tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {revoked} token{pluralize(revoked)}.")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
