// memvault Studio: a small page over the HTTP API (/v1/...). Plain JavaScript, no build step.
// Every piece of stored data is rendered with textContent (never innerHTML), so a message
// cannot inject markup or scripts into the page.
"use strict";

(() => {
  const KEY_STORE = "memvault.studio.key";
  // An id as one path segment: percent-encoded, dots too (a browser drops `.` and `..` segments).
  const segment = (id) => encodeURIComponent(id).replace(/\./g, "%2E");
  const RESOURCE_STORE = "memvault.studio.resource";
  const THREAD_PAGE = 20;
  const TIMELINE_MAX = 500; // the newest messages of a thread shown in the timeline

  const state = {
    key: null,
    me: null,          // GET /v1/me
    resource: null,    // the resource being viewed
    thread: null,      // the open thread (a Thread object)
    cursor: null,      // next_cursor of the thread list
    titles: new Map(), // thread id -> title, from the thread list
    timeline: [],      // the open thread's messages shown, oldest first
    olderFrom: null,   // the first message id once no older ones are left
  };

  const $ = (id) => document.getElementById(id);
  // The API is served next to the page (the page is at <root>/studio/, the API at <root>/v1/).
  const API_ROOT = new URL("../", location.href);

  // Answers can arrive out of order (a resource picked while another one loads): each load
  // takes a ticket, and drops its answer when a newer load of the same panel, or another
  // resource, came after it.
  let generation = 0;
  const tickets = {};
  function ticket(panel) {
    const mine = (tickets[panel] = (tickets[panel] || 0) + 1);
    const gen = generation;
    return () => tickets[panel] === mine && generation === gen;
  }

  // ---- small DOM helpers (text only) ----

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = String(value);
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function plural(n, word) {
    if (typeof n !== "number") return `? ${word}s`;
    return `${n} ${word}${n === 1 ? "" : "s"}`;
  }

  function pad(n) { return String(n).padStart(2, "0"); }

  function formatTime(value) {
    if (!value) return "";
    const d = new Date(value);
    if (Number.isNaN(d.getTime())) return String(value);
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
  }

  function timeEl(value) {
    return el("time", { datetime: value || null, text: formatTime(value) });
  }

  function json(value) {
    if (typeof value === "string") return value;
    try { return JSON.stringify(value, null, 2); } catch (_) { return String(value); }
  }

  function clear(node) { node.replaceChildren(); }

  // ---- the API ----

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body, { scoped = true } = {}) {
    const headers = { Authorization: `Bearer ${state.key}` };
    if (scoped && state.me && state.me.admin && state.resource) {
      headers["X-Memvault-Resource"] = state.resource;
    }
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(new URL(path.replace(/^\//, ""), API_ROOT), {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store", credentials: "omit",
      });
    } catch (err) {
      throw new ApiError(0, "network", `The request could not be sent: is the server running? (${err.message})`);
    }
    if (response.status === 204) return null;
    let data = null;
    try { data = await response.json(); } catch (_) { data = null; }
    if (!response.ok) {
      const error = data && data.error;
      const message = error && error.message ? error.message : `HTTP ${response.status} ${response.statusText}`;
      throw new ApiError(response.status, error && error.code ? error.code : `http_${response.status}`, message);
    }
    return data;
  }

  function q(params) {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) {
      if (value !== null && value !== undefined && value !== "") search.set(name, String(value));
    }
    const text = search.toString();
    return text ? `?${text}` : "";
  }

  // ---- errors and the key box ----

  function showError(message) {
    const box = $("error");
    box.textContent = message;
    box.hidden = !message;
  }

  // 401: no key, or an unknown or revoked one (403 is a refusal of one request, shown as such).
  function isAuthError(err) {
    return err instanceof ApiError && err.status === 401;
  }

  // Report a failed call; a refused key sends the user back to the key box.
  function fail(err, what) {
    if (isAuthError(err)) {
      askForKey(`The key was refused (${err.message}). Enter a valid key.`);
      return;
    }
    const code = err && err.code ? ` [${err.code}]` : "";
    showError(`${what} failed: ${err && err.message ? err.message : err}${code}`);
  }

  function askForKey(message) {
    generation += 1; // answers still on their way are for the old key: dropped
    sessionStorage.removeItem(KEY_STORE);
    state.key = null;
    state.me = null;
    showError(message || "");
    $("studio").hidden = true;
    $("change-key").hidden = true;
    $("resource-picker").hidden = true;
    $("who").textContent = "";
    $("key-form").hidden = false;
    $("key-input").value = "";
    $("key-input").focus();
  }

  // ---- start ----

  // `memvault studio --open` opens the page with a one-time #handoff token (never the key, which
  // would sit on the browser's command line): the page trades it for the key on loopback.
  async function keyFromFragment() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    let key = params.get("key");
    const token = params.get("handoff");
    if (key || token) history.replaceState(null, "", location.pathname + location.search);
    if (!key && token) {
      try {
        const answer = await fetch("/studio/handoff", {
          method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ token }),
        });
        if (answer.ok) key = (await answer.json()).key;
      } catch (err) {
        key = null;
      }
    }
    if (key) sessionStorage.setItem(KEY_STORE, key);
    return key;
  }

  async function start() {
    state.key = (await keyFromFragment()) || sessionStorage.getItem(KEY_STORE);
    if (!state.key) { askForKey(""); return; }
    showError("");
    let me;
    try {
      me = await api("GET", "/v1/me", undefined, { scoped: false });
    } catch (err) {
      if (isAuthError(err)) {
        askForKey(`The key was refused: ${err.message}`);
      } else {
        askForKey(`Could not check the key: ${err.message}`);
      }
      return;
    }
    state.me = me;
    $("key-form").hidden = true;
    $("change-key").hidden = false;
    $("studio").hidden = false;
    const who = me.admin ? "admin key" : "resource key";
    $("who").textContent = `${me.name || me.key_id || "key"} · ${who}` +
      (me.admin ? "" : ` · resource ${me.resource_id}`);
    if (me.admin) {
      await loadResources();
    } else {
      $("resource-picker").hidden = true;
      await selectResource(me.resource_id);
    }
  }

  async function loadResources() {
    const select = $("resource-select");
    $("resource-picker").hidden = false;
    let data;
    try {
      data = await api("GET", "/v1/resources", undefined, { scoped: false });
    } catch (err) { fail(err, "Listing resources"); return; }
    const resources = (data && data.resources) || [];
    clear(select);
    if (!resources.length) {
      select.append(el("option", { value: "", text: "(no resources yet)" }));
      select.disabled = true;
      await selectResource(null);
      return;
    }
    select.disabled = false;
    for (const r of resources) {
      const label = `${r.resource_id} (${plural(r.threads, "thread")}, ${plural(r.messages, "message")})`;
      select.append(el("option", { value: r.resource_id, text: label }));
    }
    const remembered = sessionStorage.getItem(RESOURCE_STORE);
    const pick = resources.some((r) => r.resource_id === remembered) ? remembered : resources[0].resource_id;
    select.value = pick;
    await selectResource(pick);
  }

  async function selectResource(resourceId) {
    generation += 1;
    state.resource = resourceId;
    state.thread = null;
    if (resourceId && state.me && state.me.admin) sessionStorage.setItem(RESOURCE_STORE, resourceId);
    showError("");
    clear($("recall-hits"));
    clear($("recall-warnings"));
    $("recall-status").textContent = "";
    showThread(null);
    if (!resourceId) {
      clear($("stats")); clear($("threads"));
      return;
    }
    await Promise.all([loadStats(), loadThreads(false), loadWorkingMemory()]);
  }

  // ---- stats ----

  const STAT_LABELS = [
    ["threads", "Threads"], ["messages", "Messages"], ["summaries", "Summaries"],
    ["working_memories", "Working memories"], ["states", "States"],
  ];

  async function loadStats() {
    const box = $("stats");
    const fresh = ticket("stats");
    let stats;
    try { stats = await api("GET", "/v1/stats"); } catch (err) { if (fresh()) fail(err, "Loading stats"); return; }
    if (!fresh()) return;
    clear(box);
    const known = new Set(STAT_LABELS.map(([name]) => name));
    const rows = STAT_LABELS.filter(([name]) => name in stats);
    for (const name of Object.keys(stats)) {
      if (!known.has(name) && typeof stats[name] === "number") rows.push([name, name.replace(/_/g, " ")]);
    }
    for (const [name, label] of rows) {
      box.append(el("div", { class: "stat", "data-stat": name },
        el("dt", { text: label }), el("dd", { text: stats[name] })));
    }
  }

  // ---- threads ----

  async function loadThreads(more) {
    const list = $("threads");
    const fresh = ticket("threads");
    let page;
    try {
      page = await api("GET", `/v1/threads${q({ limit: THREAD_PAGE, cursor: more ? state.cursor : null })}`);
    } catch (err) { if (fresh()) fail(err, "Listing threads"); return; }
    if (!fresh()) return;
    if (!more) { clear(list); state.titles.clear(); }
    for (const thread of page.threads || []) {
      if (thread.title) state.titles.set(thread.id, thread.title);
      list.append(threadItem(thread));
    }
    state.cursor = page.next_cursor || null;
    $("threads-more").hidden = !state.cursor;
    $("threads-empty").hidden = list.children.length > 0;
  }

  function threadItem(thread) {
    const button = el("button", { type: "button", class: "thread", "data-thread-id": thread.id,
      onclick: () => openThread(thread) },
    el("span", { class: "thread-title", text: thread.title || thread.id }),
    el("span", { class: "thread-meta" }, "updated ", timeEl(thread.updated_at)));
    return el("li", {}, button);
  }

  function markCurrentThread() {
    for (const button of document.querySelectorAll("#threads button.thread")) {
      if (state.thread && button.dataset.threadId === state.thread.id) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    }
  }

  function showThread(thread) {
    ticket("thread");  // an older thread still loading is not shown
    state.thread = thread;
    $("delete-thread").hidden = !thread;
    $("timeline-title").textContent = thread ? `Timeline: ${thread.title || thread.id}` : "Timeline";
    $("timeline-hint").hidden = Boolean(thread);
    $("recall-this-thread").disabled = !thread;
    $("wm-scope-thread").disabled = !thread;
    if (!thread) {
      $("recall-this-thread").checked = false;
      clear($("timeline"));
      // no open thread: back to the resource's working memory (the callers reload it)
      document.querySelector('input[name="wm-scope"][value="resource"]').checked = true;
    }
    markCurrentThread();
  }

  async function openThread(thread) {
    showError("");
    showThread(thread);
    state.timeline = [];
    state.olderFrom = null;
    const list = $("timeline");
    clear(list);
    list.setAttribute("aria-busy", "true");
    const fresh = ticket("thread");
    let data;
    try {
      data = await api("GET", `/v1/threads/${segment(thread.id)}/messages${q({ last_n: TIMELINE_MAX })}`);
    } catch (err) {
      if (fresh()) { list.removeAttribute("aria-busy"); fail(err, "Loading the thread"); }
      return;
    }
    if (!fresh()) return;
    state.timeline = data.messages || [];
    renderTimeline(state.timeline);
    list.removeAttribute("aria-busy");
    if (wmThreadId() !== null) await loadWorkingMemory();
  }

  async function openThreadById(threadId) {
    if (state.thread && state.thread.id === threadId) return;
    await openThread({ id: threadId, title: state.titles.get(threadId) || null });
  }

  async function deleteThread() {
    const thread = state.thread;
    if (!thread) return;
    if (!window.confirm(`Delete the thread "${thread.title || thread.id}" and all its messages?`)) return;
    try {
      await api("DELETE", `/v1/threads/${segment(thread.id)}`);
    } catch (err) { fail(err, "Deleting the thread"); return; }
    showThread(null);
    await Promise.all([loadStats(), loadThreads(false), loadWorkingMemory()]);
  }

  // ---- the timeline ----

  function renderTimeline(messages) {
    const list = $("timeline");
    clear(list);
    const sorted = [...messages].sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
    // Pair every tool result with its call (by tool_call_id), wherever the result was stored.
    const results = new Map();
    for (const message of sorted) {
      for (const part of message.parts || []) {
        if (part.type === "tool-result") results.set(part.tool_call_id, part);
      }
    }
    const calls = new Set();
    for (const message of sorted) {
      for (const part of message.parts || []) if (part.type === "tool-call") calls.add(part.tool_call_id);
    }
    if (sorted.length >= TIMELINE_MAX && state.olderFrom !== sorted[0].id) {
      const older = el("button", { type: "button", id: "timeline-older", text: "Load older messages" });
      older.addEventListener("click", () => loadOlder(sorted[0].id));
      list.append(el("li", { class: "muted" }, `Showing the newest ${sorted.length} messages. `, older));
    }
    for (const message of sorted) list.append(messageItem(message, results, calls));
    if (!sorted.length) list.append(el("li", { class: "muted", text: "This thread has no messages." }));
  }

  async function loadOlder(firstId) {
    const thread = state.thread;
    if (!thread) return;
    const fresh = ticket("thread");
    let data;
    try {
      data = await api("GET", `/v1/threads/${segment(thread.id)}/messages${q({ before: firstId, last_n: TIMELINE_MAX })}`);
    } catch (err) {
      if (fresh()) fail(err, "Loading older messages");
      return;
    }
    if (!fresh()) return;
    const older = data.messages || [];
    if (older.length < TIMELINE_MAX) state.olderFrom = older.length ? older[0].id : firstId;
    state.timeline = [...older, ...state.timeline];
    renderTimeline(state.timeline);
  }

  function messageItem(message, results, calls) {
    const role = message.role || "unknown";
    const head = el("header", { class: "message-head" },
      el("span", { class: `badge role-${role}`, text: role }),
      message.seq !== null && message.seq !== undefined ? el("span", { class: "seq", text: `#${message.seq}` }) : null,
      timeEl(message.created_at));
    const body = el("div", { class: "message-body" });
    for (const part of message.parts || []) {
      // A result shown beside its call is not repeated on its own.
      if (part.type === "tool-result" && calls.has(part.tool_call_id)) continue;
      body.append(partNode(part, results));
    }
    if (message.metadata && Object.keys(message.metadata).length) {
      body.append(el("details", { class: "metadata" }, el("summary", { text: "Metadata" }),
        el("pre", { text: json(message.metadata) })));
    }
    return el("li", { class: `message role-${role}`, "data-message-id": message.id, "data-role": role },
      head, body);
  }

  function partNode(part, results) {
    switch (part.type) {
      case "text":
        return el("p", { class: "text", text: part.text });
      case "reasoning":
        return el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }),
          el("p", { class: "text", text: part.text }));
      case "tool-call": {
        const result = results.get(part.tool_call_id);
        return el("div", { class: "tool-call", "data-tool-call-id": part.tool_call_id },
          el("div", { class: "tool-title" }, "Tool call ", el("code", { text: part.name }),
            el("span", { class: "muted", text: ` ${part.tool_call_id}` })),
          el("div", { class: "tool-label", text: "Arguments" }),
          el("pre", { class: "tool-args", text: json(part.args) }),
          result ? resultNode(result) : el("p", { class: "muted tool-pending", text: "No result saved." }));
      }
      case "tool-result":
        return el("div", { class: "tool-call orphan" },
          el("div", { class: "tool-title" }, "Tool result ", el("code", { text: part.name || "" }),
            el("span", { class: "muted", text: ` ${part.tool_call_id}` })),
          resultNode(part));
      case "file":
        // A reference only: the page loads nothing from outside.
        return el("p", { class: "ref" }, "File ", el("code", { text: part.name || part.url }),
          part.media_type ? ` (${part.media_type})` : "");
      case "image":
        return el("p", { class: "ref" }, "Image ", el("code", { text: shortUrl(part.url) }),
          part.media_type ? ` (${part.media_type})` : "");
      case "data":
        return el("details", { class: "data" }, el("summary", { text: `Data${part.name ? `: ${part.name}` : ""}` }),
          el("pre", { text: json(part.data) }));
      default:
        return el("details", { class: "data" }, el("summary", { text: `Part: ${part.type}` }),
          el("pre", { text: json(part) }));
    }
  }

  function resultNode(result) {
    return el("div", { class: result.is_error ? "tool-result error-result" : "tool-result" },
      el("div", { class: "tool-label", text: result.is_error ? "Result (error)" : "Result" }),
      el("pre", { text: json(result.output) }));
  }

  function shortUrl(url) {
    const text = String(url || "");
    return text.startsWith("data:") ? `${text.slice(0, 40)}…` : text;
  }

  function messageText(message) {
    if (!message) return "";
    const texts = (message.parts || []).filter((p) => p.type === "text").map((p) => p.text);
    if (texts.length) return texts.join("\n");
    const calls = (message.parts || []).filter((p) => p.type === "tool-call" || p.type === "tool-result");
    return calls.map((p) => `${p.type} ${p.name || p.tool_call_id}`).join(", ");
  }

  // ---- working memory ----

  // The working memory shown: the resource's, or the open thread's (a separate note).
  function wmThreadId() {
    return state.thread && $("wm-scope-thread").checked ? state.thread.id : null;
  }

  async function loadWorkingMemory() {
    const text = $("wm-text");
    const status = $("wm-status");
    const threadId = wmThreadId();
    $("wm-label").textContent = threadId
      ? `Content: thread ${state.thread.title || threadId}`
      : `Content: resource ${state.resource}`;
    status.textContent = "";
    status.className = "status";
    const fresh = ticket("wm");
    let data;
    try {
      data = await api("GET", `/v1/working-memory${q({ thread_id: threadId })}`);
    } catch (err) {
      if (!fresh()) return;
      if (isAuthError(err)) { fail(err, "Loading working memory"); return; }
      text.value = "";
      setStatus(status, `Not loaded: ${err.message}`, false);
      return;
    }
    if (!fresh()) return;
    const content = data && typeof data.content === "string" ? data.content : null;
    text.value = content ?? "";
    text.placeholder = content === null ? "Empty: nothing written yet." : "";
  }

  function setStatus(node, message, ok) {
    node.textContent = message;
    node.className = `status ${ok ? "ok" : "bad"}`;
  }

  async function saveWorkingMemory(event) {
    event.preventDefault();
    const status = $("wm-status");
    const body = { content: $("wm-text").value };
    const threadId = wmThreadId();
    if (threadId) body.thread_id = threadId;
    $("wm-save").disabled = true;
    status.textContent = "Saving…";
    status.className = "status";
    try {
      const data = await api("PUT", "/v1/working-memory", body);
      if (data && typeof data.content === "string") $("wm-text").value = data.content;
      setStatus(status, `Saved at ${formatTime(new Date().toISOString())}`, true);
      loadStats();
    } catch (err) {
      if (isAuthError(err)) fail(err, "Saving working memory");
      else setStatus(status, `Save failed: ${err.message}`, false);
    } finally {
      $("wm-save").disabled = false;
    }
  }

  // ---- recall ----

  function hitSources(hit) {
    const value = hit.sources ?? hit.source;
    if (Array.isArray(value)) return value.map(String);
    if (value === null || value === undefined || value === "") return [];
    if (value === "both") return ["lexical", "vector"];
    return [String(value)];
  }

  function hitMessage(hit, byId) {
    if (hit.message && typeof hit.message === "object") return hit.message;
    const id = hit.id || hit.message_id;
    return id ? byId.get(id) || null : null;
  }

  async function runRecall(event) {
    event.preventDefault();
    const status = $("recall-status");
    const list = $("recall-hits");
    const query = $("recall-query").value.trim();
    if (!query) return;
    const body = { query };
    const topK = parseInt($("recall-top-k").value, 10);
    if (Number.isFinite(topK) && topK > 0) body.top_k = topK;
    if (state.thread && $("recall-this-thread").checked) body.thread_id = state.thread.id;
    status.textContent = "Recalling…";
    clear(list);
    clear($("recall-warnings"));
    const fresh = ticket("recall");
    let data;
    try {
      data = await api("POST", "/v1/recall", body);
    } catch (err) {
      if (!fresh()) return;
      status.textContent = "";
      fail(err, "Recall");
      return;
    }
    if (!fresh()) return;
    const byId = new Map((data.messages || []).map((m) => [m.id, m]));
    const hits = data.hits || [];
    status.textContent = hits.length ? plural(hits.length, "hit") : "No hits.";
    for (const warning of data.warnings || []) $("recall-warnings").append(el("p", { class: "warning", text: warning }));
    for (const hit of hits) list.append(hitItem(hit, byId));
  }

  function hitItem(hit, byId) {
    const message = hitMessage(hit, byId);
    const threadId = hit.thread_id || (message && message.thread_id) || null;
    const score = typeof hit.score === "number" ? hit.score.toFixed(3) : String(hit.score ?? "");
    const sources = el("span", { class: "sources" });
    for (const source of hitSources(hit)) sources.append(el("span", { class: `source source-${source}`, text: source }));
    const details = [];
    if (typeof hit.lexical_score === "number") details.push(`lexical ${hit.lexical_score.toFixed(3)}`);
    if (typeof hit.vector_score === "number") details.push(`vector ${hit.vector_score.toFixed(3)}`);
    const head = el("div", { class: "hit-head" },
      el("span", { class: "score", title: "fused score", text: score }),
      sources,
      details.length ? el("span", { class: "muted", text: details.join(" · ") }) : null);
    const where = el("div", { class: "hit-where" },
      message && message.role ? el("span", { class: `badge role-${message.role}`, text: message.role }) : null,
      threadId ? el("button", { type: "button", class: "link", "data-thread-id": threadId, title: `thread ${threadId}`,
        onclick: () => openThreadById(threadId), text: state.titles.get(threadId) || `thread ${threadId}` }) : null,
      timeEl(hit.created_at || (message && message.created_at)),
      hit.other_thread === true && state.thread && $("recall-this-thread").checked
        ? el("span", { class: "tag", text: "earlier conversation" }) : null);
    return el("li", { class: "hit" }, head, where,
      el("p", { class: "text", text: messageText(message) }));
  }

  // ---- wiring ----

  document.addEventListener("DOMContentLoaded", () => {
    $("key-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const key = $("key-input").value.trim();
      if (!key) return;
      sessionStorage.setItem(KEY_STORE, key);
      start();
    });
    $("change-key").addEventListener("click", () => askForKey(""));
    $("resource-select").addEventListener("change", (event) => {
      if ((event.target.value || null) !== state.resource) selectResource(event.target.value || null);
    });
    $("threads-more").addEventListener("click", () => loadThreads(true));
    $("delete-thread").addEventListener("click", deleteThread);
    $("wm-form").addEventListener("submit", saveWorkingMemory);
    $("wm-reload").addEventListener("click", loadWorkingMemory);
    for (const radio of document.querySelectorAll('input[name="wm-scope"]')) {
      radio.addEventListener("change", loadWorkingMemory);
    }
    $("recall-form").addEventListener("submit", runRecall);
    window.addEventListener("hashchange", () => { if (/[#&](key|handoff)=/.test(location.hash)) start(); });
    start();
  });
})();
