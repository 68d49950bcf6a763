/* The cluster create wizard (templates/clusters/wizard/): a changed answer makes the review stale, so it is emptied
   until Review is pressed again. Loading each step's choices is htmx's job (hx-get on the inputs). */
(function () {
  "use strict";

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.querySelector("[data-cluster-wizard]");
    if (!form) return;
    function stale(event) {
      var review = document.getElementById("step-review");
      if (review && !review.contains(event.target)) review.innerHTML = "";
    }
    form.addEventListener("input", stale);
    form.addEventListener("change", stale);
  });
})();
