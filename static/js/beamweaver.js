// BeamWeaver's small page script: keyboard navigation in the inbox, the live-connection
// indicator, the page title after live updates, and clear messages when an htmx request
// fails (a 403 usually means the session changed in another tab).
// It never evaluates strings, never builds HTML from data, and is served from 'self'.
(function () {
  "use strict";

  function $(selector, root) {
    return (root || document).querySelector(selector);
  }

  function showBanner(text) {
    var banner = document.getElementById("session-banner");
    var label = document.getElementById("session-banner-text");
    if (!banner || !label) return;
    if (text) label.textContent = text;
    banner.hidden = false;
  }

  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 403) {
      showBanner("Your session changed (you logged out or in elsewhere). Reload the page to continue; nothing was done.");
    } else if (status === 413) {
      showBanner("That was too large to send. Shorten it and try again.");
    } else if (status === 404) {
      showBanner("That item no longer exists, or you may not see it. Reload the page.");
    } else {
      showBanner("Something went wrong (HTTP " + status + "). Reload the page and try again.");
    }
  });

  document.addEventListener("htmx:sendError", function () {
    showBanner("The server cannot be reached. Check your connection, then reload the page.");
  });

  // The live-connection indicator.
  function setLive(state, text) {
    var dot = document.getElementById("live-status");
    if (!dot) return;
    dot.dataset.state = state;
    dot.textContent = text;
  }
  document.addEventListener("htmx:wsOpen", function () { setLive("open", "Live"); });
  document.addEventListener("htmx:wsClose", function () { setLive("closed", "Reconnecting…"); });
  document.addEventListener("htmx:wsError", function () { setLive("closed", "Reconnecting…"); });

  // The title carries the pending count; live updates replace #inbox-counts.
  function syncTitle() {
    var counts = document.getElementById("inbox-counts");
    if (counts && counts.dataset.title) document.title = counts.dataset.title;
  }
  document.addEventListener("htmx:afterSettle", syncTitle);
  document.addEventListener("htmx:oobAfterSwap", syncTitle);
  document.addEventListener("htmx:wsAfterMessage", function () {
    syncTitle();
    restoreSelection();
  });

  // Inbox keyboard: j / k move, Enter opens (the rows are links).
  var selectedId = null;

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("#inbox-rows > li"));
  }

  function select(row) {
    rows().forEach(function (r) { r.classList.remove("is-selected"); });
    if (!row) return;
    row.classList.add("is-selected");
    selectedId = row.id;
    var link = $("a", row);
    if (link) link.focus();
  }

  function restoreSelection() {
    if (!selectedId) return;
    var row = document.getElementById(selectedId);
    if (row) row.classList.add("is-selected");
  }
  document.addEventListener("htmx:afterSettle", restoreSelection);

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    var list = rows();
    if (!list.length) return;
    var current = list.findIndex(function (r) { return r.id === selectedId; });
    if (event.key === "j") {
      select(list[Math.min(list.length - 1, current + 1)]);
      event.preventDefault();
    } else if (event.key === "k") {
      select(list[Math.max(0, current < 0 ? 0 : current - 1)]);
      event.preventDefault();
    } else if (event.key === "Enter" && current >= 0 && target === document.body) {
      var link = $("a", list[current]);
      if (link) link.click();
    }
  });

  // Plain (non-htmx) forms marked data-progress show that they are working.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-progress]") || event.defaultPrevented) return;
    var button = event.submitter || $("button[type=submit]", form);
    if (!button) return;
    form.setAttribute("aria-busy", "true");
    window.setTimeout(function () {
      button.disabled = true;
      button.textContent = button.dataset.progress || "Working…";
    }, 0);
  });

  // Filter menus apply on change.
  document.addEventListener("change", function (event) {
    var form = event.target && event.target.closest && event.target.closest("form[data-autosubmit]");
    if (form && event.target.tagName === "SELECT") form.requestSubmit();
  });
})();
