// The timeline: one thread's messages, a page at a time. It opens at the newest message (or at
// one message, highlighted, with its neighbours), pages back and forward keeping the reader's
// place, and renames, deletes messages and deletes the thread.
"use strict";

import { $, api, emit, fail, q, segment, showError, state, ticket } from "./core.js";
import { clear, el, userText } from "./dom.js";
import { messageItem, pairing } from "./messages.js";

/** Messages per page (the newest page on open; older and newer pages on demand). */
export const PAGE = 200;
const FAR_FROM_LATEST = 240; // px from the bottom where "Jump to latest" shows

const view = {
  messages: [],        // the loaded messages, in thread order
  hasOlder: false,     // older messages exist before the first one loaded
  hasNewer: false,     // newer messages exist after the last one loaded
  highlight: null,     // the id of the highlighted message (opened from a hit)
  items: new Map(),    // message id -> its <li>
};

const box = () => $("timeline-scroll");
const messagesPath = (threadId, params) => `/v1/threads/${segment(threadId)}/messages${q(params)}`;

/** Show ``thread`` (or nothing) in the timeline's header and controls; its messages are not
 * loaded here (see openThread). */
export function showThread(thread) {
  ticket("thread"); // an older thread still loading is not shown
  state.thread = thread;
  view.messages = [];
  view.items = new Map();
  view.hasOlder = view.hasNewer = false;
  view.highlight = null;
  $("delete-thread").hidden = !thread;
  $("rename-thread").hidden = !thread;
  $("rename-form").hidden = true;
  showTitle();
  $("timeline-hint").hidden = Boolean(thread);
  clear($("timeline"));
  updateJump();
  emit("thread-shown", thread);
}

function showTitle() {
  const thread = state.thread;
  const title = $("timeline-title");
  clear(title);
  title.append("Timeline");
  if (thread) title.append(": ", userText("span", "thread-name", thread.title || thread.id));
}

/** Open ``thread`` at its newest message, or with ``at`` (a message id) at that message,
 * highlighted, with up to PAGE/2 messages each side. */
export async function openThread(thread, at = null) {
  showError("");
  showThread(thread);
  const list = $("timeline");
  list.setAttribute("aria-busy", "true");
  const fresh = ticket("thread");
  // one more message than shown on each open side tells whether there are more beyond it
  const params = at === null ? { last_n: PAGE + 1 } : { around: at, range: PAGE / 2 + 1 };
  let messages;
  try {
    const [page, full] = await Promise.all([
      api("GET", messagesPath(thread.id, params)),
      thread.created_at ? thread : api("GET", `/v1/threads/${segment(thread.id)}`),
    ]);
    messages = page.messages || [];
    if (fresh() && full !== thread) { state.thread = full; showTitle(); }
  } catch (err) {
    if (fresh()) {
      list.removeAttribute("aria-busy");
      fail(err, at === null ? "Loading the thread" : "Opening the thread at the message");
    }
    return;
  }
  if (!fresh()) return;
  if (at === null) {
    view.hasOlder = messages.length > PAGE;
    view.hasNewer = false;
    if (view.hasOlder) messages = messages.slice(1);
  } else {
    const index = messages.findIndex((m) => m.id === at);
    view.hasOlder = index > PAGE / 2;
    view.hasNewer = messages.length - 1 - index > PAGE / 2;
    messages = messages.slice(view.hasOlder ? 1 : 0, view.hasNewer ? -1 : undefined);
  }
  view.messages = messages;
  view.highlight = at;
  render();
  list.removeAttribute("aria-busy");
  if (at === null) toLatest();
  else reveal(at);
  emit("thread-opened", state.thread);
}

/** Open ``threadId`` at ``messageId`` (already loaded: scroll to it), highlighted. */
export async function openAt(threadId, messageId) {
  if (state.thread && state.thread.id === threadId && view.items.has(messageId)) {
    view.highlight = messageId;
    for (const [id, item] of view.items) item.classList.toggle("highlight", id === messageId);
    reveal(messageId);
    return;
  }
  const known = state.thread && state.thread.id === threadId ? state.thread : null;
  await openThread(known || { id: threadId, title: state.titles.get(threadId) || null }, messageId);
}

