// Reading a message: show all, as text, copy. The buttons are in templates/buffers/_message.html;
// one listener on the document serves every message, loaded with the page or swapped in by htmx.
(function () {
  "use strict";

  document.documentElement.classList.add("reading-js");

  var FEEDBACK_MS = 1500;

  // Every part's own text, as the transcript holds it (not the rendered markdown).
  function messageText(message) {
    var content = message.querySelector(".content");
    if (!content) return "";
    var parts = content.querySelectorAll(":scope > .text, :scope > .part-md > .text, :scope > pre.json");
    return Array.prototype.map.call(parts, function (part) { return part.textContent; }).join("\n\n");
  }

  // The message's raw JSON: in the page, or (a long one) asked of the server the first time
  // it is opened or copied, and kept in its box.
  function messageJson(message) {
    var details = message.querySelector("details.raw");
    if (!details) return Promise.resolve("");
    return loadRaw(details);
  }

  function loadRaw(details) {
    var box = details.querySelector("pre");
    if (!details.dataset.src || details.dataset.loaded) return Promise.resolve(box.textContent);
    return fetch(details.dataset.src, {headers: {Accept: "application/json"}}).then(function (answer) {
      // A refusal says why in words (409: a write moved the message since the page loaded).
      if (!answer.ok) return answer.text().then(function (why) { throw new Error(why); });
      return answer.text();
    }).then(function (text) {
      box.textContent = text;
      details.dataset.loaded = "1";
      return text;
    });
  }

  // "toggle" does not bubble: heard on its way down.
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.matches || !details.matches("details.raw[data-src]") || !details.open) return;
    loadRaw(details).catch(function (error) {
      details.querySelector("pre").textContent = error.message.length < 300 ? error.message :
        "The raw JSON could not be loaded; open it again to retry.";
    });
  }, true);

  function say(button, words) {
    if (!button.dataset.label) button.dataset.label = button.textContent;
    button.textContent = words;
    window.clearTimeout(Number(button.dataset.timer));
    button.dataset.timer = String(window.setTimeout(function () {
      button.textContent = button.dataset.label;
    }, FEEDBACK_MS));
  }

  function copy(button, message) {
    if (!navigator.clipboard) {
      say(button, "Cannot copy here");
      return;
    }
    var text = button.dataset.copy === "json" ? messageJson(message) : Promise.resolve(messageText(message));
    text.then(
      function (copied) {
        return navigator.clipboard.writeText(copied).then(
          function () { say(button, "Copied"); },
          function () { say(button, "Copy refused"); }
        );
      },
      function () { say(button, "Could not load it"); }
    );
  }

  function toggleText(button, message) {
    var asText = message.classList.toggle("as-text");
    button.setAttribute("aria-pressed", asText ? "true" : "false");
  }

  function toggleFold(button, message) {
    var content = document.getElementById(button.getAttribute("aria-controls"));
    if (!content) return;
    var folded = content.classList.toggle("is-folded");
    button.setAttribute("aria-expanded", folded ? "false" : "true");
    button.textContent = folded ? button.dataset.label : "Fold";
    if (folded && message.getBoundingClientRect().top < 0) {
      message.scrollIntoView({block: "start"});
    }
  }

  // A write redraws the loaded messages: each keeps how the reader left it ("As text", all of
  // it shown, its calls and raw JSON opened), at its index after the rows the write put in
  // before it (healed placeholders go in mid-buffer).
  var leftAs = null;

  function viewOf(message) {
    var showAll = message.querySelector("button.show-all");
    return {
      index: Number(message.id.slice(2)),
      asText: message.classList.contains("as-text"),
      unfolded: Boolean(showAll && showAll.getAttribute("aria-expanded") === "true"),
      opened: Array.prototype.map.call(message.querySelectorAll("details"), function (d) {
        return d.open;
      })
    };
  }

  function restore(message, view) {
    var asText = message.querySelector("button.as-text");
    if (view.asText && asText && !message.classList.contains("as-text")) toggleText(asText, message);
    var showAll = message.querySelector("button.show-all");
    if (view.unfolded && showAll && showAll.getAttribute("aria-expanded") !== "true") {
      toggleFold(showAll, message);
    }
    message.querySelectorAll("details").forEach(function (details, n) {
      if (view.opened[n]) details.open = true;
    });
  }

  function isMessages(element) {
    return Boolean(element && element.id === "messages");
  }

  document.body.addEventListener("htmx:beforeSwap", function (event) {
    var used = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!used || !used.matches || !used.matches(".append-form")) return;
    if (!event.detail.shouldSwap || !isMessages(event.detail.target)) return; // refused: a form redrawn
    leftAs = Array.prototype.map.call(document.querySelectorAll("#messages .message"), viewOf);
  });

  // After the settle: htmx gives a swapped element of the same id its new attributes then.
  document.body.addEventListener("htmx:afterSettle", function (event) {
    if (!leftAs || !isMessages(event.detail.target)) return;
    var views = leftAs;
    leftAs = null;
    // Each at its index after the rows the write put in (app.js reads them), loaded or
    // not: a row put in before the window moves it too.
    var inserted = window.flowdrop.insertedRows();
    views.forEach(function (view) {
      var message = document.getElementById("m-" + window.flowdrop.shifted(view.index, inserted));
      if (message) restore(message, view);
    });
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest(".message button");
    if (!button) return;
    var message = button.closest(".message");
    if (button.classList.contains("copy")) {
      copy(button, message);
    } else if (button.classList.contains("as-text")) {
      toggleText(button, message);
    } else if (button.classList.contains("show-all")) {
      toggleFold(button, message);
    }
  });
})();
