// Writes a VoltAgent LibSQL memory database at the path given (argv[2]) with the real packages:
// two users, three conversations, messages with text, reasoning, tool, file and data parts,
// working memory at both scopes (conversation and user) and two workflow states. No model runs.
import { Memory } from "@voltagent/core";
import { LibSQLMemoryAdapter } from "@voltagent/libsql";

const path = process.argv[2];
console.log = console.error;  // keep stdout for the JSON the tests read
if (!path) throw new Error("usage: node voltagent.mjs PATH.db");
const storage = new LibSQLMemoryAdapter({ url: `file:${path}` });
const memory = new Memory({ storage });

await memory.createConversation({
  id: "conv-weather", resourceId: "weather-agent", userId: "alice",
  title: "Weather in Paris", metadata: { topic: "weather", pinned: true },
});
await memory.createConversation({
  id: "conv-notes", resourceId: "notes-agent", userId: "alice", title: "Notes", metadata: {},
});
await memory.createConversation({
  id: "conv-bob", resourceId: "weather-agent", userId: "bob", title: "Bob's files", metadata: { lang: "fr" },
});

await memory.addMessage({ id: "v-m1", role: "system", parts: [{ type: "text", text: "You are a weather bot." }] },
  "alice", "conv-weather");
await memory.addMessage({
  id: "v-m2", role: "user", metadata: { channel: "web" },
  parts: [{ type: "text", text: "What's the weather in Paris? Café au lait ☕" }],
}, "alice", "conv-weather");
await memory.addMessage({
  id: "v-m3", role: "assistant",
  parts: [
    { type: "step-start" },
    { type: "reasoning", text: "I should call the weather tool." },
    { type: "tool-getWeather", toolCallId: "call-1", state: "output-available",
      input: { city: "Paris" }, output: { tempC: 18, sky: "cloudy" } },
    { type: "dynamic-tool", toolName: "lookup", toolCallId: "call-2", state: "output-error",
      input: { q: "forecast" }, errorText: "service down" },
    { type: "text", text: "It is 18°C and cloudy in Paris." },
  ],
}, "alice", "conv-weather");
await memory.addMessage({
  id: "v-m4", role: "user",
  parts: [
    { type: "text", text: "Here is a photo and a PDF." },
    { type: "file", mediaType: "image/png", url: "https://example.com/sky.png", filename: "sky.png" },
    { type: "file", mediaType: "application/pdf", url: "data:application/pdf;base64,JVBERi0=" },
    { type: "source-url", sourceId: "s1", url: "https://example.com/source" },
    { type: "data-weather", id: "d1", data: { city: "Paris", tempC: 18 } },
  ],
}, "alice", "conv-weather");
await memory.addMessage({
  id: "v-m5", role: "assistant",
  parts: [{ type: "tool-getWeather", toolCallId: "call-3", state: "input-available", input: { city: "Lyon" } }],
}, "alice", "conv-weather");

await memory.addMessages([
  { id: "v-n1", role: "user", parts: [{ type: "text", text: "Remember that I like tea." }] },
  { id: "v-n2", role: "assistant", parts: [{ type: "text", text: "Noted: you like tea." }] },
], "alice", "conv-notes");
await memory.addMessage({ id: "v-b1", role: "user", parts: [{ type: "text", text: "Bonjour" }] }, "bob", "conv-bob");

await storage.setWorkingMemory({ conversationId: "conv-weather", scope: "conversation",
  content: "# Conversation\n- city: Paris" });
await storage.setWorkingMemory({ userId: "alice", scope: "user", content: "# User\n- likes: tea" });
await storage.setWorkingMemory({ userId: "bob", scope: "user", content: "# User\n- lang: fr" });

await storage.setWorkflowState("exec-1", {
  id: "exec-1", workflowId: "wf-onboard", workflowName: "Onboarding", status: "suspended",
  input: { email: "alice@example.com" }, workflowState: { step: 2 },
  suspension: { suspendedAt: new Date("2026-01-02T03:04:05.000Z"), reason: "awaiting approval", stepIndex: 1 },
  userId: "alice", conversationId: "conv-weather", metadata: { source: "test" },
  createdAt: new Date("2026-01-02T03:00:00.000Z"), updatedAt: new Date("2026-01-02T03:04:05.000Z"),
});
await storage.setWorkflowState("exec-2", {
  id: "exec-2", workflowId: "wf-report", workflowName: "Report", status: "completed",
  input: "weekly", output: { ok: true }, userId: "bob",
  createdAt: new Date("2026-01-03T00:00:00.000Z"), updatedAt: new Date("2026-01-03T00:01:00.000Z"),
});
await storage.setWorkflowState("exec-3", {
  id: "exec-3", workflowId: "wf-anon", workflowName: "Anonymous", status: "running",
  createdAt: new Date("2026-01-04T00:00:00.000Z"), updatedAt: new Date("2026-01-04T00:00:00.000Z"),
});

// What VoltAgent itself reads back: the tests compare the import with this, message by message.
const users = ["alice", "bob"];
const conversations = [];
for (const userId of users) {
  for (const c of await memory.getConversationsByUserId(userId)) {
    conversations.push({ ...c, messages: await memory.getMessages(userId, c.id),
      workingMemory: await storage.getWorkingMemory({ conversationId: c.id, scope: "conversation" }) });
  }
}
const userMemory = {};
for (const userId of users) userMemory[userId] = await storage.getWorkingMemory({ userId, scope: "user" });
const workflows = [];
for (const id of ["exec-1", "exec-2", "exec-3"]) workflows.push(await storage.getWorkflowState(id));
await storage.close?.();
process.stdout.write(JSON.stringify({ conversations, userMemory, workflows }) + "\n");
