"""The inspector's pages. Thin: forms and the service for writes, selectors and the presenter
for reads; htmx requests get the named partial they swap."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages as flash
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    QueryDict,
)
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.functional import SimpleLazyObject, cached_property
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import reswap, retarget
from django_htmx.middleware import HtmxDetails

from . import access, exports, healing, idempotency, presenters, search, selectors, services
from .forms import FORMS, AssistantTurnForm, ToolResultForm, TurnForm, UploadForm
from .healing import sendability
from .models import Action, Conversation, SignInLink
from .transcripts import TranscriptReading, check_size, read_transcript

PAGE_SIZE = 50


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


FILTERS = {
    "all": "all",
    "unanswered": "with unanswered calls",
    "healed": "with healed placeholders",
    "rejected": "that some provider would refuse",
    "sendable": "that every provider would accept",
    **{
        f"rejected-{provider}": f"that {name} would refuse"
        for provider, name in sendability.PROVIDER_NAMES.items()
    },
}
SORTS = {
    "updated": ("-updated_at", "-id"),
    "created": ("-created_at", "-id"),
    "title": ("title", "id"),
    "messages": ("-message_count", "-id"),
    "unanswered": ("-unanswered_count", "-id"),
    "healed": ("-healed_count", "-id"),
}


class BoundedPaginator(Paginator[Conversation]):
    """Counts no further than the pages it can show: up to a few past the page asked for.
    Counting every row of a 100,000-row list on each page view would cost more than the page."""

    def __init__(
        self, object_list: QuerySet[Conversation], per_page: int, page_asked: str | None
    ) -> None:
        super().__init__(object_list, per_page)
        self.rows = object_list
        page = min(_int(page_asked) or 1, 10**9)  # beyond any real list, and no overflow
        self.count_limit = (page + 5) * per_page

    @cached_property
    def count(self) -> int:
        return self.rows[: self.count_limit + 1].count()

    @property
    def count_is_exact(self) -> bool:
        return self.count <= self.count_limit


def _visible(request: HttpRequest, pk: int) -> Conversation:
    """The conversation, if the signed-in user may view it; else 404, so ids do not leak."""
    try:
        return access.visible_one(request.user, pk, Conversation.objects.select_related("owner"))
    except Conversation.DoesNotExist:
        raise Http404("No such conversation.") from None


def _indexes(value: str | None) -> list[int]:
    """The message indexes of a comma-separated list (``just=2,6``); nonsense is left out."""
    return [index for index in (_int(i) for i in (value or "").split(",")) if index is not None]


def _choice(value: str | None, choices: dict[str, Any], default: str) -> str:
    return value if value in choices else default


def _plain(sentence: str, status: int = 400) -> HttpResponse:
    """An answer of one sentence, which may quote the request: plain text, never markup."""
    return HttpResponse(sentence, status=status, content_type="text/plain; charset=utf-8")


def _int(value: str | None) -> int | None:
    try:
        number = int(value or "")
    except ValueError:
        return None
    return number if 0 <= number < 2**63 else None


@require_safe
@vary_on_headers("HX-Request", "HX-History-Restore-Request")
def conversation_list(request: HtmxHttpRequest) -> HttpResponse:
    show = _choice(request.GET.get("show"), FILTERS, "all")
    sort = _choice(request.GET.get("sort"), SORTS, "updated")
    query = search.clean(request.GET.get("q"))
    words = search.terms(query)
    conversations = access.visible_to(request.user, selectors.conversations_recent())
    conversations = conversations.order_by(*SORTS[sort])
    if show == "unanswered":
        conversations = conversations.with_unanswered_calls()
    elif show == "healed":
        conversations = conversations.healed()
    elif show in ("rejected", "sendable"):
        conversations = conversations.filter(sendable=show == "sendable")
    elif show.startswith("rejected-"):
        conversations = conversations.rejected_by(show.removeprefix("rejected-"))
    matching = search.matching_conversations(words, narrowed=show != "all") if query else None
    if matching is not None:
        conversations = conversations.filter(matching.condition)
    page_asked = request.GET.get("page")
    page = BoundedPaginator(conversations, PAGE_SIZE, page_asked).get_page(page_asked)
    hits = search.first_hits(
        [c.pk for c in page],
        words,
        per_conversation=matching is not None and matching.per_conversation,
    )
    context = {
        "page": page,
        "rows": [(c, hits.get(c.pk)) for c in page],
        "show": show,
        "sort": sort,
        "q": query,
        "filters": FILTERS,
        "sorts": SORTS,
    }
    template = "buffers/conversation_list.html"
    # Back to a pushed URL htmx no longer holds, it asks again for what replaces the body.
    if request.htmx and not request.htmx.history_restore_request:
        template += "#conversation-table"
    return render(request, template, context)


@require_safe
def conversation_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    conversation = _visible(request, pk)
    start = presenters.start_at(conversation, _int(request.GET.get("at")))
    just = dict.fromkeys(_indexes(request.GET.get("just")), "inserted")
    just.update(dict.fromkeys(_indexes(request.GET.get("replaced")), "replaced"))
    preview = (
        presenters.preview_sentences(_preview(conversation)) if request.GET.get("preview") else None
    )
    context = _page_context(
        conversation,
        start,
        start + presenters.PAGE,
        just=just,
        preview=preview,
        can_drive=access.may_drive(request.user, conversation),
    )
    if access.may_share(request.user, conversation):  # the owner's "Shared with" panel
        context["sharing"] = selectors.shared_with(conversation)
    query = search.clean(request.GET.get("q"))
    if query:  # opened at a hit (a search's link, or the search without JavaScript)
        words = search.terms(query)
        found = search.found_at(conversation, words, _int(request.GET.get("at")))
        context["search"] = SearchState.of(found, query)
    return render(request, "buffers/conversation_detail.html", context)


@dataclass(frozen=True)
class SearchState:
    """Where a search inside a conversation stands: its query, how many messages hold its
    words, and which of them is the current hit (``number`` of ``count``, at ``index``)."""

    query: str = ""
    count: int = 0
    number: int | None = None
    index: int | None = None
    words: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, found: search.Found, query: str) -> SearchState:
        return cls(query, found.count, found.number, found.index, search.terms(query))


@require_safe
@vary_on_headers("HX-Request")
def conversation_search(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Search inside a conversation, server-side over the whole buffer: the next hit after
    the current one (``from``; or the previous, ``go=previous``), opened as a window there
    (htmx swaps it in, with the count); without JavaScript, the page opened at it."""
    conversation = _visible(request, pk)
    query = search.clean(request.GET.get("q"))
    same_search = request.GET.get("searched") == query
    current = _int(request.GET.get("from")) if same_search else None
    backwards = request.GET.get("go") == "previous"
    found = search.step(conversation, search.terms(query), current, backwards=backwards)
    state = SearchState.of(found, query)
    index = found.index
    url = reverse("buffers:conversation", args=[pk])
    params = {"q": query} if query else {}
    if index is not None:
        params["at"] = str(index)
    here = f"{url}?{urlencode(params)}" if params else url
    if index is not None:
        here += f"#m-{index}"
    if not request.htmx:
        return redirect(here)
    search_state = render_to_string(
        "buffers/_search.html#search-state", {"search": state, "oob": True}, request
    )
    if index is None:  # nothing to open: only the count changes
        return reswap(HttpResponse(search_state), "none")
    start = presenters.start_at(conversation, index)
    context = _page_context(conversation, start, start + presenters.PAGE)
    context["oob"] = True
    response = render(request, "buffers/conversation_detail.html#messages-page", context)
    response.content += search_state.encode()
    response["HX-Push-Url"] = here
    return response


