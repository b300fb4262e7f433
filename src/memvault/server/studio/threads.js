// The left column: the resource's counts, and its threads with a preview of each one's last
// message; filtered by title and metadata and ordered (when the server has the thread queries).
"use strict";

import { $, api, emit, fail, q, segment, state, ticket } from "./core.js";
import { clear, el, messageText, plural, setStatus, timeEl, userText } from "./dom.js";

const THREAD_PAGE = 20;
const PREVIEWS_AT_ONCE = 4;
const STAT_LABELS = [
  ["threads", "Threads"], ["messages", "Messages"], ["summaries", "Summaries"],
  ["working_memories", "Working memories"], ["states", "States"],
];

let cursor = null; // next_cursor of the thread list
let total = null;  // the resource's thread count (from the stats)

export async function loadStats() {
  const box = $("stats");
  const fresh = ticket("stats");
  let stats;
  try { stats = await api("GET", "/v1/stats"); } catch (err) { if (fresh()) fail(err, "Loading stats"); return; }
  if (!fresh()) return;
  clear(box);
  total = typeof stats.threads === "number" ? stats.threads : null;
  const known = new Set(STAT_LABELS.map(([name]) => name));
  const rows = STAT_LABELS.filter(([name]) => name in stats);
  for (const name of Object.keys(stats)) {
    if (!known.has(name) && typeof stats[name] === "number") rows.push([name, name.replace(/_/g, " ")]);
  }
  for (const [name, label] of rows) {
    box.append(el("div", { class: "stat", "data-stat": name },
      el("dt", { text: label, title: label }), el("dd", { text: stats[name] })));
  }
}

// ---- filters (GET /v1/threads/count tells whether the server has them) ----

/** Whether this server answers the thread queries: ``GET /v1/threads/count`` is a count (an older
 * server reads "count" as a thread id: 404). */
export async function detectThreadQueries() {
  try {
    const answer = await api("GET", "/v1/threads/count");
    state.features.threadQueries = Boolean(answer) && typeof answer.count === "number";
  } catch (_) {
    state.features.threadQueries = false;
  }
  $("thread-filter").hidden = !state.features.threadQueries;
  return state.features.threadQueries;
}

/** The filter's query parameters, or null (with the reason shown) when the metadata is not a
 * JSON object. */
function filterParams() {
  if (!state.features.threadQueries) return {};
  const status = $("filter-status");
  setStatus(status, "");
  const params = { title_contains: $("filter-title").value };
  const metadata = $("filter-metadata").value.trim();
  if (metadata) {
    let parsed;
    try { parsed = JSON.parse(metadata); } catch (_) { parsed = undefined; }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
      setStatus(status, 'Metadata: write a JSON object, like {"project": "travel"}', false);
      return null;
    }
    params.metadata = JSON.stringify(parsed);
  }
  const [orderBy, direction] = $("filter-order").value.split(":");
  if (orderBy !== "updated_at" || direction !== "desc") Object.assign(params, { order_by: orderBy, direction });
  return params;
}

function filtering(params) {
  return Boolean(params.title_contains || params.metadata);
}

async function loadCount(params) {
  const label = $("threads-count");
  const fresh = ticket("thread-count");
  if (!state.features.threadQueries) { label.textContent = total === null ? "" : plural(total, "thread"); return; }
  let answer;
  try {
    answer = await api("GET", `/v1/threads/count${q({ title_contains: params.title_contains, metadata: params.metadata })}`);
  } catch (err) { if (fresh()) { label.textContent = ""; fail(err, "Counting threads"); } return; }
  if (!fresh()) return;
  label.textContent = filtering(params) && total !== null
    ? `${answer.count} of ${plural(total, "thread")}` : plural(answer.count, "thread");
}

// ---- the list ----