function reveal(messageId) {
  const item = view.items.get(messageId);
  if (!item) return;
  item.scrollIntoView({ block: "center" });
  item.focus({ preventScroll: true });
  updateJump();
}

function toLatest() {
  box().scrollTop = box().scrollHeight;
  updateJump();
}

function updateJump() {
  const scroller = box();
  const far = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight > FAR_FROM_LATEST;
  $("jump-latest").hidden = !state.thread || !(view.hasNewer || far);
}

/** Scroll to the newest message, loading the newest page first when it is not loaded. */
async function jumpToLatest() {
  if (!state.thread) return;
  if (view.hasNewer) await openThread(state.thread);
  else toLatest();
}

// ---- rendering, keeping the reader's place ----

function render() {
  const links = pairing(view.messages);
  const fragment = document.createDocumentFragment();
  view.items = new Map();
  if (view.hasOlder) fragment.append(pager("timeline-older", "Load older messages", loadOlder));
  for (const message of view.messages) fragment.append(itemOf(message, links, view.items));
  if (!view.messages.length) fragment.append(el("li", { class: "muted", text: "This thread has no messages." }));
  if (view.hasNewer) fragment.append(pager("timeline-newer", "Load newer messages", loadNewer));
  $("timeline").replaceChildren(fragment);
  updateJump();
}

function itemOf(message, { results, calls, callSeq }, items) {
  const item = messageItem(message, { results, calls, callSeq, onDelete: deleteMessage, onShowCall: showCall });
  if (message.id === view.highlight) item.classList.add("highlight");
  items.set(message.id, item);
  return item;
}

/** Whether a tool call and its result sit on both sides of a page's edge (the loaded items
 * would then change: render them all again). */
function pairsAcross(page) {
  const loaded = pairing(view.messages);
  const added = pairing(page);
  return [...added.calls].some((id) => loaded.results.has(id)) ||
    [...added.results.keys()].some((id) => loaded.calls.has(id));
}

/** Add a page of older or newer messages without building the loaded ones again. */
function addPage(page, older, more) {
  if (pairsAcross(page)) {
    view.messages = older ? [...page, ...view.messages] : [...view.messages, ...page];
    if (older) view.hasOlder = more; else view.hasNewer = more;
    render();
    return;
  }
  const all = older ? [...page, ...view.messages] : [...view.messages, ...page];
  const links = pairing(all);
  const items = new Map();
  const fragment = document.createDocumentFragment();
  for (const message of page) fragment.append(itemOf(message, links, items));
  const list = $("timeline");
  const edge = $(older ? "timeline-older" : "timeline-newer");
  if (edge) edge.closest("li").remove();
  if (older) {
    if (more) fragment.prepend(pager("timeline-older", "Load older messages", loadOlder));
    list.prepend(fragment);
    view.items = new Map([...items, ...view.items]);
    view.hasOlder = more;
  } else {
    if (more) fragment.append(pager("timeline-newer", "Load newer messages", loadNewer));
    list.append(fragment);
    view.items = new Map([...view.items, ...items]);
    view.hasNewer = more;
  }
  view.messages = all;
  updateJump();
}

function pager(id, label, load) {
  return el("li", { class: "pager" }, el("button", { type: "button", id, text: label, onclick: load }));
}

function showCall(toolCallId) {
  for (const item of view.items.values()) {
    const call = item.querySelector(`[data-tool-call-id="${CSS.escape(toolCallId)}"]`);
    if (call) { call.scrollIntoView({ block: "center" }); return; }
  }
}

