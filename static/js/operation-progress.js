/* Live operations. Every progress panel / log panel on a page ([data-operation-progress], [data-operation-log],
   templates/operations/components/) follows ws/operations/<id>/ — one socket per operation — and applies its
   snapshot, operation, log and end frames; a dropped socket reconnects with the last log seq it has, so no line is
   missed or shown twice. The operations list ([data-operation-feed]) follows the team feeds and updates its rows,
   fetching rows of new operations from the server (GET /operations/<id>/row/) so they look like listed ones.
   The templates are the one source of markup: this script only changes text, classes and visibility, formatting
   values the way operations/templatetags/progress.py does. */
(function () {
  "use strict";

  var MAX_DELAY = 30000;
  var LABELS = {
    pending: "Pending", running: "Running", succeeded: "Succeeded", failed: "Failed", cancelling: "Cancelling",
    cancelled: "Cancelled", undoing: "Undoing", compensated: "Undone", submit: "Submit", poll: "Poll"
  };
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  var FINISHED = ["succeeded", "cancelled"];

  function label(value) { return LABELS[value] || value; }
  function pad(number) { return (number < 10 ? "0" : "") + number; }
  function clock(date) { return pad(date.getUTCHours()) + ":" + pad(date.getUTCMinutes()) + ":" + pad(date.getUTCSeconds()); }
  function stamp(date) { return MONTHS[date.getUTCMonth()] + " " + date.getUTCDate() + ", " + clock(date); }

  function duration(seconds) {
    if (seconds < 10) return seconds.toFixed(1) + " s";
    var whole = Math.floor(seconds);
    if (whole < 60) return whole + " s";
    if (whole < 3600) return Math.floor(whole / 60) + " min " + pad(whole % 60) + " s";
    return Math.floor(whole / 3600) + " h " + pad(Math.floor((whole % 3600) / 60)) + " min";
  }

  function referenceValue(value) {
    if (Array.isArray(value)) return value.map(scalarOrJson).join(", ");
    return scalarOrJson(value);
  }

  function scalarOrJson(value) {
    return value !== null && typeof value === "object" ? JSON.stringify(value) : String(value);
  }

  function each(root, selector, fn) { Array.prototype.forEach.call(root.querySelectorAll(selector), fn); }
  function setField(root, name, value) { each(root, '[data-field="' + name + '"]', function (el) { el.textContent = value; }); }
  function setOpField(root, name, value) { each(root, '[data-op-field="' + name + '"]', function (el) { el.textContent = value; }); }
  function show(el, visible) { if (el) el.hidden = !visible; }

  function swapClass(el, prefix, value) {
    if (!el) return;
    Array.prototype.slice.call(el.classList).forEach(function (name) {
      if (name.indexOf(prefix) === 0) el.classList.remove(name);
    });
    el.classList.add(prefix + value);
  }

  function timeHtml(el, iso) {
    el.textContent = "";
    if (!iso) { el.textContent = "—"; return; }
    var time = document.createElement("time");
    time.setAttribute("datetime", iso);
    time.textContent = stamp(new Date(iso));
    el.appendChild(time);
  }

  function newer(el, operation) {
    /* Ignore a change older than the one shown (the team feed may deliver it late). */
    var shown = el.dataset.updatedAt;
    if (shown && operation.updated_at && Date.parse(operation.updated_at) < Date.parse(shown)) return false;
    if (operation.updated_at) el.dataset.updatedAt = operation.updated_at;
    return true;
  }

  function socketUrl(path) {
    return (window.location.protocol === "https:" ? "wss" : "ws") + "://" + window.location.host + path;
  }

  function setStatus(badges, state, text) {
    badges.forEach(function (badge) {
      badge.classList.remove("connected", "offline");
      badge.classList.add(state);
      badge.textContent = text;
    });
  }

  /* ---------- the progress panel ---------- */

  function refreshDuration(item) {
    var started = item.dataset.started;
    var cell = item.querySelector('[data-field="duration"]');
    if (!cell) return;
    if (!started) { cell.textContent = "—"; return; }
    var finished = item.dataset.finished;
    var end = finished && Date.parse(finished) >= Date.parse(started) ? Date.parse(finished) : Date.now();
    cell.textContent = duration(Math.max(0, (end - Date.parse(started)) / 1000));
  }

  function applyPhase(item, phase) {
    swapClass(item, "phase-", phase.state);
    var badge = item.querySelector('[data-field="state"]');
    swapClass(badge, "badge-phase-", phase.state);
    setField(item, "state", label(phase.state));
    setField(item, "step", label(phase.step));
    setField(item, "attempts", phase.attempts);
    setField(item, "polls", phase.polls);
    item.dataset.started = phase.started_at || "";
    item.dataset.finished = phase.finished_at || "";
    each(item, '[data-field="started_at"]', function (el) { timeHtml(el, phase.started_at); });
    each(item, '[data-field="finished_at"]', function (el) { timeHtml(el, phase.finished_at); });
    refreshDuration(item);

    setField(item, "status_reason", phase.status_reason || "");
    show(item.querySelector('[data-block="status_reason"]'), !!phase.status_reason);

    var detail = phase.error_detail || {};
    setField(item, "error_message", phase.error_message || "");
    setField(item, "error_code", phase.error_code || "");
    show(item.querySelector('[data-block="error"]'), !!(phase.error_code || phase.error_message));
    setField(item, "provider_code", detail.code || "");
    setField(item, "provider_message", detail.message || "");
    setField(item, "request_id", detail.request_id || "");
    show(item.querySelector('[data-block="provider"]'), !!detail.code);
    show(item.querySelector('[data-block="request_id"]'), !!detail.request_id);

    var reference = item.querySelector('[data-field="reference"]');
    if (reference) {
      /* The status recorded at submit is superseded by the phase's newer provider status (progress.py's
         phase_reference). */
      var keys = Object.keys(phase.reference || {}).sort().filter(function (key) {
        return !(key === "status" && phase.status_reason);
      });
      reference.textContent = "";
      keys.forEach(function (key) {
        var dt = document.createElement("dt");
        var dd = document.createElement("dd");
        dt.textContent = key;
        dd.className = "mono";
        dd.textContent = referenceValue(phase.reference[key]);
        reference.appendChild(dt);
        reference.appendChild(dd);
      });
      show(reference, keys.length > 0);
    }
  }

  function applyOperation(panel, operation) {
    if (!newer(panel, operation)) return;
    panel.dataset.state = operation.state;
    each(panel, '[data-op-field="state"]', function (badge) { swapClass(badge, "badge-op-", operation.state); });
    setOpField(panel, "state", label(operation.state));
    setOpField(panel, "status_reason", operation.status_reason || "");
    setOpField(panel, "attempt", operation.attempt);
    setOpField(panel, "error_message", operation.error_message || "");
    setOpField(panel, "error_code", operation.error_code || "");
    show(panel.querySelector('[data-op-block="error"]'), !!(operation.error_code || operation.error_message));
    each(panel, "[data-show-in]", function (form) {
      show(form, form.dataset.showIn.split(" ").indexOf(operation.state) >= 0);
    });
    (operation.phases || []).forEach(function (phase) {
      var item = panel.querySelector('li.phase[data-phase="' + phase.slug + '"]');
      if (item) applyPhase(item, phase);
    });
  }

  /* ---------- the log panel ---------- */

  function appendLines(panel, lines) {
    var list = panel.querySelector("[data-log-lines]");
    var last = parseInt(panel.dataset.lastSeq || "0", 10);
    var atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 24;
    lines.forEach(function (line) {
      if (line.seq <= last) return;
      var item = document.createElement("li");
      item.className = "log-line log-" + line.level;
      item.dataset.seq = line.seq;
      var parts = [["log-seq", String(line.seq)], ["log-time", clock(new Date(line.created_at))],
                   ["log-phase", line.phase || ""], ["log-message", line.message]];
      parts.forEach(function (part) {
        var el = document.createElement(part[0] === "log-time" ? "time" : "span");
        el.className = part[0];
        el.textContent = part[1];
        if (part[0] === "log-time") el.setAttribute("datetime", line.created_at);
        item.appendChild(el);
      });
      list.appendChild(item);
      last = line.seq;
    });
    panel.dataset.lastSeq = String(last);
    show(panel.querySelector("[data-log-empty]"), !list.children.length);
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  /* ---------- one socket per operation ---------- */

  function follow(operationId, progressPanels, logPanels) {
    var badges = [];
    progressPanels.forEach(function (panel) { each(panel, "[data-live-status]", function (b) { badges.push(b); }); });
    var lastSeq = 0;
    logPanels.forEach(function (panel) { lastSeq = Math.max(lastSeq, parseInt(panel.dataset.lastSeq || "0", 10)); });
    var delay = 1000;

    function connect() {
      var socket = new WebSocket(socketUrl("/ws/operations/" + operationId + "/?after_seq=" + lastSeq));
      socket.onopen = function () { delay = 1000; setStatus(badges, "connected", "Live"); };
      socket.onmessage = function (message) {
        var frame = JSON.parse(message.data);
        if (frame.type === "snapshot" || frame.type === "operation") {
          progressPanels.forEach(function (panel) { applyOperation(panel, frame.operation); });
        } else if (frame.type === "log") {
          logPanels.forEach(function (panel) { appendLines(panel, frame.lines); });
          frame.lines.forEach(function (line) { lastSeq = Math.max(lastSeq, line.seq); });
        } else if (frame.type === "end") {
          lastSeq = Math.max(lastSeq, frame.last_seq);
          progressPanels.forEach(function (panel) { panel.dataset.ended = frame.state; });
        }
      };
      socket.onclose = function (event) {
        if (event.code === 4401 || event.code === 4404) { setStatus(badges, "offline", "Live updates unavailable"); return; }
        if (event.code === 4403) { setStatus(badges, "offline", "Access ended"); return; }
        setStatus(badges, "offline", "Reconnecting…");
        setTimeout(connect, delay);
        delay = Math.min(delay * 2, MAX_DELAY);
      };
    }

    connect();
  }

  /* ---------- the operations list ---------- */

  function progressText(operation) {
    var phases = operation.phases || [];
    var done = phases.filter(function (phase) { return phase.state === "succeeded"; }).length;
    var current = phases.filter(function (phase) { return phase.slug === operation.phase; })[0];
    var text = done + "/" + phases.length + " phases";
    if (current && FINISHED.indexOf(operation.state) < 0) text += " · " + current.title;
    return text;
  }

  function applyRow(row, operation) {
    if (!newer(row, operation)) return;
    each(row, '[data-op-field="state"]', function (badge) { swapClass(badge, "badge-op-", operation.state); });
    setOpField(row, "state", label(operation.state));
    setOpField(row, "progress", progressText(operation));
    (operation.phases || []).forEach(function (phase) {
      each(row, '.seg[data-phase="' + phase.slug + '"]', function (segment) {
        swapClass(segment, "seg-", phase.state);
        segment.title = phase.title + ": " + label(phase.state);
      });
    });
  }

  function followTeams(feed) {
    var rows = document.getElementById(feed.dataset.rows);
    var rowUrl = feed.dataset.rowUrl; /* ends in /0/row/ */
    var prepend = feed.dataset.prepend === "true";
    var badges = Array.prototype.slice.call(feed.querySelectorAll("[data-live-status]"));
    var fetching = {};

    function onOperation(operation) {
      var row = rows.querySelector('[data-operation-row="' + operation.id + '"]');
      if (row) { applyRow(row, operation); return; }
      if (!prepend) return;
      if (operation.id in fetching) { fetching[operation.id] = operation; return; }
      fetching[operation.id] = operation;
      fetch(rowUrl.replace("/0/row/", "/" + operation.id + "/row/"), {credentials: "same-origin"})
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          var latest = fetching[operation.id];
          delete fetching[operation.id];
          if (!html || rows.querySelector('[data-operation-row="' + operation.id + '"]')) return;
          var empty = rows.querySelector(".empty-row");
          if (empty) empty.remove();
          rows.insertAdjacentHTML("afterbegin", html);
          applyRow(rows.firstElementChild, latest);
        });
    }

    feed.dataset.liveTeams.split(",").filter(Boolean).forEach(function (teamId) {
      var delay = 1000;
      function connect() {
        var socket = new WebSocket(socketUrl("/ws/teams/" + teamId + "/feed/"));
        socket.onopen = function () { delay = 1000; setStatus(badges, "connected", "Live"); };
        socket.onmessage = function (message) {
          var frame = JSON.parse(message.data);
          if (frame.type === "operation" && frame.operation) onOperation(frame.operation);
        };
        socket.onclose = function (event) {
          if (event.code === 4401 || event.code === 4404 || event.code === 4403) return;
          setStatus(badges, "offline", "Reconnecting…");
          setTimeout(connect, delay);
          delay = Math.min(delay * 2, MAX_DELAY);
        };
      }
      connect();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var ids = [];
    each(document, "[data-operation-progress], [data-operation-log]", function (el) {
      var id = el.dataset.operationProgress || el.dataset.operationLog;
      if (ids.indexOf(id) < 0) ids.push(id);
    });
    ids.forEach(function (id) {
      follow(id, Array.prototype.slice.call(document.querySelectorAll('[data-operation-progress="' + id + '"]')),
             Array.prototype.slice.call(document.querySelectorAll('[data-operation-log="' + id + '"]')));
    });
    each(document, "[data-operation-feed]", followTeams);
    setInterval(function () {
      each(document, "li.phase[data-started]", function (item) {
        if (item.dataset.started && !item.dataset.finished) refreshDuration(item);
      });
    }, 1000);
  });
})();
