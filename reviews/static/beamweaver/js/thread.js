// The thread page's live studio, from the run events the server pushes into the page's
// event list over the websocket: the node(s) running now are highlighted on the graph
// drawing, and a model's reply appears as it is written (its `model.delta` events,
// gathered into the "Writing…" box; the conversation takes it over when the run pauses
// or ends and the server re-renders the state). Only events pushed one by one count: a
// whole re-rendered page carries its own marks. Text only, never HTML from data.
(function () {
  "use strict";

  function drawingFor(ns) {
    if (!ns) return document.getElementById("graph-root");
    var node = ns.split("|")[0].split(":")[0];
    var holder = Array.prototype.find.call(
      document.querySelectorAll("[data-subgraph-of]"),
      function (el) { return el.getAttribute("data-subgraph-of") === node; }
    );
    return holder && ns.split("|").length <= 2 ? holder.querySelector("svg") : null;
  }

  function nodeBox(drawing, name) {
    if (!drawing) return null;
    return Array.prototype.find.call(drawing.querySelectorAll("g.node"), function (g) {
      return g.getAttribute("data-node") === name;
    }) || null;
  }

  function stream(li) {
    var box = document.getElementById("thread-stream");
    if (!box) return;
    var id = li.getAttribute("data-message") || "reply";
    var message = Array.prototype.find.call(box.querySelectorAll(".stream-message"), function (m) {
      return m.getAttribute("data-message") === id;
    });
    if (!message) {
      message = document.createElement("div");
      message.className = "stream-message";
      message.setAttribute("data-message", id);
      box.appendChild(message);
    }
    var text = li.querySelector(".delta-text");
    message.appendChild(document.createTextNode(text ? text.textContent : ""));
    box.hidden = false;
    li.remove();
  }

  function handle(li) {
    var event = li.getAttribute("data-event");
    if (event === "model.delta") return stream(li);
    if (event === "run.completed" || event === "run.failed" || event === "run.interrupted") {
      document.querySelectorAll(".graph-drawing .is-running").forEach(function (g) {
        g.classList.remove("is-running");
      });
      return;
    }
    if (event !== "node.started" && event !== "node.finished") return;
    var box = nodeBox(drawingFor(li.getAttribute("data-ns") || ""), li.getAttribute("data-node"));
    if (!box) return;
    if (event === "node.started") {
      box.classList.add("is-running", "on-path");
      box.classList.remove("is-paused");
    } else {
      box.classList.remove("is-running");
    }
  }

  new MutationObserver(function (records) {
    records.forEach(function (record) {
      if (!record.target || record.target.id !== "thread-events") return;
      record.addedNodes.forEach(function (node) {
        if (node.nodeType === 1 && node.hasAttribute("data-event")) handle(node);
      });
    });
  }).observe(document.body, { childList: true, subtree: true });
})();
