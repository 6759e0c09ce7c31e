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

  function messageJson(message) {
    var raw = message.querySelector(".raw pre");
    return raw ? raw.textContent : "";
  }

  function say(button, words) {
    if (!button.dataset.label) button.dataset.label = button.textContent;
    button.textContent = words;
    window.clearTimeout(Number(button.dataset.timer));
    button.dataset.timer = String(window.setTimeout(function () {
      button.textContent = button.dataset.label;
    }, FEEDBACK_MS));
  }

  function copy(button, message) {
    var text = button.dataset.copy === "json" ? messageJson(message) : messageText(message);
    if (!navigator.clipboard) {
      say(button, "Cannot copy here");
      return;
    }
    navigator.clipboard.writeText(text).then(
      function () { say(button, "Copied"); },
      function () { say(button, "Copy refused"); }
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
