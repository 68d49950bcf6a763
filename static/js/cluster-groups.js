/* Instance-group dialogs on the cluster page (templates/clusters/detail/_groups.html). A [data-group-dialog] button
   opens its <dialog>; [data-dialog-close] closes it. A form[data-changed-only] sends only the fields whose value
   differs from the value the page was rendered with (data-initial): the others are disabled just before submit,
   so the server compares exactly what the user changed with what AWS has (the explicit-diff contract). Delegated
   from the document, so rows swapped in by cluster-live.js work too. */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var opener = event.target.closest("[data-group-dialog]");
    if (opener) {
      var dialog = document.getElementById(opener.dataset.groupDialog);
      if (dialog) dialog.showModal();
      return;
    }
    var closer = event.target.closest("[data-dialog-close]");
    if (closer) closer.closest("dialog").close();
  });

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-changed-only]");
    if (!form) return;
    Array.prototype.forEach.call(form.querySelectorAll("[data-initial]"), function (field) {
      field.disabled = field.value === field.dataset.initial;
    });
  }, true);
})();
