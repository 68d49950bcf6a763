/* Live clusters pages (templates/clusters/list.html, detail.html). The [data-cluster-feed] badge names the team
   feeds to follow (ws/teams/<id>/feed/) and the operation kinds / audit actions that concern the page
   (data-kinds="cluster. storage."). When one arrives, the page is fetched again and every [data-live-region] is
   replaced by its new rendering — the server's templates stay the one source of markup. Changes come in bursts
   (one frame per phase step), so refreshes are coalesced: at most one request in flight, one more queued.
   If the fetched page follows another operation than this one (a delete or retry started elsewhere), the page
   reloads so its progress panel follows the new one. A region with an open dialog waits until the dialog closes. */
(function () {
  "use strict";

  var MAX_DELAY = 30000;
  var SETTLE_MS = 250;

  function socketUrl(path) {
    return (window.location.protocol === "https:" ? "wss" : "ws") + "://" + window.location.host + path;
  }

  function progressId(root) {
    var panel = root.querySelector("[data-operation-progress]");
    return panel ? panel.dataset.operationProgress : "";
  }

  function start(feed) {
    var kinds = (feed.dataset.kinds || "").split(" ").filter(Boolean);
    var inFlight = false;
    var queued = false;
    var timer = null;

    function concerns(name) {
      return !!name && kinds.some(function (prefix) { return name.indexOf(prefix) === 0; });
    }

    function setStatus(state, text) {
      feed.classList.remove("connected", "offline");
      feed.classList.add(state);
      feed.textContent = text;
    }

    function swap(html) {
      var fresh = new DOMParser().parseFromString(html, "text/html");
      if (progressId(fresh) !== progressId(document)) { window.location.reload(); return; }
      Array.prototype.forEach.call(document.querySelectorAll("[data-live-region][id]"), function (region) {
        var replacement = fresh.getElementById(region.id);
        if (!replacement) return;
        var open = region.querySelector("dialog[open]");
        if (open) { refreshWhenClosed(open); return; }
        var node = document.importNode(replacement, true);
        region.replaceWith(node);
        if (window.htmx) window.htmx.process(node);
      });
    }

    /* A region holding an open dialog (a group's Change…) is left as it is — replacing it would close the dialog
       and drop what the user typed — and the page is read again once the dialog closes. */
    function refreshWhenClosed(dialog) {
      if (dialog.dataset.refreshOnClose) return;
      dialog.dataset.refreshOnClose = "1";
      dialog.addEventListener("close", function () {
        delete dialog.dataset.refreshOnClose;
        schedule();
      }, {once: true});
    }

    function refresh() {
      timer = null;
      if (inFlight) { queued = true; return; }
      inFlight = true;
      fetch(window.location.href, {credentials: "same-origin", headers: {"X-Live-Refresh": "1"}})
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) { if (html) swap(html); })
        .finally(function () {
          inFlight = false;
          if (queued) { queued = false; schedule(); }
        });
    }

    function schedule() {
      if (timer === null) timer = setTimeout(refresh, SETTLE_MS);
    }

    feed.dataset.liveTeams.split(",").filter(Boolean).forEach(function (teamId) {
      var delay = 1000;
      function connect() {
        var socket = new WebSocket(socketUrl("/ws/teams/" + teamId + "/feed/"));
        socket.onopen = function () { delay = 1000; setStatus("connected", "Live"); };
        socket.onmessage = function (message) {
          var frame = JSON.parse(message.data);
          if (frame.type === "operation" && frame.operation && concerns(frame.operation.kind)) schedule();
          else if (frame.type === "audit.event" && frame.event && concerns(frame.event.action)) schedule();
        };
        socket.onclose = function (event) {
          if (event.code === 4401 || event.code === 4404 || event.code === 4403) {
            setStatus("offline", "Live updates unavailable");
            return;
          }
          setStatus("offline", "Reconnecting…");
          setTimeout(connect, delay);
          delay = Math.min(delay * 2, MAX_DELAY);
        };
      }
      connect();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-cluster-feed]"), start);
  });
})();
