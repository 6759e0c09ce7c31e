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
      // Show the last row the write touched (the writer's own turn, usually), then hand
      // the focus back to the form.
      var touched = document.querySelectorAll("#messages .just-inserted, #messages .just-replaced");
      if (touched.length) touched[touched.length - 1].scrollIntoView({block: "nearest"});
      var field = firstField(used);
      if (field) field.focus({preventScroll: true});
    }
  });

  // A write the server refused or could not take (a stale CSRF token, a busy buffer, a
  // lost connection): say so where reports go, instead of failing silently.
  function reportFailure(event) {
    if (!isAppendForm(event.detail.elt)) return;
    var report = document.getElementById("report");
    if (!report) return;
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    var line = document.createElement("li");
    line.textContent = status === 403
      ? "The server refused this: your sign-in or the page may be out of date, or only the owner can drive this conversation. Reload and try again; nothing was written."
      : status === 503
        ? "The conversation is busy. Try again in a moment; nothing was written."
        : "The server could not take this (" + (status || "no connection") + "); nothing was written.";
    var list = document.createElement("ul");
    list.appendChild(line);
    report.replaceChildren(list);
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
})();
