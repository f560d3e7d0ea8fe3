// BeamWeaver's small page script: keyboard navigation in the inbox, shortcuts on the item
// page, folded menus and bars on a phone, the live-connection indicator (and a live page
// paused because its user has too many open, or waiting because they opened pages too
// fast), the page title after live updates, and clear messages when an htmx request
// fails (a 403 usually means the session changed in another tab; a 403 the server marks
// as a review-policy refusal is shown in place instead).
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

  // A review-policy refusal (X-BeamWeaver-Refusal) is an answer to show, not an error.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (xhr && xhr.status === 403 && xhr.getResponseHeader("X-BeamWeaver-Refusal")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

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

  // Keyed lists (data-keyed-list: the inbox rows, a thread's run events). The server
  // pushes rows and events into their list, which is always on the page, never at an
  // element the page may lack (htmx logs htmx:oobErrorNoTarget for those). Here an
  // element whose id the page already has replaces that element instead of appearing
  // twice (a changed row, a replayed event), and a data-remove marker removes it.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var fragment = event.detail.fragment;
    if (!target || !target.hasAttribute("data-keyed-list") || !fragment || !fragment.children) return;
    Array.prototype.slice.call(fragment.children).forEach(function (element) {
      var existing = element.id ? document.getElementById(element.id) : null;
      if (element.hasAttribute("data-remove")) {
        element.remove();
        if (existing) existing.remove();
      } else if (existing) {
        existing.replaceWith(element);
        htmx.process(element);
      }
    });
  });

  // The live-connection indicator.
  function setLive(state, text) {
    var dot = document.getElementById("live-status");
    if (!dot) return;
    dot.dataset.state = state;
    dot.textContent = text;
  }
  // `data-synced`: the first message since the socket opened (the server's resync of the
  // page's live parts) has been swapped in.
  function setSynced(synced) {
    var dot = document.getElementById("live-status");
    if (!dot) return;
    if (synced) dot.dataset.synced = "true";
    else delete dot.dataset.synced;
  }
  // A socket refused because its user has too many live pages open (close code 4429,
  // reviews.live.base.CLOSE_TOO_MANY). htmx's ws extension does not reconnect after that
  // code (only after 1006, 1011, 1012, 1013), so this page says why and tries again
  // itself: after 15 to 30 s, twice as long after each refusal in a row, at most 8 min,
  // at a random point of each wait so that one user's tabs do not all come back at once.
  // Meanwhile the page's own poll still refreshes it over HTTP.
  var TOO_MANY = 4429;
  var PAUSE_MS = 30000;
  var LONGEST_PAUSE_MS = 8 * 60000;
  var refusals = 0;
  function pauseLive(socket) {
    var longest = Math.min(PAUSE_MS * Math.pow(2, refusals), LONGEST_PAUSE_MS);
    refusals += 1;
    setLive("paused", "Live updates paused: too many of your BeamWeaver pages are open. " +
      "Close some; this page reconnects by itself (until then it refreshes less often).");
    window.setTimeout(function () { socket.reconnect(); }, longest / 2 + Math.random() * longest / 2);
  }
  // A socket refused because its user opened live pages faster than the server allows
  // (close code 4430, reviews.live.base.CLOSE_TOO_FAST). Before closing, the server sends
  // the one frame that is not HTML, {"type": "retry", "seconds": n}: the seconds left in
  // its count's window. The page shows "Reconnecting…", as after any lost connection, and
  // tries again once those seconds are over, at a random point of the 5 s after them so
  // that one user's refused tabs do not all come back at once.
  var TOO_FAST = 4430;
  var retrySeconds = 0;
  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    var message = event.detail.message;
    if (typeof message !== "string" || message.charAt(0) !== "{") return;
    event.preventDefault();
    var frame = JSON.parse(message);
    if (frame.type === "retry") retrySeconds = Number(frame.seconds) || 0;
  });
  function retryAfterWindow(socket) {
    var wait = (retrySeconds + Math.random() * 5) * 1000;
    retrySeconds = 0;
    window.setTimeout(function () { socket.reconnect(); }, wait);
  }

  // "Live" once the server's first message (its resync) arrived, not when the socket
  // opens: a socket refused after accepting (4429) said "Live" for an instant first.
  document.addEventListener("htmx:wsOpen", function () {
    setSynced(false);
    setLive("open", "Connecting…");
  });
  // A socket the server closed because this page may no longer be watched
  // (reviews.live.base.CLOSE_FORBIDDEN: signed out, deactivated, or access taken away).
  // Nothing reconnects: the page says so instead of "Reconnecting…" for ever.
  var FORBIDDEN = 4403;
  // The codes htmx's ws extension retries by itself (hx-ws-2.js); after any other close
  // (a server going away with 1001, say) this page retries once, 1 to 5 s later.
  var RETRIED = [1006, 1011, 1012, 1013];
  function retryLater(socket) {
    window.setTimeout(function () { socket.reconnect(); }, 1000 + Math.random() * 4000);
  }
  document.addEventListener("htmx:wsClose", function (event) {
    setSynced(false);
    var close = event.detail.event;
    var code = close ? close.code : 1006;
    if (code === TOO_MANY) {
      pauseLive(event.detail.socketWrapper);
      return;
    }
    if (code === TOO_FAST) {
      setLive("closed", "Reconnecting…");
      retryAfterWindow(event.detail.socketWrapper);
      return;
    }
    if (code === FORBIDDEN) {
      setLive("stopped", "Live updates stopped: you are signed out or may no longer see " +
        "this page. Reload it to sign in again.");
      return;
    }
    setLive("closed", "Reconnecting…");
    // A socket whose element left the page was closed by the extension itself.
    if (RETRIED.indexOf(code) < 0 && document.body.contains(event.target)) {
      retryLater(event.detail.socketWrapper);
    }
  });
  document.addEventListener("htmx:wsError", function () {
    setSynced(false);
    setLive("closed", "Reconnecting…");
  });

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
    var dot = document.getElementById("live-status");
    if (dot && !dot.dataset.synced) setLive("open", "Live");
    setSynced(true);
    refusals = 0;
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
  // Live pushes and polls re-render rows (out-of-band swaps over the websocket, settled
  // swaps over HTTP): whatever replaced them, keep the row the operator moved to selected.
  document.addEventListener("htmx:afterSettle", restoreSelection);
  if (window.MutationObserver) {
    new MutationObserver(restoreSelection).observe(document.body, { childList: true, subtree: true });
  }

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

  // Item page: a approves, r rejects, e edits (every action card that allows it), then
  // focus goes where the next key press belongs: the submit button, the message, the
  // first argument. Nothing is sent before Enter.
  function decideWith(kind) {
    var form = document.getElementById("decision-form");
    if (!form) return false;
    var radios = Array.prototype.slice.call(
      form.querySelectorAll('input[type=radio][value="' + kind + '"]')
    );
    if (kind === "edit") radios = radios.slice(0, 1);
    if (!radios.length) return false;
    radios.forEach(function (radio) {
      radio.checked = true;
      radio.dispatchEvent(new Event("change", { bubbles: true }));
    });
    var card = radios[0].closest(".action-card");
    var focus = null;
    if (kind === "approve") focus = document.getElementById("decision-submit");
    else if (kind === "reject") focus = card && card.querySelector("textarea[name$='-message']");
    else focus = card && card.querySelector(".edit-panel input, .edit-panel textarea, .edit-panel select");
    (focus || document.getElementById("decision-submit") || radios[0]).focus();
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    var kinds = { a: "approve", r: "reject", e: "edit" };
    if (kinds[event.key] && decideWith(kinds[event.key])) event.preventDefault();
  });

  // Folds (details[data-open-wide]: the main menu, the inbox filters and batch bar) are
  // closed on a phone, so the first screen shows the items; on a wider screen they open
  // (and open again when a phone turns sideways). Without this script they stay folded,
  // every control one tap away.
  var wide = window.matchMedia("(min-width: 40.01rem)");
  function unfold() {
    if (!wide.matches) return;
    document.querySelectorAll("details[data-open-wide]").forEach(function (details) {
      details.open = true;
    });
  }
  document.addEventListener("DOMContentLoaded", unfold);
  if (wide.addEventListener) wide.addEventListener("change", unfold);

  // Inbox batch bar: how many rows are selected (selecting one unfolds the bar). The
  // ticks are remembered by checkbox value (item id and payload digest), so that a row a
  // live push or the catch-up poll re-renders keeps its tick; a row whose item changed
  // has a new digest and comes back unticked (the batch would refuse it as stale). The
  // batch's answer re-renders the list: the operator starts a new selection.
  var ticked = new Set();

  function syncSelection() {
    document.querySelectorAll("input.row-select").forEach(function (box) {
      if (ticked.has(box.value) && !box.checked) box.checked = true;
    });
    var count = document.querySelectorAll("input.row-select:checked").length;
    var fold = document.getElementById("batch-fold");
    if (fold && count) fold.open = true;
    var label = document.getElementById("batch-count");
    var text = count ? count + " selected" : "Select items to decide them together";
    // Unchanged text is not set again: setting it is a mutation the observer reports.
    if (label && label.textContent !== text) label.textContent = text;
    document.querySelectorAll("#batch-form button[name=action]").forEach(function (button) {
      button.disabled = count === 0;
    });
  }
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box || !box.classList || !box.classList.contains("row-select")) return;
    if (box.checked) ticked.add(box.value);
    else ticked.delete(box.value);
    syncSelection();
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (event.detail.elt && event.detail.elt.id === "batch-form") ticked.clear();
  });
  document.addEventListener("htmx:afterSettle", syncSelection);
  document.addEventListener("htmx:wsAfterMessage", syncSelection);
  document.addEventListener("DOMContentLoaded", syncSelection);
  if (window.MutationObserver) {
    new MutationObserver(syncSelection).observe(document.body, { childList: true, subtree: true });
  }

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
