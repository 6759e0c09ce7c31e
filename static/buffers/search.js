// FlowDrop Web: search. "/" focuses the page's search field (the list's, or the
// conversation's). In a conversation, Enter asks the server for the next hit and Shift+Enter
// for the previous one: it opens the window there (htmx swaps it in with "3 of 17"), and the
// hit is highlighted, its matching words marked. Loaded as a file under the strict CSP; text
// is only ever wrapped in elements made here, never parsed as markup.
(function () {
  "use strict";

  function isField(element) {
    return Boolean(element) && (element.isContentEditable ||
      /^(INPUT|TEXTAREA|SELECT)$/.test(element.tagName));
  }

  // "/" anywhere but in a field: to the search field, its text selected to type over.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.defaultPrevented || isField(event.target)) return;
    var field = document.querySelector(".search-field");
    if (!field) return;
    event.preventDefault();
    field.focus();
    field.select();
  });

  // Enter: the next hit; Shift+Enter: the previous one. By the form's own buttons, so that
  // htmx sends which one (and without JavaScript they do the same, reloading the page).
  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (event.key !== "Enter" || event.isComposing || !field || field.id !== "conversation-search-q") return;
    var button = field.form && field.form.querySelector(event.shiftKey ? ".search-previous" : ".search-next");
    if (!button) return;
    event.preventDefault();
    button.click();
  });

  // Letters, digits and combining marks, as the server reads words.
  var WORD = "[\\p{L}\\p{N}\\p{M}]";

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  // The words as the server matches them: a word of two characters or more matches the
  // words it begins, a shorter one only itself.
  function wordsPattern(words) {
    var alternatives = words.map(function (word) {
      // The server reads text composed (NFC); a page's text may be decomposed.
      var spellings = [word.normalize("NFC"), word.normalize("NFD")].map(function (spelling) {
        // The server's words hold 'İ' as a plain 'i', which a case-blind match here does
        // not take to 'İ' (Unicode's simple case folding leaves it); a word typed with 'i'
        // and a combining dot matches it too.
        return escapeRegExp(spelling).replace(/i\u0307|i/g, function (i) {
          return i === "i" ? "[i\u0130]" : "(?:i\u0307|\u0130)";
        });
      });
      var either = "(?:" + spellings.join("|") + ")";
      return either + (word.length >= 2 ? WORD + "*" : "(?!" + WORD + ")");
    });
    return new RegExp("(?<!" + WORD + ")(?:" + alternatives.join("|") + ")", "giu");
  }

  function unmark() {
    document.querySelectorAll(".search-hit").forEach(function (element) {
      element.classList.remove("search-hit");
    });
    document.querySelectorAll("mark.search-word").forEach(function (mark) {
      var parent = mark.parentNode;
      parent.replaceChild(document.createTextNode(mark.textContent), mark);
      parent.normalize();
    });
  }

  function markWords(root, words) {
    if (!words.length) return;
    var pattern = wordsPattern(words);
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      var parent = node.parentElement;
      if (!parent || parent.closest("header, mark, .raw, button")) return;
      // A call's summary is the page's words but for the tool's name, which is searched.
      if (parent.closest("summary") && !parent.closest(".call-name")) return;
      var text = node.nodeValue;
      var pieces = null;
      var at = 0;
      var match;
      pattern.lastIndex = 0;
      while ((match = pattern.exec(text)) !== null) {
        pieces = pieces || document.createDocumentFragment();
        pieces.appendChild(document.createTextNode(text.slice(at, match.index)));
        var mark = document.createElement("mark");
        mark.className = "search-word";
        mark.textContent = match[0];
        pieces.appendChild(mark);
        at = match.index + match[0].length;
      }
      if (pieces) {
        pieces.appendChild(document.createTextNode(text.slice(at)));
        parent.replaceChild(pieces, node);
      }
    });
    // A match only in a folded part (a call's arguments): unfold the first one.
    var first = root.querySelector("mark.search-word");
    var folded = first && first.closest("details:not([open])");
    if (folded && !root.querySelector(".content mark.search-word")) folded.open = true;
    // A match below the head of a long folded message: show it all.
    var inFold = first && first.closest(".is-folded");
    var showAll = inFold && root.querySelector("button.show-all");
    if (showAll) showAll.click();
  }

  // The current hit, as the last answer (or the page) says: highlighted, words marked.
  function markHit() {
    unmark();
    var count = document.querySelector("#search-state .search-count");
    if (!count || count.dataset.hit === "") return null;
    var article = document.getElementById("m-" + count.dataset.hit);
    if (!article) return null;
    article.classList.add("search-hit");
    markWords(article, (count.dataset.words || "").split(" ").filter(Boolean));
    return article;
  }

  // Where the reader should look: the first marked word that shows (a message holds its
  // text twice, rendered and as text), else the message. In a long message, its top
  // may be screens above the word.
  function placeOf(article) {
    var words = article.querySelectorAll("mark.search-word");
    for (var i = 0; i < words.length; i++) {
      if (words[i].getClientRects().length) return words[i];
    }
    return article;
  }

  function inView(element) {
    var box = element.getBoundingClientRect();
    return box.top >= 0 && box.bottom <= window.innerHeight;
  }

  document.body.addEventListener("htmx:afterSettle", function (event) {
    var used = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!used || used.id !== "conversation-search") return;
    var article = markHit();
    if (!article) return;
    placeOf(article).scrollIntoView({block: "center"});
    if (window.flowdrop) window.flowdrop.place(article); // j and k go on from the hit
  });

  // A write that put rows in before the hit moved it down: the search goes on from it, at
  // its new index, highlighted again (the write redrew the messages).
  document.body.addEventListener("htmx:afterSettle", function (event) {
    var used = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!used || !used.matches || !used.matches(".append-form")) return;
    if (!event.target || event.target.id !== "messages" || !window.flowdrop) return;
    var inserted = window.flowdrop.insertedRows();
    var count = document.querySelector("#search-state .search-count");
    var from = document.querySelector("#search-state input[name=from]");
    if (inserted.length && count && count.dataset.hit !== "") {
      count.dataset.hit = String(window.flowdrop.shifted(Number(count.dataset.hit), inserted));
    }
    if (inserted.length && from && from.value !== "") {
      from.value = String(window.flowdrop.shifted(Number(from.value), inserted));
    }
    markHit();
  });

  // Arriving at a hit (a snippet's link): the browser has scrolled to the message's top;
  // when the word is further down, to the word.
  window.addEventListener("load", function () {
    var article = document.querySelector(".message.search-hit");
    var place = article && placeOf(article);
    if (place && place !== article && !inView(place)) place.scrollIntoView({block: "center"});
  });

  // htmx keeps a copy of the list for Back and Forward (not of a conversation, which is
  // reloaded), made from its HTML, where a field's value is the one first served: the query
  // typed goes into it, so that the page shown again holds the search to go on from.
  document.body.addEventListener("htmx:beforeHistorySave", function () {
    document.querySelectorAll(".search-field").forEach(function (field) {
      field.setAttribute("value", field.value);
    });
  });

  // Nothing found: only the count changed (no swap settles), and no hit stays highlighted.
  document.body.addEventListener("htmx:oobAfterSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id === "search-state") markHit();
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", markHit);
  } else {
    markHit();
  }
})();
