// The chat page of `eve serve`: it uses only the public session API (/eve/v1).
// Everything from the server is shown as text (textContent), never as HTML.
// It is let in by an HttpOnly cookie (from the one-time link eve prints, or from the
// token typed into the form): the script never holds the token.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  session: null,
  next: 0,          // the next stream index wanted
  reader: null,     // the AbortController of the open stream
  status: "idle",
  streaming: new Map(), // "turn/step" -> the element a reply streams into
  tools: new Map(),     // call id -> the tool card
  reasoning: new Map(), // "turn/step" -> the block its reasoning streams into
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401) {
    $("token-form").hidden = false;
    setStatus("this server needs its token (eve serve printed it at start): type it above");
    throw new Error("unauthorized");
  }
  return response;
}

function setStatus(text) { $("status").textContent = text; }

function scrollDown() { const log = $("log"); log.scrollTop = log.scrollHeight; }

function tokens(usage) {
  if (!usage) return "";
  let text = usage.input_tokens.toLocaleString() + " tokens in";
  if (usage.cache_read_tokens) text += " (" + usage.cache_read_tokens.toLocaleString() + " cached)";
  return text + ", " + usage.output_tokens.toLocaleString() + " out";
}

function notice(text, error) {
  $("log").append(el("div", "notice" + (error ? " error" : ""), text));
}

function pretty(value) {
  try { return JSON.stringify(value, null, 2); } catch (_) { return String(value); }
}

// One line of the stream. Lines with an `index` are the session's events; lines
// without one are pieces of the reply being written, replaced by the whole text later.
function render(line) {
  const d = line.data || {};
  const key = d.turn_id + "/" + d.step;
  const log = $("log");
  switch (line.type) {
    case "message.received":
      log.append(el("div", "user", d.text));
      break;
    case "message.appended": {
      let node = state.streaming.get(key);
      if (!node) {
        node = el("div", "assistant streaming", "");
        state.streaming.set(key, node);
        log.append(node);
      }
      if (line.index === undefined) {
        node.textContent += d.text;
      } else {
        node.textContent = d.text;
        node.classList.remove("streaming");
      }
      break;
    }
    case "reasoning.appended": {
      // Reasoning is only streamed, never kept: the pieces of a step go in one block.
      let node = state.reasoning.get(key);
      if (!node) {
        node = el("div", "reasoning", "");
        state.reasoning.set(key, node);
        log.append(node);
      }
      node.textContent += d.text;
      break;
    }
    case "actions.requested":
      for (const action of d.actions || []) {
        const card = el("div", "tool");
        card.dataset.callId = action.call_id;
        card.append(el("div", "tool-name", action.name));
        card.append(el("pre", "tool-input", pretty(action.input)));
        card.append(el("pre", "tool-result pending", "running…"));
        state.tools.set(action.call_id, card);
        log.append(card);
      }
      break;
    case "action.result": {
      let card = state.tools.get(d.call_id);
      if (!card) {
        card = el("div", "tool");
        card.append(el("div", "tool-name", d.name));
        card.append(el("pre", "tool-result", ""));
        log.append(card);
      }
      const result = card.querySelector(".tool-result");
      result.textContent = d.output;
      result.classList.remove("pending");
      if (d.is_error) card.classList.add("error");
      break;
    }
    case "input.requested":
      log.append(requestCard(d.request));
      break;
    case "input.resolved": {
      const card = document.querySelector('.request[data-request-id="' + CSS.escape(d.request_id) + '"]');
      if (card) card.querySelectorAll("button, input").forEach((b) => { b.disabled = true; });
      const r = d.resolution || {};
      notice(r.decision === "answer" ? "answered: " + r.text : r.decision + (r.reason ? ": " + r.reason : ""));
      break;
    }
    case "compaction.requested":
      notice("compacting the history (" + d.tokens_before.toLocaleString() + " tokens)…");
      break;
    case "compaction.completed":
      notice("compacted: " + d.tokens_before.toLocaleString() + " → " + d.tokens_after.toLocaleString() + " tokens" + (d.summarised ? " (summarised)" : ""));
      break;
    case "step.failed":
      if (d.retry_in_ms !== null && d.retry_in_ms !== undefined) {
        const node = state.streaming.get(key);
        if (node && node.classList.contains("streaming")) { node.remove(); state.streaming.delete(key); }
        const thinking = state.reasoning.get(key);
        if (thinking) { thinking.remove(); state.reasoning.delete(key); }
        notice("the model call failed: " + d.error + "; retrying in " + d.retry_in_ms + " ms", true);
      } else {
        notice("the model call failed: " + d.error, true);
      }
      break;
    case "turn.cancelled":
      notice("the turn was cancelled");
      break;
    case "turn.completed":
      log.append(el("div", "usage", d.end_reason + " · " + d.steps + (d.steps === 1 ? " step · " : " steps · ") + tokens(d.usage)));
      break;
    case "turn.failed":
      notice("the turn failed: " + d.error, true);
      break;
    case "session.failed":
      notice("error: " + d.error, true);
      break;
    case "turn.waiting":
      setStatus("waiting for your answer");
      break;
    default:
      break;
  }
  scrollDown();
}

