/* Relative times that stay true: every <time data-ago datetime="…"> on the page (the portal's `ago` filter,
   portal/templatetags/portal.py) is rewritten every 30 s with the same wording — "just now", then one unit
   ("5 minutes ago", "3 days ago") — so a page left open does not keep saying "1 minute ago". Elements swapped in
   by live updates are found on the next tick. */
(function () {
  "use strict";

  var TICK = 30000;
  var UNITS = [["year", 365 * 86400], ["month", 30 * 86400], ["week", 7 * 86400], ["day", 86400],
               ["hour", 3600], ["minute", 60]];

  function ago(iso, now) {
    var seconds = Math.floor((now - Date.parse(iso)) / 1000);
    if (isNaN(seconds)) return null;
    if (seconds < 60) return "just now";
    for (var i = 0; i < UNITS.length; i++) {
      var count = Math.floor(seconds / UNITS[i][1]);
      if (count >= 1) return count + "\u00a0" + UNITS[i][0] + (count === 1 ? "" : "s") + " ago";
    }
    return "just now";
  }

  function refresh() {
    var now = Date.now();
    Array.prototype.forEach.call(document.querySelectorAll("time[data-ago][datetime]"), function (el) {
      var text = ago(el.getAttribute("datetime"), now);
      if (text !== null && el.textContent !== text) el.textContent = text;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    refresh();
    setInterval(refresh, TICK);
  });
})();
