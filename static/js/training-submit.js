/* The submit form's shared-bucket browser (templates/training/jobs/_shared_browser.html, loaded by htmx under a
   path input): a file, or "Use this folder", fills the input the browser was opened for and closes it; "Close"
   empties it. "Upload files" and "Upload a folder" sign each picked file (POST data-upload → presigned S3 POST; a
   folder's files keep their paths inside it) and send it straight to S3 with the progress of the whole upload, then
   list the folder again. A file larger than data-part-bytes goes as an S3 multipart upload: the REST operation at
   data-multipart signs its parts, each part is PUT with its progress and its ETag kept, then …/complete finishes it
   (…/abort drops the parts when one fails). Without this script the inputs are plain text fields. */
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

  /* POST a JSON body to one of the portal's own REST operations (session and CSRF token); the answer's body, or an
     Error naming the file and the refusal. */
  function postJson(url, body, file) {
    return fetch(url, {
      method: "POST", body: JSON.stringify(body), credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() }
    }).then(function (response) {
      return response.json().then(function (answer) {
        if (!response.ok) throw new Error(file.name + ": " + answer.message + " (" + answer.code + ")");
        return answer;
      });
    });
  }

  /* PUT one part; resolves to the ETag S3 answered (the bucket's CORS rule must expose it). */
  function putPart(url, blob, file, report) {
    return new Promise(function (resolve, reject) {
      var request = new XMLHttpRequest();
      request.open("PUT", url);
      request.upload.onprogress = function (event) { if (event.lengthComputable) report(event.loaded); };
      request.onload = function () {
        var etag = request.getResponseHeader("ETag");
        if (request.status >= 300) reject(new Error(file.name + ": S3 answered " + request.status));
        else if (!etag) reject(new Error(file.name + ": S3's ETag is hidden from the page (the bucket's CORS rule must expose ETag)"));
        else resolve(etag);
      };
      request.onerror = function () {
        reject(new Error(file.name + ": a part did not reach S3 (is the bucket's CORS rule in place?)"));
      };
      request.send(blob);
    });
  }

  function sendInParts(input, file, report) {
    var path = destination(input, file), url = input.dataset.multipart;
    return postJson(url, { path: path, size: file.size }, file).then(function (started) {
      var sent = 0, parts = [];
      return started.parts.reduce(function (done, part) {
        return done.then(function () {
          var from = (part.number - 1) * started.part_size;
          return putPart(part.url, file.slice(from, from + part.bytes), file, function (loaded) {
            report(sent + loaded);
          }).then(function (etag) { sent += part.bytes; parts.push({ number: part.number, etag: etag }); });
        });
      }, Promise.resolve())
        .then(function () {
          return postJson(url + "/complete", { path: path, upload_id: started.upload_id, parts: parts }, file);
        })
        .catch(function (error) {
          var drop = postJson(url + "/abort", { path: path, upload_id: started.upload_id }, file);
          return drop.then(function () { throw error; }, function () { throw error; });
        });
    }).then(function () { report(file.size); });
  }

  function send(input, file, report) {
    if (input.dataset.multipart && file.size > Number(input.dataset.partBytes)) {
      return sendInParts(input, file, report);
    }
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
        /* The folder is listed again, which replaces this panel: the outcome is said again in the new one. */
        var message = files.length + " file" + (files.length === 1 ? "" : "s") + " uploaded.";
        var panel = input.closest(".path-browser");
        status.textContent = message;
        return window.htmx.ajax("GET", input.dataset.reload, { target: panel, swap: "innerHTML" }).then(function () {
          var fresh = panel.querySelector("[data-upload-status]");
          if (fresh) fresh.textContent = message;
        });
      })
      .catch(function (error) { status.textContent = error.message; });
  });
})();
