// Writes a larger database for measuring the import: node bulk.mjs voltagent|mastra PATH
// CONVERSATIONS MESSAGES (per conversation), through the libraries' public APIs, messages with
// text, and every fourth one a tool call with its result.
import { Memory as VoltMemory } from "@voltagent/core";
import { LibSQLMemoryAdapter } from "@voltagent/libsql";
import { Memory as MastraMemory } from "@mastra/memory";
import { LibSQLStore } from "@mastra/libsql";

console.log = console.error;
const [system, path, conversations = "50", perConversation = "200"] = process.argv.slice(2);
const nConv = Number(conversations), nMsg = Number(perConversation);
const text = (c, i) => `conversation ${c} message ${i}: the quick brown fox jumps over the lazy dog`;

if (system === "voltagent") {
  const storage = new LibSQLMemoryAdapter({ url: `file:${path}` });
  const memory = new VoltMemory({ storage });
  for (let c = 0; c < nConv; c++) {
    const userId = `user-${c % 10}`;
    await memory.createConversation({ id: `c${c}`, resourceId: "agent", userId, title: `C${c}`, metadata: {} });
    const messages = [];
    for (let i = 0; i < nMsg; i++) {
      const parts = i % 4 === 3
        ? [{ type: "tool-lookup", toolCallId: `t${c}-${i}`, state: "output-available", input: { q: i }, output: { n: i } }]
        : [{ type: "text", text: text(c, i) }];
      messages.push({ id: `c${c}-m${i}`, role: i % 2 ? "assistant" : "user", parts });
    }
    await memory.addMessages(messages, userId, `c${c}`);
  }
  await storage.close?.();
} else {
  const storage = new LibSQLStore({ id: "bulk", url: `file:${path}` });
  await storage.init();
  const memory = new MastraMemory({ storage });
  const base = Date.parse("2026-01-01T00:00:00.000Z");
  for (let c = 0; c < nConv; c++) {
    const resourceId = `user-${c % 10}`;
    await memory.saveThread({ thread: { id: `c${c}`, resourceId, title: `C${c}`, metadata: {},
      createdAt: new Date(base), updatedAt: new Date(base) } });
    const messages = [];
    for (let i = 0; i < nMsg; i++) {
      const parts = i % 4 === 3
        ? [{ type: "tool-invocation", toolInvocation: { state: "result", toolCallId: `t${c}-${i}`, toolName: "lookup",
            args: { q: i }, result: { n: i } } }]
        : [{ type: "text", text: text(c, i) }];
      messages.push({ id: `c${c}-m${i}`, threadId: `c${c}`, resourceId, role: i % 2 ? "assistant" : "user",
        createdAt: new Date(base + c * 1e6 + i * 1000), content: { format: 2, parts } });
    }
    await memory.saveMessages({ messages });
  }
  await storage.close();
}
process.stdout.write(JSON.stringify({ system, path, conversations: nConv, messages: nConv * nMsg }) + "\n");
