// Live parts of the status page: the sync table refreshed from /api/sync, the repository filter.
// Every value from the relay goes in through textContent, never as markup.
"use strict";
(function () {
  function cell(row, text, className) {
    var td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
  }
  function when(seconds) {
    if (seconds === null || seconds === undefined) return "never";
    return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }
  function lastContact(relay) {
    var a = relay.last_connect, b = relay.last_disconnect;
    if (a === null || a === undefined) return b;
    if (b === null || b === undefined) return a;
    return Math.max(a, b);
  }
  function render(doc) {
    var body = document.getElementById("sync-rows");
    var rows = document.createDocumentFragment();
    (doc.relays || []).forEach(function (relay) {
      var tr = document.createElement("tr");
      cell(tr, relay.url);
      cell(tr, relay.status, String(relay.status));
      cell(tr, relay.health, String(relay.health));
      cell(tr, relay.bootstrap ? "bootstrap" : relay.role);
      cell(tr, when(lastContact(relay)));
      cell(tr, String(relay.events_stored || 0), "num");
      cell(tr, relay.last_error || "", "error");
      rows.appendChild(tr);
    });
    (doc.control_connections || []).forEach(function (relay) {
      var tr = document.createElement("tr");
      var status = relay.open ? "open" : "closed";
      cell(tr, relay.url);
      cell(tr, status, status);
      cell(tr, "");
      cell(tr, relay.role);
      cell(tr, "");
      cell(tr, "", "num");
      cell(tr, "", "error");
      rows.appendChild(tr);
    });
    body.replaceChildren(rows);
    document.getElementById("sync-summary").textContent =
      (doc.relays || []).length + " tracked relays, " + doc.repositories +
      " repositories followed; updated " + when(Math.floor(Date.now() / 1000));
  }
  function refresh() {
    fetch("/api/sync", { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (doc) { if (doc) render(doc); })
      .catch(function () {});
  }
  var search = document.getElementById("repo-search");
  search.hidden = false;
  search.addEventListener("input", function () {
    var q = search.value.trim().toLowerCase();
    document.querySelectorAll("#repo-list li").forEach(function (li) {
      li.hidden = q !== "" && li.getAttribute("data-search").indexOf(q) < 0;
    });
  });
  refresh();
  setInterval(refresh, 5000);
})();
