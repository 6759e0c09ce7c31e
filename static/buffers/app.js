// FlowDrop Web: the little the pages need beyond htmx. Loaded as a file: the pages allow no
// inline script (Content-Security-Policy), and transcript content never becomes markup.
(function () {
  "use strict";

  // ---------------------------------------------------------------------------------------
  // Messages: which one the reader is at, moving to another, opening the window around one
  // the page did not load (htmx, no reload).

  function messagesBox() {
    return document.getElementById("messages");
  }

  function loadedMessages() {
    var box = messagesBox();
    return box ? Array.prototype.slice.call(box.querySelectorAll("article.message")) : [];
  }

  function indexOf(article) {
    var match = /^m-(\d+)$/.exec(article.id);
    return match ? Number(match[1]) : -1;
  }

  function loadedMessage(index) {
    var box = messagesBox();
    var article = document.getElementById("m-" + index);
    return box && article && box.contains(article) ? article : null;
  }

  // How many messages the conversation holds (the window's range carries it, and every
  // swap that changes it brings a new one).
  function messageCount() {
    var held = document.querySelector("#window-range [data-message-count]");
    var count = held ? held.getAttribute("data-message-count") : null;
    return count ? Number(count) : null;
  }

  function onScreen(element) {
    var box = element.getBoundingClientRect();
    return box.bottom > 0 && box.top < window.innerHeight - pinnedBottom();
  }

  function firstOnScreen(list) {
    for (var i = 0; i < list.length; i++) {
      if (onScreen(list[i])) return list[i];
    }
    return null;
  }

  var lastIndex = null; // the message the reader last moved to (focus may since have left it)

  // The message the reader is at: the one holding the focus, else the one last moved to
  // while it is still on screen, else the one a link opened.
  function currentMessage() {
    var active = document.activeElement;
    var here = active && active.closest ? active.closest("#messages article.message") : null;
    if (here) return here;
    var last = lastIndex === null ? null : loadedMessage(lastIndex);
    if (last && onScreen(last)) return last;
    var target = document.querySelector("#messages article.message.is-target");
    return target && onScreen(target) ? target : null;
  }

  function say(text) {
    var notice = document.getElementById("jump-notice");
    if (!notice) return;
    notice.textContent = text;
    if (text) notice.scrollIntoView({block: "nearest"});
  }

  // The highlighted message: a deep link's target, then wherever the keys moved. The class
  // stands in for :target, which neither history.replaceState nor an htmx swap moves.
  function markTarget(article) {
    var box = messagesBox();
    if (!box) return;
    box.querySelectorAll(".is-target").forEach(function (other) {
      if (other !== article) other.classList.remove("is-target");
    });
    if (article) article.classList.add("is-target");
  }

  function goTo(article) {
    lastIndex = indexOf(article);
    say("");
    if (!article.hasAttribute("tabindex")) article.setAttribute("tabindex", "-1");
    article.focus({preventScroll: true});
    article.scrollIntoView({block: "nearest"});
    markTarget(article);
    var url = new URL(window.location.href);
    url.hash = "m-" + lastIndex;
    if (url.href !== window.location.href) history.replaceState(history.state, "", url.href);
  }

  function noSuchMessage(index, count) {
    say("There is no message " + index + ": this conversation has " + count +
      " message" + (count === 1 ? "" : "s") + ".");
  }

  // A load the keys or a link started, finished when its swap lands: {elt, index, from,
  // delta, url}. One at a time.
  var pending = null;

  // The address's query of the window on the page (?at=N, or none): a window opened in
  // place names itself, and Back to an address without #m-N shows the window it names.
  var windowSearch = window.location.search;

  // Message ``index``: there if loaded, else the window around it (the page ?at=index, its
  // messages swapped in by htmx), else a notice when the buffer has no such message. A link
  // followed (``followed``) adds the window's address to the history, as the browser's own
  // jump to a loaded message does; the keys replace it.
  function openMessage(index, followed) {
    var article = loadedMessage(index);
    if (article) {
      goTo(article);
      return;
    }
    var count = messageCount();
    if (count !== null && index >= count) {
      noSuchMessage(index, count);
      return;
    }
    var box = messagesBox();
    var path = window.location.pathname + "?at=" + index;
    if (box && !window.htmx) {
      window.location.assign(path + "#m-" + index); // no htmx: the page that opens there
      return;
    }
    if (!box || pending) return;
    var waited = {elt: box, index: index, url: path + "#m-" + index, search: "?at=" + index, push: followed};
    start(waited, function () {
      loadWindow(box, path);
    });
  }

  // ``load`` sends the request ``waited`` names, as the load the keys wait for. htmx may
  // drop it (another request on #buffer is on its way) and say nothing: then nothing is
  // waited for, and the next key asks again.
  function start(waited, send) {
    pending = waited;
    send();
    if (pending === waited && !waited.sent) pending = null;
  }

  document.body.addEventListener("htmx:beforeRequest", function (event) {
    if (pending && swappedBy(event, pending.elt)) pending.sent = true;
  });

  // The window of the page at ``url`` in place of the one shown (``pending`` says why).
  function loadWindow(box, url) {
    window.htmx.ajax("GET", url, {
      source: box, target: box, select: "#messages", swap: "outerHTML", selectOOB: "#window-range"
    });
  }

  function follows(node, other) {
    return Boolean(node.compareDocumentPosition(other) & Node.DOCUMENT_POSITION_FOLLOWING);
  }

  // The "Load earlier" / "Load more" control between a message and its neighbour, if any.
  function loaderBetween(here, neighbour, delta) {
    var loaders = messagesBox().querySelectorAll(".load-earlier, .load-later");
    for (var i = 0; i < loaders.length; i++) {
      var loader = loaders[i];
      var after = delta > 0 ? follows(here, loader) : follows(loader, here);
      var before = !neighbour || (delta > 0 ? follows(loader, neighbour) : follows(neighbour, loader));
      if (after && before) return loader;
    }
    return null;
  }

  function load(loader, here, delta) {
    if (pending || !window.htmx) return;
    start({elt: loader, index: indexOf(here) + delta, from: indexOf(here), delta: delta}, function () {
      if ((loader.getAttribute("hx-trigger") || "").indexOf("revealed") !== -1) {
        loader.setAttribute("data-hx-revealed", "true"); // htmx's own scroll check would ask again
        window.htmx.trigger(loader, "revealed");
      } else {
        loader.click();
      }
    });
  }

  // j / k: the next or previous message, loading the next page when the window ends there.
  function step(delta) {
    var list = loadedMessages();
    if (!list.length || pending) return;
    var here = currentMessage();
    if (!here) {
      var first = firstOnScreen(list) || list[0];
      goTo(first);
      return;
    }
    var wanted = loadedMessage(indexOf(here) + delta);
    if (wanted) {
      goTo(wanted);
      return;
    }
    var neighbour = list[list.indexOf(here) + delta] || null;
    var loader = loaderBetween(here, neighbour, delta);
    // Back from a tail across the gap above it: its "Load more" loads the page after the
    // window, far above; the message just above opens its own window.
    if (loader && delta < 0 && loader.matches(".load-later")) openMessage(indexOf(here) - 1);
    else if (loader) load(loader, here, delta);
    else if (neighbour) goTo(neighbour);
  }

  // A message with an unanswered call or any other finding (the rendering marks them).
  var PROBLEM = "article.message.has-unanswered, article.message.has-problem, " +
    "article.message:has(.badge-finding), article.message:has(.badge-unanswered)";

  // Problems the page links to beyond what it loaded: the summary's links and each
  // message's "next problem".
  function linkedProblems() {
    var found = [];
    document.querySelectorAll("#summary a[href*='#m-'], #messages a.next-problem[href*='#m-']").forEach(function (link) {
      var match = /#m-(\d+)$/.exec(link.getAttribute("href"));
      if (match) found.push(Number(match[1]));
    });
    return found;
  }

  // The summary's "next" link of each kind of problem it counts, but healed placeholders
  // (healing, not a problem): the server knows where each kind is, loaded or not, badged or
  // not (an empty turn has no badge of its own).
  function problemKinds() {
    return Array.prototype.filter.call(
      document.querySelectorAll("#summary a.next-of-kind[data-kind]"),
      function (link) { return link.getAttribute("data-kind") !== "healed_placeholder"; }
    );
  }

  // The next message with a problem of a kind after ``from``, as the server says (round the
  // end of the buffer, unless ``afterOnly``): a promise of its index, or null.
  function askNextOfKind(link, from, afterOnly) {
    var url = new URL(link.href, window.location.href);
    url.searchParams.set("from", String(from));
    if (afterOnly) url.searchParams.set("round", "no");
    return fetch(url.href, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.json();
      })
      .then(function (found) { return found.index; });
  }

  var asking = false; // u waits for the server's answers

  // u: the next message with a problem after the reader's place, loaded or not.
  function nextProblem() {
    var list = loadedMessages();
    if (!list.length || pending || asking) return;
    var here = currentMessage();
    var from;
    if (here) {
      from = indexOf(here);
    } else {
      var first = firstOnScreen(list) || list[0];
      from = indexOf(first) - 1;
    }
    var best = null;
    messagesBox().querySelectorAll(PROBLEM).forEach(function (article) {
      var index = indexOf(article);
      if (index > from && (best === null || index < best)) best = index;
    });
    linkedProblems().forEach(function (index) {
      if (index > from && (best === null || index < best)) best = index;
    });
    function land() {
      if (best === null) {
        say(from < 0 ? "This conversation shows no problem." : "No problem after message " + from + ".");
        return;
      }
      openMessage(best);
    }
    var kinds = problemKinds();
    if (!kinds.length || !window.fetch) {
      land();
      return;
    }
    asking = true;
    Promise.all(kinds.map(function (link) {
      // After the reader's place only: a kind found only before it costs the server a
      // read of the whole buffer, for an answer u does not take.
      return askNextOfKind(link, from, true).catch(function () { return null; });
    })).then(function (found) {
      asking = false;
      found.forEach(function (index) {
        if (index !== null && index > from && (best === null || index < best)) best = index;
      });
      land();
    });
  }

  // A link to a message (#m-N, or ?at=N#m-N as links into another window are written):
  // opened in place rather than by loading the page again.
  function messageLink(link) {
    if (link.hasAttribute("hx-get") || link.hasAttribute("download") || link.target) return null;
    var url = new URL(link.href, window.location.href);
    if (url.origin !== window.location.origin || url.pathname !== window.location.pathname) return null;
    var match = /^#m-(\d+)$/.exec(url.hash);
    if (!match) return null;
    var keys = Array.from(url.searchParams.keys());
    if (keys.some(function (key) { return key !== "at"; })) return null;
    return {index: Number(match[1]), sameSearch: url.search === window.location.search};
  }

  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey ||
        event.shiftKey || event.altKey || !messagesBox()) return;
    var link = event.target.closest ? event.target.closest("a[href]") : null;
    var target = link ? messageLink(link) : null;
    if (!target) return;
    // A plain #m-N to a loaded message: the browser's own jump (hashchange does the rest).
    if (target.sameSearch && loadedMessage(target.index)) return;
    event.preventDefault();
    openMessage(target.index, true);
  });

  // The summary's "next" link of a kind of problem: the server finds the next message with
  // one after the reader's place (round the end), and it opens here like any message.
  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey ||
        event.shiftKey || event.altKey || !messagesBox() || !window.fetch) return;
    var link = event.target.closest ? event.target.closest("a.next-of-kind") : null;
    if (!link || pending) return;
    event.preventDefault();
    var here = currentMessage();
    var first = firstOnScreen(loadedMessages());
    // The reader's place: the message at hand, else the last one moved to (the link took
    // the focus), else just before the first on screen.
    var from = here ? indexOf(here) : lastIndex !== null ? lastIndex : first ? indexOf(first) - 1 : -1;
    askNextOfKind(link, from)
      .then(function (index) {
        if (index === null) say("This conversation has no such problem now.");
        else openMessage(index, true);
      })
      .catch(function () {
        window.location.assign(link.href); // the page opened there, without the script
      });
  });

  // The page's address names a message (#m-50000 in a long buffer, a link from elsewhere,
  // the address bar): show it, highlighted, opening the window there if it is not loaded.
  function openLinkedMessage(event) {
    var match = /^#m-(\d+)$/.exec(window.location.hash);
    if (!match || !messagesBox()) return;
    var index = Number(match[1]);
    var article = loadedMessage(index);
    if (article && !event) {
      // On arrival the browser has scrolled to it: mark it, and start the keys from it.
      lastIndex = index;
      markTarget(article);
      return;
    }
    openMessage(index); // a link followed: focus it; or open its window; or say it is not there
  }
  window.addEventListener("hashchange", openLinkedMessage);
  // Back or Forward to an address that differs from this one in more than its hash (a
  // window opened in place names itself, ?at=N) brings no hashchange. Where one follows
  // too, the second call finds the message shown, or its window already asked for.
  // htmx restores its own entries.
  window.addEventListener("popstate", function (event) {
    if (event.state && event.state.htmx) return;
    if (/^#m-\d+$/.test(window.location.hash)) {
      openLinkedMessage(event);
      return;
    }
    // An address that names no message but another window (the one the page opened at):
    // that window, as a reload of the address would show it.
    var box = messagesBox();
    var search = window.location.search;
    if (!box || !window.htmx || pending || search === windowSearch) return;
    start({elt: box, index: -1, search: search}, function () {
      loadWindow(box, window.location.pathname + search);
    });
  });
  document.addEventListener("DOMContentLoaded", function () {
    openLinkedMessage(null);
    // ?at=N past the end opens the last page: say that message N is not there.
    var at = new URL(window.location.href).searchParams.get("at");
    var count = messageCount();
    if (at !== null && count !== null && Number(at) >= count && !/^#m-\d+$/.test(window.location.hash)) {
      noSuchMessage(Number(at), count);
    }
  });

  // ---------------------------------------------------------------------------------------
  // The keys. Ignored while typing in a field (Escape leaves it); "/" belongs to search.

  function typing(element) {
    if (!element || !element.tagName) return false;
    if (element.isContentEditable) return true;
    if (element.tagName === "TEXTAREA" || element.tagName === "SELECT") return true;
    if (element.tagName !== "INPUT") return false;
    return !/^(checkbox|radio|button|submit|reset|file|range|color|image)$/i.test(element.type);
  }

  function keysDialog() {
    return document.getElementById("keys");
  }

  function toggleKeys() {
    var dialog = keysDialog();
    if (!dialog) return;
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    var element = event.target;
    if (event.key === "Escape") {
      if (typing(element)) {
        element.blur();
        event.preventDefault();
      }
      return;
    }
    if (typing(element)) return;
    var dialog = keysDialog();
    if (dialog && dialog.open && event.key !== "?") return;
    switch (event.key) {
      case "j": step(1); break;
      case "k": step(-1); break;
      case "u": nextProblem(); break;
      case "?": toggleKeys(); break;
      default: return;
    }
    event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest(".keys-button, .close-dialog") : null;
    if (!button) return;
    if (button.matches(".keys-button")) toggleKeys();
    else button.closest("dialog").close();
  });

  // ---------------------------------------------------------------------------------------
  // Room to read: what the pinned composer covers at the foot is kept clear of by every
  // scroll to a message (scroll-padding-bottom in app.css reads --pinned-bottom).

  function composer() {
    return document.querySelector(".composer");
  }

  function pinnedBottom() {
    var pinned = composer();
    var box = messagesBox();
    if (!pinned || !box) return 0;
    var rect = pinned.getBoundingClientRect();
    var messages = box.getBoundingClientRect();
    var beside = rect.left >= messages.right || rect.right <= messages.left;
    var atFoot = rect.bottom >= window.innerHeight - 1 && rect.top > 0;
    return beside || !atFoot ? 0 : Math.ceil(rect.height);
  }

  var pinnedMeasured = null;

  function measurePinned() {
    var height = pinnedBottom();
    if (height === pinnedMeasured) return;
    pinnedMeasured = height;
    document.documentElement.style.setProperty("--pinned-bottom", height + "px");
  }

  function watchComposer() {
    var pinned = composer();
    if (!pinned) return;
    measurePinned();
    if (window.ResizeObserver) new ResizeObserver(measurePinned).observe(pinned);
    window.addEventListener("resize", measurePinned);
    window.addEventListener("scroll", measurePinned, {passive: true});
    var qa = document.getElementById("qa");
    if (qa) {
      qa.addEventListener("toggle", function () {
        measurePinned();
        // Opened under the user turn: show the panel's top, not the user turn again.
        if (qa.open && pinned.scrollHeight > pinned.clientHeight) {
          pinned.scrollTop += qa.getBoundingClientRect().top - pinned.getBoundingClientRect().top;
        }
      });
    }
  }
  document.addEventListener("DOMContentLoaded", watchComposer);

  // The report of a write is at the top of the composer: scroll the composer (not the page)
  // back to it when the composer scrolls inside.
  function showReport() {
    var pinned = composer();
    var report = document.getElementById("report");
    if (!pinned || !report || !pinned.contains(report)) return;
    var above = pinned.getBoundingClientRect().top - report.getBoundingClientRect().top;
    if (above > 0) pinned.scrollTop -= above;
  }

  // ---------------------------------------------------------------------------------------
  // Tables as stacked rows on a narrow screen: each cell labelled with its column.

  function labelCells(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var tables = Array.prototype.slice.call(scope.querySelectorAll("table.conversations, table.journal"));
    if (scope.matches && scope.matches("table.conversations, table.journal")) tables.push(scope);
    tables.forEach(function (table) {
      var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
        return th.textContent.trim();
      });
      table.querySelectorAll("tbody tr").forEach(function (row) {
        Array.prototype.forEach.call(row.children, function (cell, i) {
          if (heads[i] && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", heads[i]);
        });
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    labelCells(document);
    // The keys move through messages: their button shows where there are some.
    var keys = document.querySelector(".keys-button");
    if (keys && messagesBox()) keys.hidden = false;
  });
  document.body.addEventListener("htmx:load", function (event) {
    labelCells(event.detail.elt);
  });

  // ---------------------------------------------------------------------------------------
  // Loading messages: "Load earlier" keeps the reader's place; a load the keys asked for
  // ends on the message they wanted.

  var anchor = null; // {id, top}: the first message on screen before earlier ones came in

  document.body.addEventListener("htmx:beforeSwap", function (event) {
    var elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!elt || !elt.matches || !elt.matches(".load-earlier")) return;
    var first = firstOnScreen(loadedMessages());
    anchor = first ? {id: first.id, top: first.getBoundingClientRect().top} : null;
  });

  function swappedBy(event, elt) {
    var config = event.detail.requestConfig;
    return event.detail.elt === elt || (config && config.elt === elt);
  }

  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (anchor) {
      var kept = document.getElementById(anchor.id);
      if (kept) window.scrollBy(0, kept.getBoundingClientRect().top - anchor.top);
      anchor = null;
    }
    if (!pending || !swappedBy(event, pending.elt)) return;
    var done = pending;
    pending = null;
    if (done.url && done.push) history.pushState(null, "", done.url);
    else if (done.url) history.replaceState(history.state, "", done.url);
    if (done.search !== undefined) windowSearch = done.search;
    var article = loadedMessage(done.index);
    if (!article && done.delta) {
      // The page loaded did not reach it (a gap longer than a page): the neighbour in order.
      var from = loadedMessage(done.from);
      var list = loadedMessages();
      article = from ? list[list.indexOf(from) + done.delta] || null : null;
    }
    if (article) goTo(article);
  });

  // The load ended without its swap (refused, lost, aborted, nothing to swap): nothing is
  // waited for any more. After a swap, pending is already done with.
  function dropPending(event) {
    if (pending && swappedBy(event, pending.elt)) pending = null;
  }
  document.body.addEventListener("htmx:afterRequest", dropPending);
  document.body.addEventListener("htmx:swapError", dropPending);

  // ---------------------------------------------------------------------------------------
  // Writes: the forms that append through the service.

  function isAppendForm(element) {
    return Boolean(element && element.matches && element.matches(".append-form"));
  }

  function firstField(form) {
    return form.querySelector("textarea, input:not([type=hidden])");
  }

  // After a form appended something: empty it, keep the writer's place in it.
  document.body.addEventListener("htmx:afterRequest", function (event) {
    if (isAppendForm(event.detail.elt) && event.detail.successful) {
      event.detail.elt.reset();
    }
  });

  document.body.addEventListener("htmx:afterSettle", function (event) {
    if (!event.detail.target) {
      return; // a history restore: nothing was sent
    }
    // An outerHTML swap leaves event.detail.target detached: find what replaced it.
    var target = (event.detail.target.id && document.getElementById(event.detail.target.id)) ||
      event.detail.target;
    if (isAppendForm(target) && target.querySelector(".errors")) {
      var invalid = firstField(target);
      if (invalid) invalid.focus();
      return;
    }
    var used = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (isAppendForm(used)) {
      // Show the last row the write touched (the writer's own turn, usually) clear of the
      // composer, and the report of what the write did; then hand the focus back to the form.
      measurePinned();
      var touched = document.querySelectorAll("#messages .just-inserted, #messages .just-replaced");
      if (touched.length) touched[touched.length - 1].scrollIntoView({block: "nearest"});
      showReport();
      var field = firstField(used);
      if (field) field.focus({preventScroll: true});
    }
  });

  // The rows a write put in mid-buffer (healed placeholders), as the messages it swapped in
  // say: their new indexes, in order (the page may not show them).
  function insertedRows() {
    var written = document.querySelector("#messages .rows-inserted");
    return written ? written.getAttribute("data-indexes").split(" ").map(Number) : [];
  }

  // The index a message of the page before the write has now: one more for each row the
  // write inserted at or before it.
  function shifted(index, inserted) {
    inserted.forEach(function (at) { if (at <= index) index += 1; });
    return index;
  }

  // After a write that put rows in before the reader's message: the keys, the address and
  // the highlight follow the message to its new index.
  document.body.addEventListener("htmx:afterSettle", function (event) {
    var used = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!isAppendForm(used) || event.target !== messagesBox()) return;
    var inserted = insertedRows();
    if (!inserted.length) return;
    var named = /^#m-(\d+)$/.exec(window.location.hash);
    if (named) {
      var url = new URL(window.location.href);
      url.hash = "m-" + shifted(Number(named[1]), inserted);
      history.replaceState(history.state, "", url.href);
    }
    if (lastIndex !== null) lastIndex = shifted(lastIndex, inserted);
    var at = lastIndex !== null ? lastIndex : named ? shifted(Number(named[1]), inserted) : null;
    var article = at === null ? null : loadedMessage(at);
    if (article) markTarget(article);
  });

  // What the report says of a write the server refused, by its status.
  var REFUSED = {
    403: "The server refused this: your sign-in or the page may be out of date, or only the owner can drive this conversation. Reload and try again; nothing was written.",
    // The form's key was spent by a write this page does not show.
    422: "This page is out of date: its form was sent before. Reload the page and try again; nothing was written.",
    503: "The conversation is busy. Try again in a moment; nothing was written."
  };

  // A write the server refused or could not take (a stale CSRF token, a busy buffer, a
  // lost connection): say so where reports go, instead of failing silently.
  function reportFailure(event) {
    if (!isAppendForm(event.detail.elt)) return;
    var report = document.getElementById("report");
    if (!report) return;
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    var line = document.createElement("li");
    line.textContent = REFUSED[status] ||
      "The server could not take this (" + (status || "no connection") + "); nothing was written.";
    var list = document.createElement("ul");
    list.appendChild(line);
    report.replaceChildren(list);
    showReport();
  }
  // An upload: show how much of it has been sent (a 30 MB transcript takes a while).
  // htmx reports the upload's progress and then the answer's under the same event name;
  // the first "loadend" is the upload's, after which the server is importing.
  function uploadParts(event) {
    var form = event.detail.elt;
    if (!form || !form.matches || !form.matches(".upload-form")) return null;
    return {form: form, bar: form.querySelector("#upload-progress"), status: form.querySelector("#upload-status")};
  }
  document.body.addEventListener("htmx:beforeSend", function (event) {
    var parts = uploadParts(event);
    if (parts) parts.form.dataset.uploading = "true";
  });
  document.body.addEventListener("htmx:xhr:progress", function (event) {
    var parts = uploadParts(event);
    if (!parts || parts.form.dataset.uploading !== "true" || !event.detail.lengthComputable) return;
    var percent = Math.round(100 * event.detail.loaded / event.detail.total);
    parts.bar.hidden = false;
    parts.bar.value = percent;
    parts.status.textContent = "Sending… " + percent + "%";
  });
  document.body.addEventListener("htmx:xhr:loadend", function (event) {
    var parts = uploadParts(event);
    if (!parts || parts.form.dataset.uploading !== "true") return;
    delete parts.form.dataset.uploading;
    parts.bar.value = 100;
    parts.status.textContent = "Importing…";
  });
  document.body.addEventListener("htmx:afterRequest", function (event) {
    var parts = uploadParts(event);
    if (!parts) return;
    delete parts.form.dataset.uploading;
    parts.bar.hidden = true;
    parts.status.textContent = event.detail.successful ? "" : "The upload failed; nothing was imported.";
    // Imported: clear the chosen files, so that pressing Import again does not import them twice.
    if (event.detail.successful && document.querySelector("#upload-result table")) parts.form.reset();
  });

  document.body.addEventListener("htmx:responseError", reportFailure);
  document.body.addEventListener("htmx:sendError", reportFailure);

  // The reader is at ``article`` now (a search's hit), with the focus left where it is: the
  // keys go on from there.
  function place(article) {
    lastIndex = indexOf(article);
  }

  // For the other scripts (search opens a hit's window the same way).
  window.flowdrop = {
    openMessage: openMessage, goTo: goTo, place: place, insertedRows: insertedRows, shifted: shifted
  };
})();
