// memvault Studio: a small page over the HTTP API (/v1/...). Plain JavaScript modules, no build
// step, nothing loaded from elsewhere. This module signs in, picks the resource, runs the side
// panel's tabs and connects the panels (see core.js for the events they send).
"use strict";

import { $, api, newGeneration, on, showError, state } from "./core.js";
import { clear, el, plural } from "./dom.js";
import * as lookup from "./lookup.js";
import * as memory from "./memory.js";
import * as states from "./states.js";
import * as threads from "./threads.js";
import * as timeline from "./timeline.js";

const KEY_STORE = "memvault.studio.key";
const RESOURCE_STORE = "memvault.studio.resource";
const SIDE_STORE = "memvault.studio.side";

// ---- the key ----

function askForKey(message) {
  newGeneration(); // answers still on their way are for the old key: dropped
  sessionStorage.removeItem(KEY_STORE);
  state.key = null;
  state.me = null;
  showError(message || "");
  $("studio").hidden = true;
  $("change-key").hidden = true;
  $("toggle-side").hidden = true;
  $("resource-picker").hidden = true;
  $("who").textContent = "";
  $("key-form").hidden = false;
  $("key-input").value = "";
  $("key-input").focus();
}

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
    askForKey(err.status === 401 ? `The key was refused: ${err.message}` : `Could not check the key: ${err.message}`);
    return;
  }
  state.me = me;
  $("key-form").hidden = true;
  $("change-key").hidden = false;
  $("toggle-side").hidden = false;
  $("studio").hidden = false;
  const who = me.admin ? "admin key" : "resource key";
  $("who").textContent = `${me.name || me.key_id || "key"} · ${who}` + (me.admin ? "" : ` · resource ${me.resource_id}`);
  if (me.admin) {
    await loadResources();
  } else {
    $("resource-picker").hidden = true;
    await selectResource(me.resource_id);
  }
}

// ---- the resource ----

async function loadResources() {
  const select = $("resource-select");
  $("resource-picker").hidden = false;
  let data;
  try {
    data = await api("GET", "/v1/resources", undefined, { scoped: false });
  } catch (err) {
    if (err.status === 401) askForKey(`The key was refused (${err.message}). Enter a valid key.`);
    else showError(`Listing resources failed: ${err.message}`);
    return;
  }
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
    select.append(el("option", { value: r.resource_id,
      text: `${r.resource_id} (${plural(r.threads, "thread")}, ${plural(r.messages, "message")})` }));
  }
  const remembered = sessionStorage.getItem(RESOURCE_STORE);
  const pick = resources.some((r) => r.resource_id === remembered) ? remembered : resources[0].resource_id;
  select.value = pick;
  await selectResource(pick);
}

async function selectResource(resourceId) {
  newGeneration();
  state.resource = resourceId;
  if (resourceId && state.me && state.me.admin) sessionStorage.setItem(RESOURCE_STORE, resourceId);
  showError("");
  lookup.clearLookups();
  states.clearStates();
  threads.clearThreads();
  timeline.showThread(null); // and the resource's working memory
  if (!resourceId) return;
  await Promise.all([
    threads.loadStats().then(() => threads.detectThreadQueries()).then(() => threads.loadThreads(false)),
    states.detectStates().then((present) => { if (!present && selectedTab() === "tab-states") selectTab("tab-wm"); }),
  ]);
}

// ---- the side panel: tabs, and hiding it to widen the timeline ----

const tabs = () => [...document.querySelectorAll('#side [role="tab"]')].filter((tab) => !tab.hidden);

function selectedTab() {
  const tab = document.querySelector('#side [role="tab"][aria-selected="true"]');
  return tab ? tab.id : null;
}

function selectTab(id, focus = false) {
  for (const tab of document.querySelectorAll('#side [role="tab"]')) {
    const chosen = tab.id === id;
    tab.setAttribute("aria-selected", String(chosen));
    tab.tabIndex = chosen ? 0 : -1;
    $(tab.getAttribute("aria-controls")).hidden = !chosen;
    if (chosen && focus) tab.focus();
  }
  if (id === "tab-states") states.loadStates();
}

function tabKeys(event) {
  const shown = tabs();
  const at = shown.findIndex((tab) => tab.id === selectedTab());
  const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: shown.length - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  selectTab(shown[(moves[event.key] + shown.length) % shown.length].id, true);
}

function showSide(shown) {
  $("side").hidden = !shown;
  $("studio").classList.toggle("side-hidden", !shown);
  $("toggle-side").setAttribute("aria-expanded", String(shown));
  $("toggle-side").textContent = shown ? "Hide side panel" : "Show side panel";
  sessionStorage.setItem(SIDE_STORE, shown ? "shown" : "hidden");
}

// ---- wiring ----

function wire() {
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
  for (const tab of document.querySelectorAll('#side [role="tab"]')) {
    tab.addEventListener("click", () => selectTab(tab.id));
    tab.addEventListener("keydown", tabKeys);
  }
  $("toggle-side").addEventListener("click", () => showSide($("side").hidden));
  showSide(sessionStorage.getItem(SIDE_STORE) !== "hidden");

  threads.wireThreads();
  timeline.wireTimeline();
  memory.wireWorkingMemory();
  lookup.wireLookups();
  states.wireStates();

  on("key-refused", askForKey);
  on("open-thread", (thread) => timeline.openThread(thread));
  on("open-at", ({ threadId, messageId }) => timeline.openAt(threadId, messageId));
  on("thread-shown", (thread) => {
    threads.markCurrentThread();
    memory.followThread(thread);
    lookup.followThread(thread);
    states.followThread(thread);
    if (!thread && state.resource) memory.loadWorkingMemory();
  });
  on("thread-opened", () => { if (memory.showingThreadNote()) memory.loadWorkingMemory(); });
  on("thread-renamed", (thread) => threads.retitle(thread));
  on("thread-deleted", () => threads.loadStats().then(() => threads.loadThreads(false)));
  on("messages-changed", (thread) => { threads.loadStats(); threads.refreshPreview(thread); });
  on("stats-changed", () => threads.loadStats());
  window.addEventListener("hashchange", () => { if (/[#&](key|handoff)=/.test(location.hash)) start(); });
  start();
}

wire();
