// Live action page: long-polls Shipyard's /ui/actions/{id}/live (the same wait-for-a-change
// as GET /api/v1.0/actions/{id}?since=V&wait=S) and swaps in the server-rendered section,
// keeping open "details" open. Stops once the action has ended. No reload, no other origin.
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box || !box.dataset.live) { return; }
  var url = box.dataset.live, version = box.dataset.version || "", failures = 0;
  var status = document.getElementById("live-status");

  function say(text) { if (status) { status.textContent = text; } }

  function openDetails() {
    var open = [];
    box.querySelectorAll("details[id]").forEach(function (d) { if (d.open) { open.push(d.id); } });
    return open;
  }

  function swap(html) {
    var open = openDetails(), focused = document.activeElement && document.activeElement.id;
    box.innerHTML = html;
    open.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
    if (focused) { var f = document.getElementById(focused); if (f) { f.focus(); } }
  }

  function next(delay) { window.setTimeout(look, delay); }

  function look() {
    var query = "?wait=15" + (version ? "&since=" + encodeURIComponent(version) : "");
    fetch(url + query, {credentials: "same-origin", cache: "no-store",
                        headers: {"Accept": "text/html"}})
      .then(function (resp) {
        if (resp.status === 401) { say("Signed out: reload to sign in again."); return null; }
        if (!resp.ok) { throw new Error("HTTP " + resp.status); }
        var seen = resp.headers.get("X-Action-Version");
        return resp.text().then(function (html) { return {seen: seen, html: html}; });
      })
      .then(function (got) {
        if (got === null) { return; }
        failures = 0;
        if (got.seen !== version) { swap(got.html); version = got.seen || ""; }
        say("Live: updated " + new Date().toLocaleTimeString());
        if (box.querySelector("[data-ended]")) { say("The action has ended."); return; }
        next(got.seen === null ? 2000 : 200);
      })
      .catch(function (err) {
        failures += 1;
        say("Live updates paused (" + err.message + "); retrying");
        next(Math.min(30000, 1000 * failures));
      });
  }

  if (!box.querySelector("[data-ended]")) { next(0); }
}());
