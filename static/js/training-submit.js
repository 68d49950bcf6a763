/* The submit form's shared-bucket browser (templates/training/jobs/_shared_browser.html, loaded by htmx under a
   path input): a file, or "Use this folder", fills the input the browser was opened for and closes it; "Close"
   empties it. Without this script the inputs are plain text fields. */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-fill], [data-browser-close]");
    if (!button) return;
    var browser = button.closest("[data-browser-target]");
    var holder = button.closest(".path-browser");
    if (button.hasAttribute("data-fill") && browser) {
      var input = document.getElementById("id_" + browser.dataset.browserTarget);
      if (input) {
        input.value = button.dataset.fill;
        input.dispatchEvent(new Event("change", { bubbles: true }));
        input.focus();
      }
    }
    if (holder) holder.innerHTML = "";
  });
})();