@require_safe
def conversation_history(request: HttpRequest, pk: int) -> HttpResponse:
    """The repair journal: every write to the buffer, newest first, with each message a
    write replaced, edited or deleted readable again."""
    conversation = _visible(request, pk)
    changes = conversation.changes.all()
    if not (access.owns(request.user, conversation) or access.is_administrative(request.user)):
        # Who else may view it is the owner's and staff's to know, as the page's panel is.
        changes = changes.exclude(action=Action.OWNER, rows__0__change__in=services.SHARING_ROWS)
    page = Paginator(changes, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "buffers/conversation_history.html",
        {"conversation": conversation, "changes": page},
    )


@require_safe
def conversation_export(request: HttpRequest, pk: int, format: str) -> HttpResponse:
    """The buffer as a download, in one of the formats ``exports.formats_for`` offers it in."""
    conversation = _visible(request, pk)
    offered = exports.formats_for(conversation)
    if format not in offered:
        raise Http404(f"No export format {format!r} for this conversation.")
    try:
        exported = exports.export(conversation, format)
    except healing.InvalidInput as error:  # a runtime's file that cannot be written back
        context = {
            "conversation": conversation,
            "kind": offered[format],
            "problems": error.problems,
        }
        return render(request, "buffers/export_refused.html", context, status=422)
    response = HttpResponse(exported.body, content_type=exported.content_type)
    response["Content-Disposition"] = f'attachment; filename="{exported.filename}"'
    return response


