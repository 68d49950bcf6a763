/* A training job's live log ([data-training-log], templates/training/jobs/_log.html).

   Follows ws/training-jobs/<id>/logs/?after_seq=N[&rank=R] (training/consumers.py) and renders its frames in seq
   order, each line once:
   - "lines": appended, skipping any seq not above the last one rendered (so a replay never duplicates);
   - "gap" {from_seq, to_seq}: later frames wait while the missing range is read from the REST log endpoint
     (GET /api/v1/training-jobs/<id>/logs?after_seq=&limit=1000[&rank=], page after page), then go on;
   - "end" {state, last_seq}: shows "Ended"; no reconnection after it.
   A dropped socket reconnects with capped exponential backoff and the last seq rendered. The last seq and the last
   STORED_LINES lines are kept in sessionStorage per job, so a reload shows them again and resumes after that seq:
   nothing is lost or shown twice. A fresh view starts from the REST tail (the last 1000 lines). The DOM keeps the
   last data-window lines; older ones are dropped with a note pointing at the download link. The rank select
   restarts the view for one rank (rank=R); the follow toggle keeps the newest line in sight. */
(function () {
  "use strict";

  var PAGE = 1000;
  var STORED_LINES = 1000;
  var MAX_DELAY = 30000;
  var FATAL = { 4400: "Bad request", 4401: "Signed out", 4403: "Access ended", 4404: "Not found" };

  function socketUrl(path) {
    return (window.location.protocol === "https:" ? "wss" : "ws") + "://" + window.location.host + path;
  }

  function LogView(root) {
    this.root = root;
    this.job = root.dataset.job;
    this.window = parseInt(root.dataset.window, 10) || 5000;
    this.list = root.querySelector("[data-log-lines]");
    this.empty = root.querySelector("[data-log-empty]");
    this.trimmed = root.querySelector("[data-log-trimmed]");
    this.status = root.querySelector("[data-log-status]");
    this.rankSelect = root.querySelector("[data-log-rank]");
    this.follow = root.querySelector("[data-log-follow]");
    this.download = root.querySelector("[data-log-download]");
    this.key = "training-log:" + this.job;
    this.generation = 0;
    this.socket = null;
    this.attempt = 0;
    this.timer = null;
    this.saveTimer = null;
    this.recent = [];
    this.lastSeq = 0;
    this.ended = false;
    this.chain = Promise.resolve();
  }

  LogView.prototype.rank = function () { return this.rankSelect ? this.rankSelect.value : ""; };

  LogView.prototype.setStatus = function (state, text) {
    if (!this.status) return;
    this.status.classList.remove("connected", "offline");
    if (state) this.status.classList.add(state);
    this.status.textContent = text;
  };

  /* ---------- rendering ---------- */

  LogView.prototype.render = function (lines, upTo) {
    var fragment = document.createDocumentFragment();
    var added = 0;
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      if (line.seq <= this.lastSeq || (upTo !== undefined && line.seq > upTo)) continue;
      var item = document.createElement("li");
      item.className = "log-line";
      item.dataset.seq = line.seq;
      item.title = line.pod + " · " + line.at;
      var seq = document.createElement("span");
      seq.className = "log-seq";
      seq.textContent = line.seq;
      var rank = document.createElement("span");
      rank.className = "log-phase";
      rank.textContent = "rank " + line.rank;
      var text = document.createElement("span");
      text.className = "log-message";
      text.textContent = line.text;
      item.appendChild(seq);
      item.appendChild(rank);
      item.appendChild(text);
      fragment.appendChild(item);
      this.lastSeq = line.seq;
      this.recent.push(line);
      this.offerRank(line.rank);
      added++;
    }
    if (!added) return;
    this.list.appendChild(fragment);
    if (this.recent.length > STORED_LINES) this.recent.splice(0, this.recent.length - STORED_LINES);
    var extra = this.list.children.length - this.window;
    for (; extra > 0; extra--) this.list.removeChild(this.list.firstChild);
    if (this.list.children.length >= this.window) this.trimmed.hidden = false;
    if (this.empty) this.empty.hidden = true;
    if (this.follow && this.follow.checked) this.list.scrollTop = this.list.scrollHeight;
    this.scheduleSave();
  };

  LogView.prototype.offerRank = function (rank) {
    /* Ranks that appear after the page was rendered join the rank select. */
    if (!this.rankSelect || this.rankSelect.querySelector('option[value="' + rank + '"]')) return;
    var option = new Option("Rank " + rank, String(rank));
    var after = Array.prototype.find.call(this.rankSelect.options, function (o) {
      return o.value !== "" && parseInt(o.value, 10) > rank;
    });
    this.rankSelect.add(option, after || null);
  };

  LogView.prototype.clear = function () {
    this.list.textContent = "";
    this.recent = [];
    this.lastSeq = 0;
    this.ended = false;
    this.trimmed.hidden = true;
    if (this.empty) this.empty.hidden = false;
  };

  /* ---------- sessionStorage: survive a reload ---------- */

  LogView.prototype.scheduleSave = function () {
    var view = this;
    if (this.saveTimer) return;
    this.saveTimer = setTimeout(function () { view.saveTimer = null; view.save(); }, 250);
  };

  LogView.prototype.save = function () {
    try {
      sessionStorage.setItem(this.key, JSON.stringify({
        rank: this.rank(), lastSeq: this.lastSeq, lines: this.recent, ended: this.ended,
        trimmed: !this.trimmed.hidden
      }));
    } catch (error) { /* storage full or off: a reload then starts from the tail */ }
  };

  LogView.prototype.restore = function () {
    var saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(this.key) || "null"); } catch (error) { saved = null; }
    if (!saved || typeof saved.lastSeq !== "number") return false;
    if (this.rankSelect) {
      var known = Array.prototype.some.call(this.rankSelect.options, function (o) { return o.value === saved.rank; });
      if (!known) return false;
      this.rankSelect.value = saved.rank;
    }
    this.render(saved.lines || []);
    this.lastSeq = Math.max(this.lastSeq, saved.lastSeq);
    if (saved.trimmed) this.trimmed.hidden = false;
    return true;
  };

  /* ---------- REST ---------- */

  LogView.prototype.page = function (afterSeq, extra) {
    var params = new URLSearchParams(extra || {});
    if (afterSeq !== null) params.set("after_seq", afterSeq);
    if (this.rank() !== "") params.set("rank", this.rank());
    return fetch(this.root.dataset.api + "?" + params.toString(), {
      credentials: "same-origin", headers: { "Accept": "application/json" }
    }).then(function (response) {
      if (!response.ok) throw new Error("log page " + response.status);
      return response.json();
    });
  };

  LogView.prototype.fillGap = function (fromSeq, toSeq, generation) {
    /* Read fromSeq..toSeq page by page and render it before the frames that follow. */
    var view = this;
    function next(after) {
      if (generation !== view.generation || after >= toSeq) return Promise.resolve();
      return view.page(after, { limit: PAGE }).then(function (body) {
        if (generation !== view.generation) return;
        view.render(body.lines, toSeq);
        if (!body.lines.length || body.next_seq <= after) return;
        return next(body.next_seq);
      });
    }
    return next(Math.max(fromSeq - 1, this.lastSeq)).then(function () {
      if (generation === view.generation) view.lastSeq = Math.max(view.lastSeq, toSeq);
    });
  };

  LogView.prototype.tail = function (generation) {
    var view = this;
    return this.page(null, { tail: PAGE }).then(function (body) {
      if (generation !== view.generation) return;
      if (body.lines.length && body.lines[0].seq > 1) view.trimmed.hidden = false;
      view.render(body.lines);
    });
  };

  /* ---------- the socket ---------- */

  LogView.prototype.handle = function (frame, generation) {
    if (generation !== this.generation) return Promise.resolve();
    if (frame.type === "lines") {
      this.render(frame.lines);
    } else if (frame.type === "gap") {
      return this.fillGap(frame.from_seq, frame.to_seq, generation);
    } else if (frame.type === "end") {
      this.ended = true;
      this.lastSeq = Math.max(this.lastSeq, frame.last_seq || 0);
      this.setStatus("offline", "Ended · " + frame.state);
      this.root.dataset.ended = frame.state;
      this.save();
    }
    return Promise.resolve();
  };

  LogView.prototype.connect = function () {
    var view = this;
    var generation = this.generation;
    var path = this.root.dataset.socket + "?after_seq=" + this.lastSeq;
    if (this.rank() !== "") path += "&rank=" + encodeURIComponent(this.rank());
    var socket = new WebSocket(socketUrl(path));
    this.socket = socket;
    socket.onopen = function () {
      if (generation !== view.generation) return;
      view.attempt = 0;
      view.setStatus("connected", "Live");
    };
    socket.onmessage = function (event) {
      var frame;
      try { frame = JSON.parse(event.data); } catch (error) { return; }
      view.chain = view.chain.then(function () { return view.handle(frame, generation); }).catch(function () {
        /* A gap that could not be read: reconnect from the last seq rendered, which replays it. */
        if (generation === view.generation) view.restart();
      });
    };
    socket.onclose = function (event) {
      if (generation !== view.generation) return;
      view.socket = null;
      view.chain.then(function () {
        if (generation !== view.generation || view.ended) return;
        if (FATAL[event.code]) { view.setStatus("offline", FATAL[event.code]); return; }
        view.retry();
      });
    };
  };

  LogView.prototype.retry = function () {
    var view = this;
    var delay = Math.min(MAX_DELAY, 500 * Math.pow(2, this.attempt)) * (0.75 + Math.random() * 0.5);
    this.attempt++;
    this.setStatus("offline", "Reconnecting…");
    this.timer = setTimeout(function () { view.timer = null; view.connect(); }, delay);
  };

  LogView.prototype.stop = function () {
    this.generation++;
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
    if (this.socket) { this.socket.onclose = null; this.socket.close(); this.socket = null; }
    this.chain = Promise.resolve();
  };

  LogView.prototype.restart = function () {
    this.stop();
    this.connect();
  };

  LogView.prototype.start = function (fresh) {
    var view = this;
    this.stop();
    var generation = this.generation;
    this.updateDownload();
    if (fresh) {
      this.clear();
      this.save();
      this.tail(generation).catch(function () { /* the socket replays from 0 instead */ }).then(function () {
        if (generation === view.generation) view.connect();
      });
    } else {
      this.connect();
    }
  };

  LogView.prototype.updateDownload = function () {
    if (!this.download) return;
    var base = this.root.dataset.download;
    this.download.href = this.rank() !== "" ? base + "?rank=" + encodeURIComponent(this.rank()) : base;
  };

  LogView.prototype.init = function () {
    var view = this;
    var restored = this.restore();
    if (this.rankSelect) {
      this.rankSelect.addEventListener("change", function () { view.start(true); });
    }
    if (this.follow) {
      this.follow.addEventListener("change", function () {
        if (view.follow.checked) view.list.scrollTop = view.list.scrollHeight;
      });
    }
    window.addEventListener("pagehide", function () { view.save(); });
    this.start(!restored);
  };

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-training-log]").forEach(function (root) {
      var view = new LogView(root);
      root.trainingLog = view;
      view.init();
    });
  });
})();
