// The Replication section of a repository's page: fills its tables from the replication view's
// JSON (the section's data-src), and fetches it again every few seconds while a measurement is
// under way, a bounded number of times. Every value goes in through textContent, never as markup.
"use strict";
(function () {
  var section = document.getElementById("replication");
  if (!section) return;
  var src = section.getAttribute("data-src");
  var summary = document.getElementById("replication-summary");
  var refetchMs = 3000, maxFetches = 20, fetches = 0;
  var sources = { announcement: "announcement", sync_plus: "Sync+ mailbox" };
  function text(value) { return value === null || value === undefined ? "" : String(value); }
  function figure(value) { return typeof value === "number" ? String(value) : "unknown"; }
  function when(seconds) {
    if (typeof seconds !== "number") return "";
    return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }
  function cell(row, value, className) {
    var td = document.createElement("td");
    td.textContent = text(value);
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }
  function measured(entry) {
    var at = when(entry.measured_at);
    if (entry.pending === true) return at ? at + " (measuring again)" : "measuring…";
    return at || "not yet";
  }
  function sourceOf(relay) {
    var known = Object.prototype.hasOwnProperty.call(sources, relay.source);
    return known ? sources[relay.source] : text(relay.source);
  }
  function relayRow(relay) {
    var tr = document.createElement("tr");
    tr.className = relay.complete === true ? "complete"
      : relay.complete === false ? "incomplete" : "unknown";
    cell(tr, relay.url);
    cell(tr, sourceOf(relay));
    cell(tr, figure(relay.only_there), "num");
    cell(tr, figure(relay.only_here), "num");
    cell(tr, measured(relay), relay.pending === true ? "pending" : "");
    cell(tr, relay.reason, "reason");
    return tr;
  }
  function short(oid) { return text(oid).slice(0, 12); }
  function refText(ref) {
    if (ref.status === "differs") return "differs: has " + short(ref.have) + ", state " + short(ref.want);
    if (ref.status === "missing") return "missing: state " + short(ref.want);
    return text(ref.status);
  }
  function refsCell(tr, server) {
    var td = cell(tr, server.reason, "reason");
    var refs = Array.isArray(server.refs) ? server.refs : [];
    if (refs.length === 0) return;
    var list = document.createElement("ul");
    refs.forEach(function (ref) {
      var li = document.createElement("li");
      ref = ref || {};
      li.textContent = text(ref.ref) + " " + refText(ref);
      if (ref.status === "current" || ref.status === "differs" || ref.status === "missing")
        li.className = ref.status;
      list.appendChild(li);
    });
    td.appendChild(list);
  }
  function serverRow(server) {
    var tr = document.createElement("tr");
    var current = server.current === true ? "current" : server.current === false ? "differs"
      : server.pending === true ? "pending" : "unknown";
    cell(tr, text(server.url) + (server.self === true ? " (this server)" : ""));
    cell(tr, server.current === true ? "yes" : server.current === false ? "no"
      : server.pending === true ? "measuring…" : "unknown", current);
    refsCell(tr, server);
    return tr;
  }
  function fill(id, rows) {
    var table = document.getElementById(id);
    table.tBodies[0].replaceChildren.apply(table.tBodies[0], rows);
    table.hidden = rows.length === 0;
  }
  function describe(doc, pending) {
    var s = doc.summary || {};
    var line = figure(s.relays_complete) + "/" + figure(s.relays) + " relays complete, " +
      figure(s.servers_current) + "/" + figure(s.servers) + " servers current";
    if (typeof s.measured_at === "number") line += "; measured " + when(s.measured_at);
    var state = doc.state;
    line += state && typeof state.id === "string"
      ? "; state event " + short(state.id) + " of " + when(state.created_at)
      : "; no state event";
    if (pending) line += fetches < maxFetches ? "; measuring…" : "; still measuring, reload later";
    return line + ".";
  }
  function entries(list) {
    return (Array.isArray(list) ? list : []).map(function (e) { return e || {}; });
  }
  function render(doc) {
    var relays = entries(doc.relays), servers = entries(doc.servers);
    fill("replication-relays", relays.map(relayRow));
    fill("replication-servers", servers.map(serverRow));
    var pending = relays.concat(servers).some(function (e) { return e.pending === true; });
    summary.textContent = describe(doc, pending);
    return pending;
  }
  function load() {
    fetches += 1;
    fetch(src, { cache: "no-store" })
      .then(function (r) {
        if (r.status === 404) throw new Error("no announcement of this repository is stored here");
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (doc) {
        if (!doc || typeof doc !== "object") throw new Error("not a replication document");
        if (render(doc) && fetches < maxFetches) setTimeout(load, refetchMs);
      })
      .catch(function (e) {
        summary.textContent = "No replication view: " + text(e && e.message) + ".";
      });
  }
  summary.textContent = "Loading…";
  load();
})();
