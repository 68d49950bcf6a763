/* Live audit feed: follows ws/teams/<id>/feed/ and prepends each new event's row, rendered by the server
   (GET /audit/<id>/row/, which checks access again), so live rows look exactly like listed ones. */
(function () {
  "use strict";

  var MAX_DELAY = 30000;

  function start(panel) {
    var teamId = panel.dataset.liveTeam;
    var rows = document.getElementById(panel.dataset.rows);
    var status = panel.querySelector("[data-live-status]");
    var rowUrl = panel.dataset.rowUrl; /* ends in /0/row/ */
    var delay = 1000;
    var scheme = window.location.protocol === "https:" ? "wss" : "ws";
    var url = scheme + "://" + window.location.host + "/ws/teams/" + teamId + "/feed/";

    function setStatus(state, text) {
      status.classList.remove("connected", "offline");
      status.classList.add(state);
      status.textContent = text;
    }

    function prepend(event) {
      if (!rows || document.querySelector('[data-event-id="' + event.id + '"]')) return;
      var empty = rows.querySelector(".empty-row");
      fetch(rowUrl.replace("/0/row/", "/" + event.id + "/row/"), {credentials: "same-origin"})
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (!html || document.querySelector('[data-event-id="' + event.id + '"]')) return;
          if (empty) empty.remove();
          rows.insertAdjacentHTML("afterbegin", html);
          if (window.htmx) window.htmx.process(rows.firstElementChild);
        });
    }

    function connect() {
      var socket = new WebSocket(url);
      socket.onopen = function () { delay = 1000; setStatus("connected", "Live"); };
      socket.onmessage = function (message) {
        var data = JSON.parse(message.data);
        if (data.type === "audit.event" && data.event) prepend(data.event);
      };
      socket.onclose = function (event) {
        if (event.code === 4401 || event.code === 4404) { setStatus("offline", "Live feed unavailable"); return; }
        setStatus("offline", "Reconnecting…");
        setTimeout(connect, delay);
        delay = Math.min(delay * 2, MAX_DELAY);
      };
    }

    connect();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live-team]").forEach(start);
  });
})();
