// Small DOM helpers. Every piece of stored data goes in with textContent (never innerHTML), so a
// message cannot inject markup or scripts into the page.
"use strict";

/** An element: attrs ("class", "text" for textContent, "on<event>" listeners, else attributes). */
export function el(tag, attrs, ...children) {
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

/** Stored text (a title, a message): isolated from the page's direction, so right-to-left or
 * bidi-override characters in it cannot reorder the text around it. */
export function userText(tag, cls, text) {
  return el(tag, { class: `${cls} user-text`, dir: "auto", text: text ?? "" });
}

export function clear(node) { node.replaceChildren(); }

export function plural(n, word) {
  if (typeof n !== "number") return `? ${word}s`;
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function pad(n) { return String(n).padStart(2, "0"); }

export function formatTime(value) {
  if (!value) return "";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}

export function timeEl(value) {
  return el("time", { datetime: value || null, text: formatTime(value) });
}

export function json(value) {
  if (typeof value === "string") return value;
  try { return JSON.stringify(value, null, 2); } catch (_) { return String(value); }
}

export function setStatus(node, message, ok) {
  node.textContent = message;
  node.className = ok === undefined ? "status" : `status ${ok ? "ok" : "bad"}`;
}

/** A message's text parts (or its tool calls and results named), for hits and previews. */
export function messageText(message) {
  if (!message) return "";
  const texts = (message.parts || []).filter((p) => p.type === "text").map((p) => p.text);
  if (texts.length) return texts.join("\n");
  const calls = (message.parts || []).filter((p) => p.type === "tool-call" || p.type === "tool-result");
  return calls.map((p) => `${p.type} ${p.name || p.tool_call_id}`).join(", ");
}
