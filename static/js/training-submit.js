/* The submit form's shared-bucket browser (templates/training/jobs/_shared_browser.html, loaded by htmx under a
   path input): a file, or "Use this folder", fills the input the browser was opened for and closes it; "Close"
   empties it. "Upload" signs each picked file (POST data-upload → presigned S3 POST) and sends it straight to S3
   with progress, then lists the folder again. Without this script the inputs are plain text fields. */
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

  function send(input, file, status) {
    var ask = new FormData();
    ask.append("path", input.dataset.folder + "/" + file.name);
    return fetch(input.dataset.upload, { method: "POST", body: ask, headers: { "X-CSRFToken": csrf() } })
      .then(function (response) { return response.json().then(function (body) { return [response.ok, body]; }); })
      .then(function (answer) {
        if (!answer[0]) throw new Error(answer[1].message + " (" + answer[1].code + ")");
        var signed = answer[1], form = new FormData();
        Object.keys(signed.fields).forEach(function (key) { form.append(key, signed.fields[key]); });
        form.append("file", file);
        return new Promise(function (resolve, reject) {
          var request = new XMLHttpRequest();
          request.open("POST", signed.url);
          request.upload.onprogress = function (event) {
            if (event.lengthComputable) status.textContent = file.name + ": " + Math.round(100 * event.loaded / event.total) + "%";
          };
          request.onload = function () { request.status < 300 ? resolve() : reject(new Error(file.name + ": S3 answered " + request.status)); };
          request.onerror = function () { reject(new Error(file.name + ": the upload did not reach S3")); };
          request.send(form);
        });
      });
  }

  document.addEventListener("change", function (event) {
    var input = event.target.closest("[data-upload]");
    if (!input || !input.files.length) return;
    var status = input.closest(".browser").querySelector("[data-upload-status]");
    var files = Array.prototype.slice.call(input.files);
    files.reduce(function (done, file) { return done.then(function () { return send(input, file, status); }); },
                 Promise.resolve())
      .then(function () {
        status.textContent = files.length + " uploaded.";
        window.htmx.ajax("GET", input.dataset.reload, { target: input.closest(".path-browser"), swap: "innerHTML" });
      })
      .catch(function (error) { status.textContent = error.message; });
  });
})();
