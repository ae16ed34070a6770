// Progressive enhancement only: every page works without this file.
// Served from the binary ('self'), so the CSP needs no inline script.
"use strict";

// Upload forms: drop a file on the form, and see the upload's progress.
for (const form of document.querySelectorAll("form[data-drop]")) {
  const input = form.querySelector('input[type="file"]');
  const bar = form.querySelector("progress");
  form.addEventListener("dragover", (e) => { e.preventDefault(); form.classList.add("dragging"); });
  form.addEventListener("dragleave", () => form.classList.remove("dragging"));
  form.addEventListener("drop", (e) => {
    e.preventDefault();
    form.classList.remove("dragging");
    if (e.dataTransfer && e.dataTransfer.files.length) input.files = e.dataTransfer.files;
  });
  form.addEventListener("submit", (e) => {
    if (!window.XMLHttpRequest || !bar) return;
    e.preventDefault();
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    bar.hidden = false;
    xhr.upload.addEventListener("progress", (p) => {
      if (p.lengthComputable) bar.value = Math.round((100 * p.loaded) / p.total);
    });
    xhr.addEventListener("load", () => {
      // The server answers with the file's page (after its redirect).
      if (xhr.responseURL) window.location.assign(xhr.responseURL);
      else document.documentElement.innerHTML = xhr.responseText;
    });
    xhr.send(new FormData(form));
  });
}

// A file still being processed: look again shortly.
const status = document.getElementById("index-status");
if (status && ["pending", "processing"].includes(status.dataset.status)) {
  setTimeout(() => window.location.reload(), 1000);
}