/** The first message in view and how far below the top of the timeline it is. */
function anchor() {
  const top = box().getBoundingClientRect().top;
  for (const [id, item] of view.items) {
    const rect = item.getBoundingClientRect();
    if (rect.bottom > top) return { id, offset: rect.top - top };
  }
  return null;
}

/** Scroll so that the anchored message is where it was (after messages came or went above it). */
function restore(place) {
  const item = place && view.items.get(place.id);
  if (!item) return;
  box().scrollTop += item.getBoundingClientRect().top - box().getBoundingClientRect().top - place.offset;
  updateJump();
}

async function loadPage(direction) {
  const thread = state.thread;
  if (!thread || !view.messages.length) return;
  const older = direction === "older";
  const edge = older ? view.messages[0].id : view.messages[view.messages.length - 1].id;
  const button = $(older ? "timeline-older" : "timeline-newer");
  if (button) button.disabled = true;
  const fresh = ticket("thread");
  let page;
  try {
    const params = older ? { before: edge, last_n: PAGE + 1 } : { after: edge, first_n: PAGE + 1 };
    page = (await api("GET", messagesPath(thread.id, params))).messages || [];
  } catch (err) {
    if (fresh()) { if (button) button.disabled = false; fail(err, `Loading ${direction} messages`); }
    return;
  }
  if (!fresh()) return;
  const place = anchor();
  const more = page.length > PAGE; // the one extra message: there are more beyond this page
  const shown = more ? (older ? page.slice(1) : page.slice(0, -1)) : page;
  addPage(shown, older, more);
  restore(place);
}

const loadOlder = () => loadPage("older");
const loadNewer = () => loadPage("newer");

// ---- changes ----

async function deleteMessage(message) {
  const thread = state.thread;
  if (!thread) return;
  const name = message.seq !== null && message.seq !== undefined ? `#${message.seq}` : message.id;
  if (!window.confirm(`Delete message ${name} of this thread, with its derived data?`)) return;
  try {
    await api("DELETE", `/v1/threads/${segment(thread.id)}/messages/${segment(message.id)}`);
  } catch (err) { fail(err, "Deleting the message"); return; }
  if (state.thread !== thread) return;
  const place = anchor();
  view.messages = view.messages.filter((m) => m.id !== message.id);
  render();
  restore(place && place.id === message.id ? null : place);
  emit("messages-changed", thread);
}

function startRename() {
  if (!state.thread) return;
  $("rename-form").hidden = false;
  $("rename-input").value = state.thread.title || "";
  $("rename-input").focus();
  $("rename-input").select();
}

async function saveRename(event) {
  event.preventDefault();
  const thread = state.thread;
  if (!thread) return;
  const title = $("rename-input").value.trim();
  let changed;
  try {
    changed = await api("PATCH", `/v1/threads/${segment(thread.id)}`, { title: title || null });
  } catch (err) { fail(err, "Renaming the thread"); return; }
  if (state.thread !== thread) return;
  state.thread = changed;
  $("rename-form").hidden = true;
  showTitle();
  emit("thread-renamed", changed);
}

async function deleteThread() {
  const thread = state.thread;
  if (!thread) return;
  if (!window.confirm(`Delete the thread "${thread.title || thread.id}" and all its messages?`)) return;
  try {
    await api("DELETE", `/v1/threads/${segment(thread.id)}`);
  } catch (err) { fail(err, "Deleting the thread"); return; }
  showThread(null);
  emit("thread-deleted", thread);
}

/** Wire the timeline's controls (once, at start). */
export function wireTimeline() {
  box().addEventListener("scroll", updateJump, { passive: true });
  $("jump-latest").addEventListener("click", jumpToLatest);
  $("rename-thread").addEventListener("click", startRename);
  $("rename-form").addEventListener("submit", saveRename);
  $("rename-cancel").addEventListener("click", () => { $("rename-form").hidden = true; });
  $("rename-input").addEventListener("keydown", (event) => {
    if (event.key === "Escape") $("rename-form").hidden = true;
  });
  $("delete-thread").addEventListener("click", deleteThread);
}
