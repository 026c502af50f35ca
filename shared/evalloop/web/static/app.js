// evalloop web: keyboard shortcuts (docs/web.md#review-queue). Forms work without this file.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }
  function go(link) { if (link) { link.click(); } }
  function submit(id) {
    var form = document.getElementById(id);
    if (form) { if (form.reportValidity && !form.reportValidity()) { return; } form.requestSubmit(); }
  }
  // Leave the field before htmx sends a form: htmx re-focuses the element with the same id on
  // the new page (the next candidate's reject field), and the next shortcut would be typed
  // into it.
  document.addEventListener("htmx:beforeRequest", function () {
    var el = document.activeElement;
    if (typing(el)) { el.blur(); }
  });
  document.addEventListener("keydown", function (ev) {
    var target = ev.target;
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && target.form) {
      ev.preventDefault();
      target.form.requestSubmit();
      return;
    }
    if (ev.key === "Escape" && typing(target)) { target.blur(); return; }
    if (typing(target) || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var tab = document.querySelector('nav.tabs a[data-hotkey="' + ev.key + '"]');
    if (tab) { ev.preventDefault(); go(tab); return; }
    var selected = document.querySelector("#queue-list li.selected");
    switch (ev.key) {
      case "j":
      case "k":
        if (selected) {
          var sib = ev.key === "j" ? selected.nextElementSibling : selected.previousElementSibling;
          if (sib) { ev.preventDefault(); go(sib.querySelector("a")); }
        }
        break;
      case "c": if (document.getElementById("confirm-form")) { ev.preventDefault(); submit("confirm-form"); } break;
      case "s": if (document.getElementById("skip-form")) { ev.preventDefault(); submit("skip-form"); } break;
      case "e": var q = document.getElementById("f-question"); if (q) { ev.preventDefault(); q.focus(); } break;
      case "r": var r = document.getElementById("f-reason"); if (r) { ev.preventDefault(); r.focus(); } break;
    }
  });
})();
