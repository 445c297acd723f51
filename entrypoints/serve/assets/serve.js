// li serve: the page's only script (the CSP allows no other). Live updates by server-sent events
// (EventSource): the board's lines move between groups as runs change; a run's console grows.
// Run output is only ever set as text (textContent), or as lines the server rendered escaped.
"use strict";

(function () {
  const body = document.body;
  const live = body.dataset.live;
  const state = document.getElementById("live-state");
  const keep = parseInt(body.dataset.keep || "200000", 10);

  function say(text) { if (state) state.textContent = text; }

  function elapsed(seconds) {
    if (!(seconds >= 0)) return "";
    const s = Math.floor(seconds), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    const two = (n) => String(n).padStart(2, "0");
    if (h) return h + "h " + two(m) + "m";
    return m ? m + "m " + two(r) + "s" : r + "s";
  }

  function tick() {
    for (const node of document.querySelectorAll(".elapsed[data-since]")) {
      const since = Date.parse(node.dataset.since);
      if (!isNaN(since)) node.textContent = elapsed((Date.now() - since) / 1000);
    }
  }

  function recount() {
    for (const group of document.querySelectorAll("section.group")) {
      const count = group.querySelector(".count");
      if (count) count.textContent = String(group.querySelectorAll("li.run").length);
    }
  }

  function placeRow(data) {
    const old = document.getElementById("run-" + data.id);
    if (old) old.remove();
    if (data.group && data.html) {
      const list = document.querySelector("#group-" + data.group + " ul.runs");
      if (list) {
        const template = document.createElement("template");
        template.innerHTML = data.html;  // rendered by the server, every run value escaped
        const row = template.content.firstElementChild;
        let before = null;
        for (const sibling of list.children) {
          if (sibling.dataset.id < data.id) { before = sibling; break; }
        }
        list.insertBefore(row, before);
      }
    }
    recount();
  }

  function followBoard() {
    const source = new EventSource(live);
    source.addEventListener("open", () => say("live"));
    source.addEventListener("error", () => say("reconnecting…"));
    source.addEventListener("row", (event) => placeRow(JSON.parse(event.data)));
    source.addEventListener("sync", (event) => {
      const keep = new Set(JSON.parse(event.data).ids);
      for (const row of document.querySelectorAll("li.run")) if (!keep.has(row.dataset.id)) row.remove();
      recount();
    });
    setInterval(tick, 1000);
  }

  function followRun() {
    const pre = document.getElementById("console");
    if (!pre) return;
    const cut = document.getElementById("console-cut");
    let from = parseInt(pre.dataset.from || "0", 10);
    let text = "";
    let dropped = from > 0;
    let source = null;
    function show() {
      if (text.length > keep) { text = text.slice(text.length - keep); dropped = true; }
      pre.textContent = text;
      if (dropped && cut) {
        cut.hidden = false;
        cut.textContent = "Earlier output is not shown: the page keeps the last " + keep + " characters.";
      }
    }
    function open() {
      source = new EventSource(live + "?from=" + from);
      source.addEventListener("open", () => say("live"));
      source.addEventListener("console", (event) => {
        const data = JSON.parse(event.data);
        text += data.text;
        from = data.end;
        show();
      });
      source.addEventListener("end", (event) => {
        const data = JSON.parse(event.data);
        for (const name of ["status", "terminal", "outcome", "reason_code"]) {
          const cell = document.getElementById("f-" + name);
          if (cell) {
            const value = data[name];
            const shown = document.createElement(value === null ? "span" : "code");
            if (value === null) shown.className = "null";
            shown.textContent = value === null ? "null" : String(value);
            cell.replaceChildren(shown);
          }
          const top = document.getElementById("sum-" + name);
          if (top && data[name] !== null) top.textContent = String(data[name]);
        }
        say(data.why === "ended" ? "ended: " + data.status : "stopped: " + data.why);
        document.body.classList.add("ended");
        source.close();
      });
      source.addEventListener("gone", (event) => { say(JSON.parse(event.data).message); source.close(); });
      source.addEventListener("error", () => {
        // reconnect from what was shown, not from the first offset (EventSource would repeat it)
        source.close();
        say("reconnecting…");
        setTimeout(open, 1000);
      });
    }
    open();
  }

  if (!live) return;
  if (live.startsWith("/events")) followBoard(); else followRun();
})();
