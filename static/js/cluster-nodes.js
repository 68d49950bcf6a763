/* The nodes page (templates/clusters/nodes/page.html). cluster-live.js swaps the node table when a batch moves;
   this script keeps the nodes the user ticked ticked across those swaps, and makes the Replace… and Delete… buttons
   open their confirmation dialogs (the replace dialog carries the data-loss warning and confirm_data_loss) instead
   of submitting at once. Without it the buttons submit directly and the server asks for the confirmation. */
(function () {
  "use strict";

  function start(form) {
    var chosen = {};

    Array.prototype.forEach.call(form.querySelectorAll('input[name="node_ids"]:checked'), function (box) {
      chosen[box.value] = true;
    });

    form.addEventListener("change", function (event) {
      var box = event.target;
      if (box.name === "node_ids") {
        if (box.checked) chosen[box.value] = true; else delete chosen[box.value];
      }
    });

    new MutationObserver(function () {
      Array.prototype.forEach.call(form.querySelectorAll('input[name="node_ids"]'), function (box) {
        if (chosen[box.value] && !box.checked) box.checked = true;
      });
    }).observe(form, {childList: true, subtree: true});

    Array.prototype.forEach.call(form.querySelectorAll("[data-dialog]"), function (button) {
      var dialog = document.getElementById(button.dataset.dialog);
      if (!dialog || typeof dialog.showModal !== "function") return;
      button.addEventListener("click", function (event) {
        event.preventDefault();
        if (dialog.open) dialog.close();
        dialog.showModal();
      });
      dialog.addEventListener("close", function () {
        Array.prototype.forEach.call(dialog.querySelectorAll('input[type="checkbox"]'), function (box) {
          box.checked = false;
        });
      });
      Array.prototype.forEach.call(dialog.querySelectorAll("[data-dialog-close]"), function (close) {
        close.addEventListener("click", function () { dialog.close(); });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-node-batch]"), start);
  });
})();
