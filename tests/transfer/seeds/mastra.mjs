// Writes a Mastra LibSQL memory database at the path given (argv[2]) with the real packages:
// two resources, three threads, v2 messages with text, reasoning, tool invocations, files and
// sources, working memory at both scopes (thread and resource) and two workflow snapshots.
// No model runs (no embedder, no semantic recall).
import { Memory } from "@mastra/memory";
import { LibSQLStore } from "@mastra/libsql";

const path = process.argv[2];
console.log = console.error;  // keep stdout for the JSON the tests read
if (!path) throw new Error("usage: node mastra.mjs PATH.db");
const storage = new LibSQLStore({ id: "seed", url: `file:${path}` });
await storage.init();
const thread = (scope) => new Memory({ storage, options: { workingMemory: { enabled: true, scope } } });
const memory = thread("thread");
const resourceMemory = thread("resource");

const at = (s) => new Date(`2026-02-01T10:00:${s}.000Z`);
await memory.saveThread({ thread: {
  id: "t-trip", resourceId: "alice", title: "Trip to Rome",
  metadata: { topic: "travel", budget: 1234.5, days: 3, tags: ["it", "rome"], nested: { ok: true, none: null },
    quote: "say \"ciao\"\n\tthen go", emoji: "🍕", big: -9007199254740991 },
  createdAt: at("00"), updatedAt: at("00"),
} });
await memory.saveThread({ thread: {
  id: "t-empty", resourceId: "alice", title: "", metadata: {}, createdAt: at("01"), updatedAt: at("01"),
} });
await memory.saveThread({ thread: {
  id: "t-bob", resourceId: "bob", title: "Bob", metadata: { lang: "de" }, createdAt: at("02"), updatedAt: at("02"),
} });

const msg = (id, threadId, resourceId, role, s, parts, extra = {}) => ({
  id, threadId, resourceId, role, createdAt: at(s), content: { format: 2, parts, ...extra },
});
await memory.saveMessages({ messages: [
  msg("m-1", "t-trip", "alice", "user", "10", [{ type: "text", text: "Plan a trip to Rome — 3 days ✈" }],
    { metadata: { client: "cli" } }),
  msg("m-2", "t-trip", "alice", "assistant", "11", [
    { type: "step-start" },
    { type: "reasoning", reasoning: "", details: [{ type: "text", text: "Check the weather first." }] },
    { type: "tool-invocation", toolInvocation: {
      state: "result", toolCallId: "tc-1", toolName: "weather", args: { city: "Rome" }, result: { tempC: 24 } } },
    { type: "tool-invocation", toolInvocation: {
      state: "call", toolCallId: "tc-2", toolName: "hotels", args: { city: "Rome", nights: 3 } } },
    { type: "text", text: "Rome will be sunny, 24°C." },
  ]),
  msg("m-3", "t-trip", "alice", "user", "12", [
    { type: "text", text: "My passport:" },
    { type: "file", mimeType: "image/jpeg", data: "https://example.com/passport.jpg" },
    { type: "source", source: { sourceType: "url", id: "src-1", url: "https://example.com/rome", title: "Rome" } },
  ]),
  msg("m-b1", "t-bob", "bob", "user", "14", [{ type: "text", text: "Hallo" }]),
] });

await memory.updateWorkingMemory({ threadId: "t-trip", resourceId: "alice",
  workingMemory: "# Trip\n- city: Rome" });
await resourceMemory.updateWorkingMemory({ threadId: "t-trip", resourceId: "alice",
  workingMemory: "# Alice\n- prefers: trains" });

const workflows = await storage.getStore("workflows");
const snapshot = (runId, status, extra = {}) => ({
  runId, status, value: {}, context: { input: { city: "Rome" } }, serializedStepGraph: [],
  activePaths: [], activeStepsPath: {}, suspendedPaths: {}, resumeLabels: {}, waitingPaths: {},
  timestamp: Date.parse("2026-02-01T11:00:00.000Z"), ...extra,
});
await workflows.persistWorkflowSnapshot({ workflowName: "book-trip", runId: "run-1", resourceId: "alice",
  snapshot: snapshot("run-1", "suspended", { suspendedPaths: { approve: [1] } }),
  createdAt: at("20"), updatedAt: at("21") });
await workflows.persistWorkflowSnapshot({ workflowName: "nightly", runId: "run-2",
  snapshot: snapshot("run-2", "success", { result: { done: true } }), createdAt: at("22"), updatedAt: at("23") });

// What Mastra itself reads back: the tests compare the import with this, message by message.
const threads = [];
for (const resourceId of ["alice", "bob"]) {
  const { threads: page } = await memory.listThreads({ filter: { resourceId }, perPage: false });
  for (const t of page) {
    const { messages } = await memory.recall({ threadId: t.id, resourceId, perPage: false });
    threads.push({ ...t, messages,
      workingMemory: await memory.getWorkingMemory({ threadId: t.id, resourceId }),
      resourceWorkingMemory: await resourceMemory.getWorkingMemory({ threadId: t.id, resourceId }) });
  }
}
const runs = [];
for (const [workflowName, runId] of [["book-trip", "run-1"], ["nightly", "run-2"]]) {
  runs.push({ workflowName, runId, snapshot: await workflows.loadWorkflowSnapshot({ workflowName, runId }) });
}
await storage.close();
process.stdout.write(JSON.stringify({ threads, runs }) + "\n");
