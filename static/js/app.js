/* InstantStart portal behaviour: small progressive enhancements; every page works without them. */
(function () {
  "use strict";

  /* A team slug suggested from its name until the user edits the slug. */
  function slugify(text) {
    return text.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40).replace(/-+$/, "");
  }

  function bindSlugSuggestion(slugInput) {
    var source = document.getElementById(slugInput.dataset.slugFrom);
    if (!source) return;
    var edited = slugInput.value !== "" && slugInput.value !== slugify(source.value);
    slugInput.addEventListener("input", function () { edited = slugInput.value !== ""; });
    source.addEventListener("input", function () {
      if (!edited) slugInput.value = slugify(source.value);
    });
  }

  /* Copy the value of the element named by data-copy-target. */
  function bindCopy(button) {
    button.addEventListener("click", function () {
      var target = document.getElementById(button.dataset.copyTarget);
      if (!target) return;
      var text = target.value !== undefined ? target.value : target.textContent;
      var done = function () {
        var label = button.querySelector("[data-copy-label]") || button;
        var original = label.textContent;
        label.textContent = "Copied";
        setTimeout(function () { label.textContent = original; }, 1800);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done);
      } else {
        target.select();
        document.execCommand("copy");
        done();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("input[data-slug-from]").forEach(bindSlugSuggestion);
    document.querySelectorAll("[data-copy-target]").forEach(bindCopy);

    document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () { select.form.requestSubmit(); });
    });

    var toggle = document.querySelector("[data-nav-toggle]");
    if (toggle) {
      toggle.addEventListener("click", function () { document.body.classList.toggle("nav-open"); });
    }

    /* Close the user menu when clicking elsewhere. */
    document.addEventListener("click", function (event) {
      document.querySelectorAll("details.menu[open]").forEach(function (menu) {
        if (!menu.contains(event.target)) menu.removeAttribute("open");
      });
    });
  });

  /* Destructive forms ask first (data-confirm="Revoke this token?"). */
  document.addEventListener("submit", function (event) {
    var message = event.target.dataset && event.target.dataset.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();
