// The Recall and Search tabs. Recall runs what an agent's turn would (POST /v1/recall: words and
// meaning, fused scores); Search is the plain word search (GET /v1/search). A hit's "Open"
// opens its thread at that message, highlighted.
"use strict";

import { $, api, emit, fail, q, showError, state, ticket } from "./core.js";
import { clear, el, messageText, plural, setStatus, timeEl, userText } from "./dom.js";

function hitSources(hit) {
  const value = hit.sources ?? hit.source;
  if (Array.isArray(value)) return value.map(String);
  if (value === null || value === undefined || value === "") return [];
  if (value === "both") return ["lexical", "vector"];
  return [String(value)];
}

/** A hit's card: ``head`` (its scores), then where it is (role, thread, time), its text and an
 * Open button (to its message in the timeline). */
function hitCard(message, threadId, head, extra) {
  const messageId = message && message.id;
  const title = threadId ? state.titles.get(threadId) || `thread ${threadId}` : null;
  const where = el("div", { class: "hit-where" },
    message && message.role ? el("span", { class: `badge role-${message.role}`, text: message.role }) : null,
    message && message.seq !== null && message.seq !== undefined ? el("span", { class: "seq", text: `#${message.seq}` }) : null,
    title ? userText("span", "hit-thread", title) : null,
    timeEl(message && message.created_at),
    extra);
  const open = threadId && messageId
    ? el("button", { type: "button", class: "open-hit", "data-thread-id": threadId, "data-message-id": messageId,
      title: `Open ${title} at this message`, text: "Open",
      onclick: () => emit("open-at", { threadId, messageId }) })
    : null;
  return el("li", { class: "hit" }, el("div", { class: "hit-top" }, head, open), where,
    userText("p", "text", messageText(message)));
}

// ---- recall ----

async function runRecall(event) {
  event.preventDefault();
  const status = $("recall-status");
  const list = $("recall-hits");
  const query = $("recall-query").value.trim();
  if (!query) return;
  const body = { query };
  const topK = parseInt($("recall-top-k").value, 10);
  if (Number.isFinite(topK) && topK > 0) body.top_k = topK;
  const fromThread = state.thread && $("recall-this-thread").checked;
  if (fromThread) body.thread_id = state.thread.id;
  showError("");
  setStatus(status, "Recalling…");
  clear(list);
  clear($("recall-warnings"));
  const fresh = ticket("recall");
  let data;
  try {
    data = await api("POST", "/v1/recall", body);
  } catch (err) {
    if (!fresh()) return;
    setStatus(status, "");
    fail(err, "Recall");
    return;
  }
  if (!fresh()) return;
  const byId = new Map((data.messages || []).map((m) => [m.id, m]));
  const hits = data.hits || [];
  setStatus(status, hits.length ? plural(hits.length, "hit") : "No hits.");
  for (const warning of data.warnings || []) $("recall-warnings").append(el("p", { class: "warning", text: warning }));
  for (const hit of hits) list.append(recallHit(hit, byId, fromThread));
}

function recallHit(hit, byId, fromThread) {
  const message = hit.message && typeof hit.message === "object" ? hit.message : byId.get(hit.id || hit.message_id) || null;
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
  const earlier = hit.other_thread === true && fromThread ? el("span", { class: "tag", text: "earlier conversation" }) : null;
  return hitCard(message, threadId, head, earlier);
}

// ---- search ----

async function runSearch(event) {
  event.preventDefault();
  const status = $("search-status");
  const list = $("search-hits");
  const words = $("search-query").value.trim();
  if (!words) return;
  const threadId = state.thread && $("search-this-thread").checked ? state.thread.id : null;
  showError("");
  setStatus(status, "Searching…");
  clear(list);
  const fresh = ticket("search");
  let data;
  try {
    data = await api("GET", `/v1/search${q({ q: words, thread_id: threadId, limit: 25 })}`);
  } catch (err) {
    if (!fresh()) return;
    setStatus(status, "");
    fail(err, "Search");
    return;
  }
  if (!fresh()) return;
  const hits = data.hits || [];
  setStatus(status, hits.length ? plural(hits.length, "message") : "No message has these words.");
  for (const hit of hits) {
    const score = typeof hit.score === "number" ? hit.score.toFixed(3) : "";
    const head = el("div", { class: "hit-head" }, el("span", { class: "score", title: "word match (BM25)", text: score }));
    list.append(hitCard(hit.message, hit.message && hit.message.thread_id, head, null));
  }
}

/** The "open thread" options follow the open thread. */
export function followThread(thread) {
  for (const id of ["recall-this-thread", "search-this-thread"]) {
    $(id).disabled = !thread;
    if (!thread) $(id).checked = false;
  }
}

export function clearLookups() {
  for (const [hits, status] of [["recall-hits", "recall-status"], ["search-hits", "search-status"]]) {
    clear($(hits));
    setStatus($(status), "");
  }
  clear($("recall-warnings"));
}

export function wireLookups() {
  $("recall-form").addEventListener("submit", runRecall);
  $("search-form").addEventListener("submit", runSearch);
}