@require_safe
@vary_on_headers("HX-Request")
def conversation_sendability(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Which providers would accept the buffer as history, and why not: it reads the whole
    buffer, so the page asks for it after it has shown."""
    conversation = _visible(request, pk)
    verdicts = sendability.check_all(selectors.buffer_messages(conversation)).values()
    context = {"conversation": conversation, "verdicts": verdicts}
    if request.htmx:
        return render(request, "buffers/conversation_detail.html#sendability", context)
    return render(request, "buffers/sendability.html", context)


@require_safe
def message_json(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """One message as stored, as JSON: the page holds a long message's only on demand, and
    names the row it showed (``id``), so that a write that moved it is not answered with
    the message now at its index."""
    row = selectors.message_at(_visible(request, pk), index)
    if row is None:
        raise Http404("No such message.")
    shown = _int(request.GET.get("id"))
    if shown is not None and row.pk != shown:  # a write moved another message to the index
        return _plain(
            f"Message {index} is no longer the one this page showed (a write since has moved "
            "it): reload the page.",
            409,
        )
    return HttpResponse(presenters.raw_json(row.as_core()), content_type="application/json")


@require_safe
@vary_on_headers("HX-Request", "Accept")
def conversation_next_problem(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The next message with a problem of one kind after ``from`` (round the end of the
    buffer, unless ``round=no``: u asks of every kind, and wants none before its place):
    for the page's script, its index as JSON (it opens it in place); without JavaScript,
    the page opened there."""
    conversation = _visible(request, pk)
    kind = request.GET.get("kind", "")
    if kind not in healing.verdicts.PROBLEM_LABELS:
        return _plain(f"Unknown kind of problem {kind!r}.")
    after = _int(request.GET.get("from"))
    index = selectors.next_problem(
        conversation,
        kind,
        -1 if after is None else after,
        round_the_end=request.GET.get("round") != "no",
    )
    if request.htmx or request.headers.get("Accept") == "application/json":
        return JsonResponse({"kind": kind, "index": index})
    url = reverse("buffers:conversation", args=[pk])
    return redirect(url if index is None else f"{url}?at={index}#m-{index}")


@require_http_methods(["GET", "HEAD", "POST"])
def transcript_upload(request: HtmxHttpRequest) -> HttpResponse:
    """Import transcript files, several at once, all or none: a file with an error
    imports nothing, and nor do the others sent with it."""
    posted = request.method == "POST"
    form = UploadForm(request.POST if posted else None, request.FILES if posted else None)
    created: list[Conversation] = []
    problems: list[healing.Problem] = []
    readings: list[TranscriptReading] = []
    if posted and form.is_valid():
        for upload in form.cleaned_data["transcripts"]:
            try:
                check_size(upload.name, upload.size)  # before reading it into memory
                readings.append(
                    read_transcript(
                        upload.read(),
                        name=upload.name,
                        format=form.cleaned_data["format"] or "auto",
                    )
                )
            except healing.InvalidInput as error:
                problems += error.problems
        incoming = [c for reading in readings for c in reading.conversations]
        if not problems:
            try:
                created = services.import_conversations(
                    incoming, via="inspector", by=request.user, owner=access.real_user(request.user)
                )
            except healing.InvalidInput as error:
                problems = error.problems
            except services.BufferBusy as busy:
                problems = [healing.Problem("upload", f"{busy} Try again in a moment.")]
    context = {"form": form, "created": created, "problems": problems, "readings": readings}
    if request.htmx and posted:  # htmx swaps only a 2xx answer
        return render(request, "buffers/upload.html#upload-result", context)
    status = 422 if problems or form.errors else 201 if created else 200
    return render(request, "buffers/upload.html", context, status=status)


@require_safe
@vary_on_headers("HX-Request")
def conversation_messages(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A page of messages before or after the window, for htmx to add as the reader scrolls.
    Loading later pages stops at ``stop``, where a tail shown after a write begins."""
    conversation = _visible(request, pk)
    start = _int(request.GET.get("start")) or 0
    moved_to = _moved_to(conversation, request.GET, start)
    if moved_to is not None:
        moved = {"conversation": conversation, "at": moved_to}
        return render(request, "buffers/conversation_detail.html#window-moved", moved)
    stop = _int(request.GET.get("stop"))
    end = min(_int(request.GET.get("end")) or start + presenters.PAGE, start + presenters.PAGE)
    window_start = _int(request.GET.get("window_start"))
    window_end = _int(request.GET.get("window_end")) or 0
    earlier = window_start is not None and start < window_start
    problems = presenters.open_calls(conversation)
    tail_row = _int(request.GET.get("tail_row"))
    window = presenters.page(conversation, start, end, stop, problems, tail_row)
    context = _page_context(conversation, window=window, problems=problems)
    context["direction"] = "earlier" if earlier else "later"
    context["range_start"] = min(start, window_start if window_start is not None else start)
    context["range_end"] = max(context["window"].end, window_end)
    # Earlier rows come without ``stop``: a tail the page shows below the window stays there.
    known_stop = _int(request.GET.get("window_stop")) if earlier else stop
    context["range_stop"] = (
        known_stop if known_stop is not None and known_stop > context["range_end"] else None
    )
    if stop is not None and context["range_end"] >= stop:  # met the tail: one run to the end
        context["range_end"] = conversation.message_count
    context["oob"] = True
    return render(request, "buffers/conversation_detail.html#messages-page", context)


def _moved_to(conversation: Conversation, query: QueryDict, start: int) -> int | None:
    """Where to reopen the buffer when a write since the page showed its window (a heal
    or a deletion above it, from another tab or program) has moved a message the page
    loads up to: ``after``, the window's last row, was at ``start - 1``; ``before``, its
    first, at ``end``; ``tail_row``, the first of a tail shown below, at ``stop``. Loading
    by index alone then showed a message twice, or skipped one. None when each is still
    there, or the page named none. The reader's place is kept: the moved row's, or for a
    moved tail, the last message read."""
    last = conversation.message_count - 1
    anchors = (
        ("after", start - 1, False),
        ("before", _int(query.get("end")), False),
        ("tail_row", _int(query.get("stop")), True),
    )
    for name, was_at, is_tail in anchors:
        row_id = _int(query.get(name))
        if row_id is None or was_at is None:
            continue
        now = selectors.index_of(conversation, row_id)
        if now == was_at:
            continue
        if now is None or is_tail:
            return max(0, min(start - 1 if is_tail else was_at, last))
        return now
    return None


@require_safe
@vary_on_headers("HX-Request")
def conversation_preview(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """What a user turn would do now: the healing plan, nothing written."""
    conversation = _visible(request, pk)
    if not request.htmx:
        return redirect(f"{reverse('buffers:conversation', args=[pk])}?preview=1#preview")
    sentences = presenters.preview_sentences(_preview(conversation))
    return render(
        request,
        "buffers/conversation_detail.html#preview",
        {"conversation": conversation, "preview": sentences},
    )


def _preview(conversation: Conversation) -> healing.AppendReport:
    turn = healing.parse_messages([{"role": "user", "content": "(a user turn)"}])
    return services.preview_append(conversation_id=conversation.pk, messages=turn)


@require_POST
def conversation_share(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Share the conversation with a user, by username (they may view it, never drive it);
    htmx swaps the "Shared with" panel, without it POST/redirect/GET."""
    return _sharing(request, pk, share=True)


@require_POST
def conversation_unshare(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Stop sharing the conversation with a user, as ``conversation_share`` shares it."""
    return _sharing(request, pk, share=False)


def _sharing(request: HtmxHttpRequest, pk: int, *, share: bool) -> HttpResponse:
    conversation = _visible(request, pk)
    if not access.may_share(request.user, conversation):
        raise PermissionDenied("Only the conversation's owner can share it.")
    typed = request.POST.get("username", "").strip()
    refused = False
    try:
        viewer = services.viewer_named(typed, among=None if share else conversation)
        name = viewer.get_username()
        if share:
            done = services.share_conversation(
                conversation=conversation, viewer=viewer, via="inspector", by=request.user
            )
            said = (
                f"Shared with {name}: they may view it, never drive it."
                if done
                else f"{name} can already view it."
            )
        else:
            services.unshare_conversation(
                conversation=conversation, viewer=viewer, via="inspector", by=request.user
            )
            said = f"{name} can no longer view it."
    except services.SharingRefused as refusal:
        said, refused = str(refusal), True
    if not request.htmx:
        (flash.warning if refused else flash.success)(request, said)
        return redirect(f"{reverse('buffers:conversation', args=[pk])}#sharing")
    context = {
        "conversation": conversation,
        "sharing": selectors.shared_with(conversation),
        "said": said,
        "refused": refused,
        "typed": typed if refused and share else "",
        "refocus": not share,  # the button pressed is gone: keep the keyboard in the panel
    }
    return render(request, "buffers/_sharing.html", context)


@require_POST
def conversation_append(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Append what a form describes (a user turn, or from the QA panel a tool result or an
    assistant turn) through the one service; show what the rules did, in place."""
    conversation = _visible(request, pk)
    if not access.may_drive(request.user, conversation):
        raise PermissionDenied("Only the conversation's owner can send it a turn.")
    kind = request.POST.get("kind", "")
    if kind not in FORMS:
        return _plain(f"Unknown kind of message {kind!r}.")
    form = FORMS[kind](request.POST, prefix=kind)
    batch: list[healing.Message] = []
    if form.is_valid():
        try:
            batch = healing.parse_messages(form.messages(), appendable=True)
        except healing.InvalidInput as invalid:
            for problem in invalid.problems:
                form.add_error(None, problem.message)
    if not form.is_valid():
        return _form_errors(request, conversation, kind, form)

    old_count = conversation.message_count
    try:
        report = services.append_messages(
            conversation=conversation, messages=batch, via="inspector", by=request.user
        )
    except services.ConversationNotFound:
        raise Http404 from None
    except services.BufferBusy as busy:
        return HttpResponse(
            f"{busy} Try again in a moment.", status=503, headers={"Retry-After": "5"}
        )
    sentences = presenters.report_sentences(report, kind)
    if report.refusal:  # nothing was written: say so where reports go, and touch nothing else
        if not request.htmx:
            flash.warning(request, sentences[0])
            return idempotency.wrote_nothing(redirect("buffers:conversation", pk=pk))
        response = render(request, "buffers/conversation_detail.html#report", {"report": sentences})
        return idempotency.wrote_nothing(reswap(retarget(response, "#report"), "outerHTML"))
    if not request.htmx:
        for sentence in sentences:
            flash.info(request, sentence)
        marks = presenters.just_written(report)
        landed = max((o.index for o in report.outcomes if o.index is not None), default=None)
        at = landed if landed is not None else min(marks, default=report.count - 1)
        just = ",".join(str(i) for i, how in sorted(marks.items()) if how == "inserted")
        replaced = ",".join(str(i) for i, how in sorted(marks.items()) if how == "replaced")
        url = reverse("buffers:conversation", args=[pk])
        also = f"&replaced={replaced}" if replaced else ""
        return redirect(f"{url}?at={at}&just={just}{also}#m-{at}")

    conversation.refresh_from_db()
    problems = presenters.open_calls(conversation)
    window = presenters.after_write(
        conversation,
        report,
        start=_int(request.POST.get("window_start")) or 0,
        end=_int(request.POST.get("window_end")) or 0,
        stop=_int(request.POST.get("window_stop")),
        old_count=old_count,
        problems=problems,
    )
    context = _page_context(conversation, window=window, problems=problems, can_drive=True)
    context["report"] = sentences
    # A placeholder replaced outside the window the reader has: a link to it, where a write
    # without JavaScript opens the page.
    marks = presenters.just_written(report)
    context["replaced_elsewhere"] = [
        index for index, how in sorted(marks.items()) if how == "replaced" and index not in window
    ]
    context["oob"] = True
    return render(request, "buffers/conversation_detail.html#after-append", context)


def _form_errors(
    request: HtmxHttpRequest, conversation: Conversation, kind: str, form: Any
) -> HttpResponse:
    if request.htmx:
        response = render(
            request,
            f"buffers/conversation_detail.html#{kind}-form",
            {"conversation": conversation, f"{kind}_form": form},
        )
        return idempotency.wrote_nothing(reswap(retarget(response, f"#{kind}-form"), "outerHTML"))
    start = _int(request.POST.get("at")) or 0
    context = _page_context(conversation, start, start + presenters.PAGE, can_drive=True)
    context[f"{kind}_form"] = form
    context["qa_open"] = kind != "user"
    return render(request, "buffers/conversation_detail.html", context, status=422)


def _page_context(
    conversation: Conversation,
    start: int = 0,
    end: int = 0,
    *,
    stop: int | None = None,
    just: dict[int, str] | None = None,
    preview: list[str] | None = None,
    window: presenters.Window | None = None,
    problems: list[presenters.OpenCall] | None = None,
    can_drive: bool = False,
) -> dict[str, Any]:
    if problems is None:
        problems = presenters.open_calls(conversation)
    if window is None:
        window = presenters.window(
            conversation, start, end, stop=stop, just=just, problems=problems
        )
    return {
        "conversation": conversation,
        "can_drive": can_drive,
        "export_formats": exports.DOCUMENT_FORMATS,
        # Read only where the page shows it (not in the partials htmx asks for).
        "native": SimpleLazyObject(lambda: exports.native_export(conversation)),
        "verdicts": None,
        "window": window,
        "range_start": window.start,
        "range_end": window.end,
        "range_stop": window.stop if window.has_tail else None,
        "problems": problems,
        "preview": preview,
        "user_form": TurnForm(prefix="user"),
        "tool_form": ToolResultForm(prefix="tool"),
        "assistant_form": AssistantTurnForm(prefix="assistant"),
    }


SIGN_IN_REFUSED = {
    "unknown": "This sign-in link is not one that make run printed here.",
    "used": "This sign-in link has been used: each one signs in once.",
    "expired": "This sign-in link has expired: each one works for an hour.",
    "inactive": "The account this link signs in to is not active.",
}


@login_not_required
@require_safe
def sign_in_link(request: HttpRequest, token: str) -> HttpResponse:
    """The one-time link ``make run`` prints: signs this browser in as the local account.
    It exists only on the development server, for a browser on this machine: anywhere
    else it is a 404, as if there were no such page."""
    if not settings.DEBUG or not _from_this_machine(request):
        raise Http404
    user, refused = SignInLink.redeem(token)
    if user is None:
        return render(
            request,
            "registration/sign_in_link_refused.html",
            {"reason": SIGN_IN_REFUSED[refused]},
            status=403,
        )
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect("buffers:conversation_list")


def _from_this_machine(request: HttpRequest) -> bool:
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False