/** The first page of threads (``more``: the next page, appended). */
export async function loadThreads(more) {
  const list = $("threads");
  const params = filterParams();
  if (params === null) return;
  const fresh = ticket("threads");
  if (!more) loadCount(params);
  let page;
  try {
    page = await api("GET", `/v1/threads${q({ limit: THREAD_PAGE, cursor: more ? cursor : null, ...params })}`);
  } catch (err) { if (fresh()) fail(err, "Listing threads"); return; }
  if (!fresh()) return;
  if (!more) clear(list);
  const added = [];
  for (const thread of page.threads || []) {
    state.titles.set(thread.id, thread.title || null);
    const item = threadItem(thread);
    added.push([thread, item]);
    list.append(item);
  }
  cursor = page.next_cursor || null;
  $("threads-more").hidden = !cursor;
  const empty = $("threads-empty");
  empty.textContent = filtering(params) ? "No thread matches." : "No threads yet.";
  empty.hidden = list.children.length > 0;
  markCurrentThread();
  loadPreviews(added, fresh);
}

function threadItem(thread) {
  const button = el("button", { type: "button", class: "thread", "data-thread-id": thread.id,
    onclick: () => emit("open-thread", thread) },
  userText("span", "thread-title", thread.title || thread.id),
  el("span", { class: "thread-preview muted", "aria-hidden": "true" }),
  el("span", { class: "thread-meta" }, "updated ", timeEl(thread.updated_at)));
  return el("li", {}, button);
}

/** Fill each thread's preview (its last message), a few requests at a time. */
async function loadPreviews(items, fresh) {
  const queue = [...items];
  const worker = async () => {
    while (queue.length && fresh()) {
      const [thread, item] = queue.shift();
      let last;
      try {
        last = ((await api("GET", `/v1/threads/${segment(thread.id)}/messages${q({ last_n: 1 })}`)).messages || [])[0];
      } catch (_) { continue; } // a preview is a nicety: a thread deleted meanwhile has none
      if (fresh()) showPreview(item, last);
    }
  };
  await Promise.all(Array.from({ length: PREVIEWS_AT_ONCE }, worker));
}

function showPreview(item, last) {
  const preview = item.querySelector(".thread-preview");
  preview.removeAttribute("aria-hidden");
  preview.dir = "auto";
  preview.classList.add("user-text");
  preview.textContent = last ? `${last.role}: ${messageText(last)}` : "(no messages)";
  const meta = item.querySelector(".thread-meta");
  if (last && last.seq !== null && last.seq !== undefined && !meta.querySelector(".last-seq")) {
    meta.append(el("span", { class: "last-seq", text: ` · last #${last.seq}` }));
  }
}

/** Refresh one thread's preview (its messages changed). */
export async function refreshPreview(thread) {
  const button = findThread(thread.id);
  if (!button) return;
  let last;
  try {
    last = ((await api("GET", `/v1/threads/${segment(thread.id)}/messages${q({ last_n: 1 })}`)).messages || [])[0];
  } catch (_) { return; }
  const meta = button.querySelector(".last-seq");
  if (meta) meta.remove();
  showPreview(button.parentElement, last);
}

function findThread(threadId) {
  for (const button of document.querySelectorAll("#threads button.thread")) {
    if (button.dataset.threadId === threadId) return button;
  }
  return null;
}

/** Show a renamed thread's new title in the list. */
export function retitle(thread) {
  state.titles.set(thread.id, thread.title || null);
  const button = findThread(thread.id);
  if (button) button.querySelector(".thread-title").textContent = thread.title || thread.id;
}

export function markCurrentThread() {
  for (const button of document.querySelectorAll("#threads button.thread")) {
    if (state.thread && button.dataset.threadId === state.thread.id) button.setAttribute("aria-current", "true");
    else button.removeAttribute("aria-current");
  }
}

export function clearThreads() {
  ticket("threads");
  clear($("stats"));
  clear($("threads"));
  $("threads-count").textContent = "";
  $("threads-more").hidden = true;
  state.titles.clear();
}

/** Wire the filter (once, at start): typing filters after a short pause. */
export function wireThreads() {
  $("threads-more").addEventListener("click", () => loadThreads(true));
  let pause = null;
  const later = () => { clearTimeout(pause); pause = setTimeout(() => loadThreads(false), 250); };
  $("filter-title").addEventListener("input", later);
  $("filter-metadata").addEventListener("input", later);
  $("filter-order").addEventListener("change", () => loadThreads(false));
  $("thread-filter").addEventListener("submit", (event) => { event.preventDefault(); loadThreads(false); });
}
