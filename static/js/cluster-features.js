/* The "Advanced features" panel: on submit, send only the fields the user changed (the explicit-diff contract) as JSON, and show the
   server's answer (the panel again, with "No changes", the started operation, or the error codes). */
(function () {
  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function changes(form) {
    var body = {};
    Array.prototype.forEach.call(form.querySelectorAll('input[type="checkbox"][data-initial]'), function (box) {
      if (box.disabled) return;
      var initial = box.dataset.initial === "true";
      if (box.checked !== initial) body[box.name] = {enabled: box.checked};
    });
    var percentage = form.querySelector('input[name="memory_percentage"]');
    var tiered = form.querySelector('input[name="tiered_checkpointing"]');
    if (percentage && !percentage.disabled && tiered && tiered.checked) {
      var value = percentage.value === "" ? null : Number(percentage.value);
      var wasOn = tiered.dataset.initial === "true";
      if (value !== null && (!wasOn || String(value) !== percentage.dataset.initial)) {
        body.tiered_checkpointing = body.tiered_checkpointing || {};
        body.tiered_checkpointing.memory_percentage = value;
      }
    }
    return body;
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("[data-features-form]")) return;
    event.preventDefault();
    var panel = form.closest("[data-features-panel]");
    fetch(panel.dataset.url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken(), "HX-Request": "true"},
      body: JSON.stringify(changes(form))
    }).then(function (response) { return response.text(); }).then(function (html) {
      var holder = document.createElement("div");
      holder.innerHTML = html;
      var fresh = holder.firstElementChild;
      panel.replaceWith(fresh);
      if (window.htmx) window.htmx.process(fresh);
    });
  });
})();
