// The States tab: the resource's workflow states (GET /v1/states), by workflow id, status,
// suspended runs or the open thread; each with its value, and a delete. Shown only when the
// server answers GET /v1/states (an older server has no such route: 404).
"use strict";

import { $, api, emit, fail, q, segment, state, ticket } from "./core.js";
import { clear, el, json, plural, setStatus, timeEl, userText } from "./dom.js";

const LIMIT = 100;

/** Whether this server answers the state queries; the States tab shows only then. */
export async function detectStates() {
  try {
    const answer = await api("GET", `/v1/states${q({ limit: 1 })}`);
    state.features.states = Boolean(answer) && Array.isArray(answer.states);
  } catch (_) {
    state.features.states = false;
  }
  $("tab-states").hidden = !state.features.states;
  return state.features.states;
}

export async function loadStates(event) {
  if (event) event.preventDefault();
  if (!state.features.states) return;
  const status = $("states-status-line");
  const list = $("states");
  const params = {
    workflow_id: $("states-workflow").value.trim(),
    // "suspended only" is the status "suspended": the status box is off meanwhile
    status: $("states-suspended").checked ? null : $("states-status").value.trim(),
    suspended: $("states-suspended").checked ? "true" : null,
    thread_id: state.thread && $("states-this-thread").checked ? state.thread.id : null,
    limit: LIMIT,
  };
  setStatus(status, "Listing…");
  const fresh = ticket("states");
  let data;
  try {
    data = await api("GET", `/v1/states${q(params)}`);
  } catch (err) {
    if (!fresh()) return;
    setStatus(status, "");
    fail(err, "Listing states");
    return;
  }
  if (!fresh()) return;
  clear(list);
  const states = data.states || [];
  setStatus(status, states.length ? plural(states.length, "state") : "No state matches.");
  for (const record of states) list.append(stateItem(record));
}

function stateItem(record) {
  const thread = record.thread_id
    ? el("button", { type: "button", class: "link", "data-thread-id": record.thread_id,
      onclick: () => emit("open-thread", { id: record.thread_id, title: state.titles.get(record.thread_id) || null }) },
    userText("span", "state-thread", state.titles.get(record.thread_id) || `thread ${record.thread_id}`))
    : null;
  return el("li", { class: "hit state", "data-state-key": record.key },
    el("div", { class: "hit-top" },
      userText("code", "state-key", record.key),
      el("button", { type: "button", class: "link danger", text: "Delete", "aria-label": `Delete state ${record.key}`,
        onclick: () => deleteState(record) })),
    el("div", { class: "hit-where" },
      record.status ? userText("span", "tag state-status", record.status) : null,
      record.workflow_id ? el("span", {}, "workflow ", userText("code", "", record.workflow_id)) : null,
      thread,
      el("span", { text: `v${record.version}` }),
      timeEl(record.updated_at)),
    el("details", { class: "data" }, el("summary", { text: "Value" }), el("pre", { text: json(record.value) })));
}

async function deleteState(record) {
  if (!window.confirm(`Delete the state "${record.key}"?`)) return;
  try {
    await api("DELETE", `/v1/states/${segment(record.key)}`);
  } catch (err) { fail(err, "Deleting the state"); return; }
  emit("stats-changed");
  await loadStates();
}

export function followThread(thread) {
  $("states-this-thread").disabled = !thread;
  if (!thread) $("states-this-thread").checked = false;
}

export function clearStates() {
  clear($("states"));
  setStatus($("states-status-line"), "");
}

export function wireStates() {
  $("states-form").addEventListener("submit", loadStates);
  $("states-suspended").addEventListener("change", () => {
    $("states-status").disabled = $("states-suspended").checked;
  });
}
