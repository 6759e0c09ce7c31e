// FlowDrop Web: the little the pages need beyond htmx. Loaded as a file: the pages allow no
// inline script (Content-Security-Policy), and transcript content never becomes markup.
(function () {
  "use strict";

  // A link to a message this page did not load (#m-50000 in a long buffer): open the page
  // at that message instead, without loading the rest of the buffer.
  function openLinkedMessage() {
    var match = /^#m-(\d+)$/.exec(window.location.hash);
    if (match && !document.getElementById("m-" + match[1])) {
      var url = new URL(window.location.href);
      url.searchParams.set("at", match[1]);
      window.location.replace(url.toString());
    }
  }
  window.addEventListener("hashchange", openLinkedMessage);
  document.addEventListener("DOMContentLoaded", openLinkedMessage);

  // After a form appended something: empty it and keep the writer's place in it.
  document.body.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    if (form.classList && form.classList.contains("append-form") && event.detail.successful) {
      form.reset();
    }
  });

  // After any swap that re-rendered a form (with its errors) or the buffer: focus the field
  // that needs attention, or the form the writer used.
  document.body.addEventListener("htmx:afterSettle", function (event) {
    // An outerHTML swap leaves event.detail.target detached: find what replaced it.
    var target = (event.detail.target.id && document.getElementById(event.detail.target.id)) ||
      event.detail.target;
    var invalid = target.querySelector && target.querySelector(".errors");
    if (invalid && target.matches(".append-form")) {
      var field = target.querySelector("textarea, input:not([type=hidden])");
      if (field) field.focus();
      return;
    }
    var used = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (used && used.matches && used.matches(".append-form")) {
      var first = used.querySelector("textarea, input:not([type=hidden])");
      if (first) first.focus();
    }
  });
})();
