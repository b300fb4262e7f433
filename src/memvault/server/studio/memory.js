// The working-memory tab: the resource's note, or the open thread's own note; edit and save.
"use strict";

import { $, api, emit, fail, isAuthError, q, state, ticket } from "./core.js";
import { formatTime, setStatus } from "./dom.js";

/** The id of the thread whose note is shown (null: the resource's). */
function wmThreadId() {
  return state.thread && $("wm-scope-thread").checked ? state.thread.id : null;
}

export function showingThreadNote() {
  return wmThreadId() !== null;
}

export async function loadWorkingMemory() {
  const text = $("wm-text");
  const status = $("wm-status");
  const threadId = wmThreadId();
  $("wm-label").textContent = threadId
    ? `Content: thread ${state.thread.title || threadId}`
    : `Content: resource ${state.resource}`;
  setStatus(status, "");
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

async function saveWorkingMemory(event) {
  event.preventDefault();
  const status = $("wm-status");
  const body = { content: $("wm-text").value };
  const threadId = wmThreadId();
  if (threadId) body.thread_id = threadId;
  $("wm-save").disabled = true;
  setStatus(status, "Saving…");
  try {
    const data = await api("PUT", "/v1/working-memory", body);
    if (data && typeof data.content === "string") $("wm-text").value = data.content;
    setStatus(status, `Saved at ${formatTime(new Date().toISOString())}`, true);
    emit("stats-changed");
  } catch (err) {
    if (isAuthError(err)) fail(err, "Saving working memory");
    else setStatus(status, `Save failed: ${err.message}`, false);
  } finally {
    $("wm-save").disabled = false;
  }
}

/** The thread scope follows the open thread (none open: back to the resource's note). */
export function followThread(thread) {
  $("wm-scope-thread").disabled = !thread;
  if (!thread) document.querySelector('input[name="wm-scope"][value="resource"]').checked = true;
}

export function wireWorkingMemory() {
  $("wm-form").addEventListener("submit", saveWorkingMemory);
  $("wm-reload").addEventListener("click", loadWorkingMemory);
  for (const radio of document.querySelectorAll('input[name="wm-scope"]')) {
    radio.addEventListener("change", loadWorkingMemory);
  }
}
