/* Tabs over a long page's sections ([data-section-tabs] links to [data-tab-panel] blocks; the cluster page). Only
   the chosen panel shows; the others stay in the page, hidden, so their live regions keep being updated and a
   form or dialog in them keeps its state. The choice follows the address: #tab-<name>, or the id of anything inside
   a panel (#groups opens the panel holding it); without one, the tab last chosen on this page (kept for the
   session, so coming back from a form's redirect lands where the user was), else the first. Without JavaScript
   every section shows and the tabs are anchors. */
(function () {
  "use strict";

  function start(nav) {
    var links = Array.prototype.slice.call(nav.querySelectorAll("[data-tab]"));
    var panels = Array.prototype.slice.call(document.querySelectorAll("[data-tab-panel]"));
    var key = "section-tab:" + window.location.pathname;
    if (!links.length || !panels.length) return;

    function panelFor(hash) {
      if (!hash || hash.length < 2) return null;
      var target = document.getElementById(decodeURIComponent(hash.slice(1)));
      return target ? target.closest("[data-tab-panel]") : null;
    }

    function choose(name, remember) {
      var known = panels.some(function (panel) { return panel.dataset.tabPanel === name; });
      if (!known) name = panels[0].dataset.tabPanel;
      panels.forEach(function (panel) { panel.hidden = panel.dataset.tabPanel !== name; });
      links.forEach(function (link) {
        var chosen = link.dataset.tab === name;
        link.classList.toggle("active", chosen);
        if (chosen) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
      });
      if (remember) {
        try { window.sessionStorage.setItem(key, name); } catch (error) { /* storage off: nothing kept */ }
      }
    }

    function fromAddress() {
      var panel = panelFor(window.location.hash);
      if (panel) { choose(panel.dataset.tabPanel, true); return; }
      var kept = null;
      try { kept = window.sessionStorage.getItem(key); } catch (error) { kept = null; }
      choose(kept, false);
    }

    nav.addEventListener("click", function (event) {
      var link = event.target.closest("[data-tab]");
      if (!link) return;
      event.preventDefault();
      window.history.replaceState(null, "", "#tab-" + link.dataset.tab);
      choose(link.dataset.tab, true);
    });
    window.addEventListener("hashchange", fromAddress);
    nav.classList.add("section-tabs-on");
    fromAddress();
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-section-tabs]"), start);
  });
})();