function requestCard(request) {
  const card = el("div", "request");
  card.dataset.requestId = request.request_id;
  const choices = el("div", "choices");
  const send = (body) => respond(request.request_id, body);
  if (request.kind === "question") {
    card.append(el("div", "", request.question));
    for (const option of request.options || []) {
      const b = el("button", "", option);
      b.type = "button";
      b.addEventListener("click", () => send({ optionId: option }));
      choices.append(b);
    }
    const input = el("input");
    input.placeholder = "your answer";
    const b = el("button", "", "answer");
    b.type = "button";
    b.addEventListener("click", () => { if (input.value.trim()) send({ text: input.value }); });
    choices.append(input, b);
  } else {
    card.append(el("div", "", "Approve `" + request.tool + "`?"));
    card.append(el("pre", "", pretty(request.input)));
    const approve = el("button", "", "approve");
    approve.type = "button";
    approve.addEventListener("click", () => send({ optionId: "approve" }));
    const reason = el("input");
    reason.placeholder = "reason (optional)";
    const deny = el("button", "", "deny");
    deny.type = "button";
    deny.addEventListener("click", () => send(reason.value.trim() ? { optionId: "deny", text: reason.value } : { optionId: "deny" }));
    choices.append(approve, deny, reason);
  }
  card.append(choices);
  return card;
}

async function respond(requestId, choice) {
  const response = await api("POST", "/eve/v1/session/" + state.session, {
    inputResponses: [Object.assign({ requestId }, choice)],
  });
  await settle(response);
}

// After a POST: show an error, or follow the turn it started.
async function settle(response) {
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    notice(body.message || ("HTTP " + response.status), true);
    return;
  }
  if (body.sessionId) state.session = body.sessionId;
  follow();
  refreshSessions();
}

// Reads the session's stream from state.next until it ends (the turn settled).
async function follow() {
  if (state.reader) state.reader.abort();
  const controller = new AbortController();
  state.reader = controller;
  const session = state.session;
  setStatus("working…");
  $("cancel").hidden = false;
  try {
    const response = await fetch("/eve/v1/session/" + session + "/stream?startIndex=" + state.next, { credentials: "same-origin", signal: controller.signal });
    if (!response.ok) { notice("the stream could not be read (HTTP " + response.status + ")", true); return; }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const text = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (!text.trim()) continue;
        let line;
        try { line = JSON.parse(text); } catch (_) { continue; }
        if (typeof line.index === "number") state.next = line.index + 1;
        if (session === state.session) render(line);
      }
    }
  } catch (error) {
    if (error.name !== "AbortError") notice("the stream broke: " + error.message, true);
  } finally {
    if (state.reader === controller) {
      state.reader = null;
      $("cancel").hidden = true;
      await refreshStatus();
    }
  }
}

async function refreshStatus() {
  const response = await api("GET", "/eve/v1/sessions?limit=1000").catch(() => null);
  if (!response || !response.ok) return;
  const body = await response.json();
  renderSessions(body.sessions || []);
  const current = (body.sessions || []).find((s) => s.sessionId === state.session);
  if (!current) return;
  if (current.status === "running" || current.status === "queued") {
    // Disconnected while the turn runs (too far behind): go on from where it was.
    follow();
  } else {
    setStatus(current.status === "waiting" ? "waiting for your answer" : "ready");
  }
}

async function refreshSessions() {
  const response = await api("GET", "/eve/v1/sessions?limit=1000").catch(() => null);
  if (response && response.ok) renderSessions((await response.json()).sessions || []);
}

function renderSessions(sessions) {
  const list = $("sessions");
  list.replaceChildren();
  for (const s of sessions) {
    const item = el("li", s.sessionId === state.session ? "current" : "", s.title || s.sessionId);
    item.title = s.sessionId;
    item.append(el("span", "state", s.status + " · " + s.sessionId.slice(0, 14) + "…"));
    item.addEventListener("click", () => open(s.sessionId));
    list.append(item);
  }
}

function open(id) {
  state.session = id;
  state.next = 0;
  state.streaming.clear();
  state.tools.clear();
  state.reasoning.clear();
  $("log").replaceChildren();
  follow();
  refreshSessions();
}

async function send(event) {
  event.preventDefault();
  const message = $("message").value;
  if (!message.trim()) return;
  $("message").value = "";
  const path = state.session ? "/eve/v1/session/" + state.session : "/eve/v1/session";
  try {
    await settle(await api("POST", path, { message }));
  } catch (error) {
    notice(error.message, true);
  }
}

async function start() {
  $("composer").addEventListener("submit", send);
  $("message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
  });
  $("new-session").addEventListener("click", () => {
    if (state.reader) state.reader.abort();
    state.session = null;
    state.next = 0;
    $("log").replaceChildren();
    setStatus("new session: type a message");
    refreshSessions();
  });
  $("cancel").addEventListener("click", async () => {
    if (state.session) await api("POST", "/eve/v1/session/" + state.session + "/cancel").catch(() => null);
  });
  $("compact").addEventListener("click", async () => {
    if (state.session) await settle(await api("POST", "/eve/v1/session/" + state.session + "/compact"));
  });
  $("token-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const token = $("token").value.trim();
    $("token").value = "";
    const response = await fetch("/eve/v1/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify({ token }),
    }).catch(() => null);
    if (!response || !response.ok) {
      setStatus("that is not this server's token");
      return;
    }
    $("token-form").hidden = true;
    loadInfo();
  });
  await loadInfo();
}

async function loadInfo() {
  try {
    const response = await api("GET", "/eve/v1/info");
    const info = await response.json();
    $("agent-name").textContent = info.agent.name;
    $("agent-model").textContent = info.agent.model;
    document.title = info.agent.name + " · eve";
    setStatus("new session: type a message");
    refreshSessions();
  } catch (_) { /* the token form is shown */ }
}

start();
