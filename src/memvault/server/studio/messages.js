// One message of the timeline, as elements: its parts (text, reasoning, tool calls with their
// results, files, data), its metadata, and its delete button.
"use strict";

import { el, json, timeEl, userText } from "./dom.js";

/** Tool results by tool_call_id, the ids of the calls loaded, and the seq of each call's message:
 * a result is shown under its call wherever it was stored. */
export function pairing(messages) {
  const results = new Map();
  const calls = new Set();
  const callSeq = new Map();
  for (const message of messages) {
    for (const part of message.parts || []) {
      if (part.type === "tool-result") results.set(part.tool_call_id, part);
      if (part.type === "tool-call") { calls.add(part.tool_call_id); callSeq.set(part.tool_call_id, message.seq); }
    }
  }
  return { results, calls, callSeq };
}

/** The <li> of ``message``. A message whose every part is a result shown under its call is a
 * one-line note pointing at the call, not an empty card. */
export function messageItem(message, { results, calls, callSeq, onDelete, onShowCall }) {
  const role = message.role || "unknown";
  const seq = message.seq !== null && message.seq !== undefined ? `#${message.seq}` : null;
  const head = el("header", { class: "message-head" },
    el("span", { class: `badge role-${role}`, text: role }),
    seq ? el("span", { class: "seq", text: seq }) : null,
    timeEl(message.created_at),
    el("button", { type: "button", class: "link danger delete-message", text: "Delete",
      "aria-label": `Delete message ${seq || message.id}`, onclick: () => onDelete(message) }));
  const parts = message.parts || [];
  const moved = parts.filter((p) => p.type === "tool-result" && calls.has(p.tool_call_id));
  const hasMetadata = message.metadata && Object.keys(message.metadata).length > 0;
  const item = el("li", { class: `message role-${role}`, "data-message-id": message.id, "data-role": role,
    tabindex: "-1" }, head);
  if (parts.length && moved.length === parts.length && !hasMetadata) {
    item.classList.add("compact");
    for (const part of moved) {
      const where = callSeq.get(part.tool_call_id);
      item.append(el("p", { class: "moved" }, "Result of ", el("code", { text: part.name || part.tool_call_id }),
        ` shown under its call${where !== undefined && where !== null ? ` in #${where}` : ""} `,
        el("button", { type: "button", class: "link", text: "Show", onclick: () => onShowCall(part.tool_call_id) })));
    }
    return item;
  }
  const body = el("div", { class: "message-body" });
  for (const part of parts) {
    if (part.type === "tool-result" && calls.has(part.tool_call_id)) continue; // shown with its call
    body.append(partNode(part, results));
  }
  if (hasMetadata) {
    body.append(el("details", { class: "metadata" }, el("summary", { text: "Metadata" }),
      el("pre", { text: json(message.metadata) })));
  }
  if (!body.childNodes.length) body.append(el("p", { class: "muted", text: "(no content)" }));
  item.append(body);
  return item;
}

function partNode(part, results) {
  switch (part.type) {
    case "text":
      return userText("p", "text", part.text);
    case "reasoning":
      return el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }),
        userText("p", "text", part.text));
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
