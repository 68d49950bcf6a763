/* The submit form's shared-bucket browser (templates/training/jobs/_shared_browser.html, loaded by htmx under a
   path input): a file, or "Use this folder", fills the input the browser was opened for and closes it; "Close"
   empties it. "Upload files" and "Upload a folder" sign each picked file (POST data-upload → presigned S3 POST; a
   folder's files keep their paths inside it) and send it straight to S3 with the progress of the whole upload, then
   list the folder again. Without this script the inputs are plain text fields. */
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

  function csrf() {
    var match = document.cookie.match(/(?:^|; )csrftoken=([^;]*)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  /* Where a picked file goes: the folder shown, plus its path inside a picked folder (webkitRelativePath). */
  function destination(input, file) {
    return input.dataset.folder + "/" + (file.webkitRelativePath || file.name);
  }

  function send(input, file, report) {
    var ask = new FormData();
    ask.append("path", destination(input, file));
    return fetch(input.dataset.upload, { method: "POST", body: ask, headers: { "X-CSRFToken": csrf() } })
      .then(function (response) { return response.json().then(function (body) { return [response.ok, body]; }); })
      .then(function (answer) {
        if (!answer[0]) throw new Error(file.name + ": " + answer[1].message + " (" + answer[1].code + ")");
        var signed = answer[1], form = new FormData();
        Object.keys(signed.fields).forEach(function (key) { form.append(key, signed.fields[key]); });
        form.append("file", file);
        return new Promise(function (resolve, reject) {
          var request = new XMLHttpRequest();
          request.open("POST", signed.url);
          request.upload.onprogress = function (event) { if (event.lengthComputable) report(event.loaded); };
          request.onload = function () {
            if (request.status < 300) { report(file.size); resolve(); }
            else reject(new Error(file.name + ": S3 answered " + request.status));
          };
          request.onerror = function () {
            reject(new Error(file.name + ": the upload did not reach S3 (is the bucket's CORS rule in place?)"));
          };
          request.send(form);
        });
      });
  }

  /* Files go one after another; the bar and the line below it show the bytes sent of all of them. */
  document.addEventListener("change", function (event) {
    var input = event.target.closest("[data-upload]");
    if (!input || !input.files.length) return;
    var browser = input.closest(".browser");
    var status = browser.querySelector("[data-upload-status]");
    var holder = browser.querySelector("[data-upload-progress]");
    var bar = holder ? holder.querySelector("progress") : null;
    var files = Array.prototype.slice.call(input.files);
    var total = files.reduce(function (sum, file) { return sum + file.size; }, 0) || 1;
    var sent = 0;
    if (holder) holder.hidden = false;
    files.reduce(function (done, file, index) {
      return done.then(function () {
        return send(input, file, function (loaded) {
          var percent = Math.round(100 * (sent + loaded) / total);
          if (bar) bar.value = percent;
          status.textContent = "File " + (index + 1) + " of " + files.length + ": " + destination(input, file) +
            " · " + percent + "% of all";
        }).then(function () { sent += file.size; });
      });
    }, Promise.resolve())
      .then(function () {
        status.textContent = files.length + " file" + (files.length === 1 ? "" : "s") + " uploaded.";
        window.htmx.ajax("GET", input.dataset.reload, { target: input.closest(".path-browser"), swap: "innerHTML" });
      })
      .catch(function (error) { status.textContent = error.message; });
  });
})();
