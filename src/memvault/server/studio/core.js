// The Studio's shared core: the page state, the API client, answer tickets, errors and a tiny
// event bus the panels talk through (so that no panel imports another).
"use strict";

export const state = {
  key: null,
  me: null,          // GET /v1/me
  resource: null,    // the resource being viewed
  thread: null,      // the open thread (a Thread object)
  titles: new Map(), // thread id -> title, from the thread list
  features: { threadQueries: false, states: false }, // what this server answers (feature-detected)
};

export const $ = (id) => document.getElementById(id);

// An id as one path segment: percent-encoded, dots too (a browser drops `.` and `..` segments),
// and a thread named "count" as "%63ount" (GET /v1/threads/count is the count route; the server
// decodes ids after routing).
export const segment = (id) => {
  const encoded = encodeURIComponent(id).replace(/\./g, "%2E");
  return encoded === "count" ? "%63ount" : encoded;
};

// The API is served next to the page (the page is at <root>/studio/, the API at <root>/v1/).
const API_ROOT = new URL("../", location.href);

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Call the API; the answer's JSON (null for 204), or an ApiError with the server's message. */
export async function api(method, path, body, { scoped = true } = {}) {
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

/** A query string of the non-empty parameters ("" when none). */
export function q(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// Answers can arrive out of order (a resource picked while another one loads): each load takes a
// ticket, and drops its answer when a newer load of the same panel, or another resource, came
// after it.
let generation = 0;
const tickets = {};
export function ticket(panel) {
  const mine = (tickets[panel] = (tickets[panel] || 0) + 1);
  const gen = generation;
  return () => tickets[panel] === mine && generation === gen;
}
/** Every answer still on its way is dropped (another key or resource). */
export function newGeneration() { generation += 1; }

// ---- events between panels ----

const listeners = new Map();
export function on(name, fn) {
  if (!listeners.has(name)) listeners.set(name, []);
  listeners.get(name).push(fn);
}
export function emit(name, detail) {
  for (const fn of listeners.get(name) || []) fn(detail);
}

// ---- errors ----

export function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

// 401: no key, or an unknown or revoked one (403 is a refusal of one request, shown as such).
export function isAuthError(err) {
  return err instanceof ApiError && err.status === 401;
}

/** Report a failed call; a refused key sends the user back to the key box ("key-refused"). */
export function fail(err, what) {
  if (isAuthError(err)) {
    emit("key-refused", `The key was refused (${err.message}). Enter a valid key.`);
    return;
  }
  const code = err && err.code ? ` [${err.code}]` : "";
  showError(`${what} failed: ${err && err.message ? err.message : err}${code}`);
}
