// pipe serve: follow a page's live part over server-sent events, show a node's panel, send actions with the token.
"use strict";

(function () {
  const TOKEN_KEY = "pipe-serve-token";
  let selectedNode = null;

  // `pipe serve --allow-actions` prints URL#token=...: keep the token for this tab and take it out of the address.
  function takeTokenFromAddress() {
    const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
  }

  function token() {
    let value = sessionStorage.getItem(TOKEN_KEY);
    if (!value) {
      value = window.prompt("The token `pipe serve --allow-actions` printed:") || "";
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
    }
    return value;
  }

  function follow(url) {
    const live = document.getElementById("live");
    if (!live) return;
    const source = new EventSource(url);
    source.addEventListener("update", function (event) {
      // What a person opened or typed stays when the part around it is replaced: folded call lists, and an
      // answer being written (with the cursor in it).
      const opened = Array.from(live.querySelectorAll("details[open]")).map(function (d) { return d.dataset.key; });
      const typed = {};
      live.querySelectorAll("input[aria-label]").forEach(function (input) { typed[input.getAttribute("aria-label")] = input.value; });
      const focused = document.activeElement && live.contains(document.activeElement)
        ? document.activeElement.getAttribute("aria-label") : null;
      live.innerHTML = event.data;
      live.querySelectorAll("details[data-key]").forEach(function (d) {
        if (opened.indexOf(d.dataset.key) >= 0) d.open = true;
      });
      live.querySelectorAll("input[aria-label]").forEach(function (input) {
        const label = input.getAttribute("aria-label");
        if (typed[label]) input.value = typed[label];
        if (label === focused) input.focus();
      });
      document.body.dataset.updates = String(Number(document.body.dataset.updates || "0") + 1);
      markSelected();
      if (selectedNode) showNode(selectedNode);
    });
    source.addEventListener("open", function () { document.body.dataset.stream = "open"; });
    source.addEventListener("error", function () { document.body.dataset.stream = "reconnecting"; });
  }

  function markSelected() {
    document.querySelectorAll("button.node").forEach(function (button) {
      button.classList.toggle("selected", button.dataset.node === selectedNode);
    });
  }

  function showNode(nodeId) {
    const panel = document.getElementById("node-detail");
    if (!panel) return;
    selectedNode = nodeId;
    markSelected();
    const url = "/runs/" + encodeURIComponent(panel.dataset.run) + "/node?id=" + encodeURIComponent(nodeId);
    fetch(url).then(function (response) { return response.text(); }).then(function (html) {
      if (selectedNode === nodeId) panel.innerHTML = new DOMParser().parseFromString(html, "text/html").body.innerHTML;
    });
  }

  function say(text, ok) {
    const where = document.getElementById("action-result");
    if (!where) return;
    where.textContent = text;
    where.className = ok ? "ok" : "error";
  }

  function act(form) {
    const fields = {};
    new FormData(form).forEach(function (value, key) { fields[key] = value; });
    fetch(form.dataset.action, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-Pipe-Token": token()},
      body: JSON.stringify(fields),
    }).then(function (response) {
      return response.json().then(function (answer) {
        say(answer.message, answer.ok);
        // A run started from the page: follow it on its own page, which updates live.
        if (answer.ok && answer.run) location.assign("/runs/" + encodeURIComponent(answer.run));
      });
    }).catch(function (error) { say(String(error), false); });
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button.node");
    if (button) showNode(button.dataset.node);
  });

  document.addEventListener("submit", function (event) {
    const form = event.target.closest("form[data-action]");
    if (!form) return;
    event.preventDefault();
    act(form);
  });

  takeTokenFromAddress();
  if (document.body.dataset.live) follow(document.body.dataset.live);
})();
