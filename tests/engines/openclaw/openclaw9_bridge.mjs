// Differential oracle bridge for openclaw@2026.9.6: replays sessions through the real
// batch admission (admitToolCallBatch), the real detector, recorder and outcome hashing, and
// the real post-compaction guard, in loopscope's shadow mode.
//
// Usage: node openclaw9_bridge.mjs <folder containing node_modules/openclaw>  < input.json
//
// Input: {"sessions": [{"config": <tools.loopDetection block>, "events": [...]}, ...]}, one
// fresh diagnostic session state per session. Events:
//   {"op": "user"}                 a new run (run-<k>): a fresh guard, recovery available again
//   {"op": "compaction"}           arms the run's post-compaction guard
//   {"op": "message", "runId", "calls": [{"name", "params", "toolCallId", "result"?, "error"?}]}
// and the raw operations {"op": "normalize", "name"}, {"op": "overlay", "cfg", "agentId"},
// {"op": "outcome", "tool", "params", "result"?, "error"?} (the record recordToolCallOutcome
// appends to an empty history: the outcome's hash, kind, failure identity, flags).
//
// Per message, as loopscope's shadow mode does:
//   1. admitToolCallBatch(calls, ctx) - the real code, detector calls captured through the
//      runtime seam; the history it changes (real veto records) is put back afterwards;
//   2. recovery vs terminal: the first intervention of a run is a recovery, a later one is
//      terminal (agent-core's runLoop keeps this criticalToolLoopSeen flag per prompt);
//   3. the calls are recorded as though they ran (commitReadyCalls of the admission, or
//      recordToolCall after an intervention), only when enabled === true;
//   4. every outcome is recorded (recordToolCallOutcome) and fed to the guard.
//
// Output (stdout): [{"events": [...], "history": [...]}, ...]. stderr gets the package's logs;
// set OPENCLAW_LOG_LEVEL=silent.
//
// Node 20 lacks two things the before-tool-call module's dependencies use at load time
// (worker_threads.markAsUncloneable, the ES2025 Set methods); they are provided here before
// the package is imported. Neither is used by the code under test.

import { createRequire } from "node:module";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
const workerThreads = require("node:worker_threads");
if (typeof workerThreads.markAsUncloneable !== "function") workerThreads.markAsUncloneable = () => {};
const setProto = Set.prototype;
const addSetMethod = (name, fn) => {
  if (!setProto[name]) Object.defineProperty(setProto, name, { value: fn, writable: true, configurable: true });
};
addSetMethod("union", function (other) { const r = new Set(this); for (const x of other.keys()) r.add(x); return r; });
addSetMethod("intersection", function (other) { const r = new Set(); for (const x of this) if (other.has(x)) r.add(x); return r; });
addSetMethod("difference", function (other) { const r = new Set(); for (const x of this) if (!other.has(x)) r.add(x); return r; });
addSetMethod("symmetricDifference", function (other) { const r = new Set(this); for (const x of other.keys()) { if (this.has(x)) r.delete(x); else r.add(x); } return r; });
addSetMethod("isSubsetOf", function (other) { for (const x of this) if (!other.has(x)) return false; return true; });
addSetMethod("isSupersetOf", function (other) { for (const x of other.keys()) if (!this.has(x)) return false; return true; });
addSetMethod("isDisjointFrom", function (other) { for (const x of this) if (other.has(x)) return false; return true; });

const root = process.argv[2];
if (!root) {
  process.stderr.write("usage: node openclaw9_bridge.mjs <folder with node_modules/openclaw>\n");
  process.exit(2);
}
const dist = join(root, "node_modules", "openclaw", "dist");
const files = readdirSync(dist);
const find = (test) => {
  const found = files.filter(test);
  if (found.length !== 1) {
    process.stderr.write(`expected one module, found ${JSON.stringify(found)} in ${dist}\n`);
    process.exit(3);
  }
  return join(dist, found[0]);
};
// The export names are minified; the export statement maps each original name to its alias.
const exportsOf = (path) => {
  const text = readFileSync(path, "utf8");
  const statement = text.slice(text.lastIndexOf("export {"));
  const names = {};
  for (const m of statement.matchAll(/(\w+) as (\w+)/g)) names[m[1]] = m[2];
  return names;
};
const load = async (path, wanted) => {
  const module = await import(pathToFileURL(path).href);
  const names = exportsOf(path);
  const out = {};
  for (const name of wanted) {
    const fn = module[names[name]];
    if (typeof fn !== "function") {
      process.stderr.write(`${name} is not exported as a function by ${path}\n`);
      process.exit(3);
    }
    out[name] = fn;
  }
  return out;
};

const loopPath = find((f) => f.startsWith("tool-loop-detection-") && !f.startsWith("tool-loop-detection-config-") && f.endsWith(".mjs"));
const configPath = find((f) => f.startsWith("tool-loop-detection-config-") && f.endsWith(".mjs"));
const admissionPath = find((f) => f.startsWith("agent-tools.before-tool-call-") && f.endsWith(".mjs"));
const policyPath = find((f) => f.startsWith("tool-policy-shared-") && f.endsWith(".mjs"));
const { recordToolCall, recordToolCallOutcome, hashToolCall } = await load(loopPath, ["recordToolCall", "recordToolCallOutcome", "hashToolCall"]);
const { resolveToolLoopDetectionConfig } = await load(configPath, ["resolveToolLoopDetectionConfig"]);
const { admitToolCallBatch } = await load(admissionPath, ["admitToolCallBatch"]);
const { normalizeToolPolicyName } = await load(policyPath, ["normalizeToolPolicyName"]);
// The admission step reaches the detector through this runtime seam (a mutable object).
const { beforeToolCallRuntime } = await import(pathToFileURL(join(dist, "agent-tools.before-tool-call.runtime.js")).href);
const realDetect = beforeToolCallRuntime.detectToolCallLoop;
if (typeof realDetect !== "function" || typeof beforeToolCallRuntime.getDiagnosticSessionState !== "function") {
  process.stderr.write("the before-tool-call runtime seam has changed\n");
  process.exit(3);
}

// The post-compaction guard is not exported: its region of the embedded-agent module is
// compiled on its own (it needs only a logger).
const guardRegion = (() => {
  for (const f of files.filter((f) => f.startsWith("embedded-agent-") && f.endsWith(".mjs"))) {
    const text = readFileSync(join(dist, f), "utf8");
    const start = text.indexOf("//#region src/agents/embedded-agent-runner/post-compaction-loop-guard.ts");
    if (start < 0) continue;
    const end = text.indexOf("//#endregion", start);
    return text.slice(start, end);
  }
  process.stderr.write("post-compaction guard region not found\n");
  process.exit(3);
})();
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const createPostCompactionLoopGuard = new Function("createSubsystemLogger", `${guardRegion}\nreturn createPostCompactionLoopGuard;`)(() => quiet);

// agent-core's intervention texts, read from the package (they are module constants).
const agentCoreText = readFileSync(find((f) => f.startsWith("agent-core-") && f.endsWith(".mjs")), "utf8");
const terminatedMessage = /const TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE = "([^"]*)";/.exec(agentCoreText)?.[1] ?? null;

const orUndefined = (value) => (value === null ? undefined : value);
const snapshot = (r) => ({
  toolName: r.toolName,
  argsHash: r.argsHash,
  toolCallId: r.toolCallId ?? null,
  runId: r.runId ?? null,
  resultHash: r.resultHash ?? null,
  outcomeKind: r.outcomeKind ?? null,
  failureIdentityHash: r.failureIdentityHash ?? null,
  noProgress: r.noProgress === true,
  unknownToolName: r.unknownToolName ?? null,
});
const verdictOf = (v) => (v && v.stuck ? {
  level: v.level, detector: v.detector, count: v.count, message: v.message,
  warningKey: v.warningKey ?? null, pairedToolName: v.pairedToolName ?? null,
} : null);

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const output = [];
let sessionNumber = 0;
for (const session of input.sessions) {
  sessionNumber += 1;
  const config = orUndefined(session.config);
  const sessionKey = `loopscope-oracle-${sessionNumber}`;
  const state = beforeToolCallRuntime.getDiagnosticSessionState({ sessionKey, sessionId: sessionKey });
  state.toolCallHistory = [];
  let guard = createPostCompactionLoopGuard({ enabled: config?.enabled !== false });
  let criticalToolLoopSeen = false;
  const events = [];
  for (const event of session.events) {
    if (event.op === "user") {
      guard = createPostCompactionLoopGuard({ enabled: config?.enabled !== false });
      criticalToolLoopSeen = false;
      events.push(null);
      continue;
    }
    if (event.op === "compaction") {
      guard.armPostCompaction();
      events.push(null);
      continue;
    }
    if (event.op === "normalize") {
      events.push(normalizeToolPolicyName(event.name || "tool"));
      continue;
    }
    if (event.op === "overlay") {
      const merged = resolveToolLoopDetectionConfig({ cfg: event.cfg, agentId: orUndefined(event.agentId) });
      events.push(merged === undefined ? { absent: true } : { merged });
      continue;
    }
    if (event.op === "outcome") {
      const scratch = { toolCallHistory: [] };
      const args = { toolName: event.tool, toolParams: event.params, config };
      if ("result" in event) args.result = event.result;
      if ("error" in event) args.error = event.error;
      const record = recordToolCallOutcome(scratch, args);
      events.push(record ? snapshot(record) : null);
      continue;
    }
    if (event.op !== "message") throw new Error(`unknown op ${event.op}`);
    const runId = event.runId;
    const ctx = { sessionKey, sessionId: sessionKey, runId, loopDetection: config };
    const calls = event.calls.map((c) => ({
      toolCall: { id: orUndefined(c.toolCallId), name: c.name },
      args: c.params,
    }));
    const names = event.calls.map((c) => normalizeToolPolicyName(c.name || "tool"));
    const before = [...(state.toolCallHistory ?? [])];
    const checked = [];
    beforeToolCallRuntime.detectToolCallLoop = (...args) => {
      const v = realDetect(...args);
      checked.push(verdictOf(v));
      return v;
    };
    let admission;
    try {
      admission = await admitToolCallBatch(calls, ctx);
    } finally {
      beforeToolCallRuntime.detectToolCallLoop = realDetect;
    }
    const intervention = admission?.intervention;
    let kind = null;
    let trigger = null;
    if (intervention) {
      kind = criticalToolLoopSeen ? "terminal" : "recovery";
      criticalToolLoopSeen = true;
      trigger = calls.findIndex((c) => c.toolCall.id === intervention.toolCallId);
    }
    // Which checked warnings were shown: the admission returns exactly those, in order.
    const shown = (admission?.warnings ?? []).slice();
    const emitted = checked.map((v, k) => {
      if (!v || v.level !== "warning") return null;
      const next = shown[0];
      if (next && next.toolCallId === (calls[k].toolCall.id ?? "") && next.count === v.count) {
        shown.shift();
        return true;
      }
      return false;
    });
    // Shadow mode: the veto records of an intervention are not kept; the calls are recorded
    // as though they ran.
    state.toolCallHistory = before;
    if (config?.enabled === true) {
      if (intervention) {
        for (let k = 0; k < calls.length; k += 1) {
          recordToolCall(state, names[k], calls[k].args, calls[k].toolCall.id, config, runId ? { runId } : undefined);
        }
      } else {
        admission.commitReadyCalls(calls.map((c) => ({ toolCallId: c.toolCall.id, args: c.args })));
      }
    }
    const outcomes = [];
    for (let k = 0; k < calls.length; k += 1) {
      const c = event.calls[k];
      const args = { toolName: names[k], toolParams: c.params, toolCallId: orUndefined(c.toolCallId), config, runId };
      if ("result" in c) args.result = c.result;
      if ("error" in c) args.error = c.error;
      const record = recordToolCallOutcome(state, args);
      let abort = null;
      if (record?.resultHash) {
        const v = guard.observe({ toolName: record.toolName, argsHash: record.argsHash, resultHash: record.resultHash });
        if (v.shouldAbort) abort = { count: v.count, message: v.message, detector: v.detector };
      }
      outcomes.push({ record: record ? snapshot(record) : null, abort });
    }
    events.push({
      names,
      argsHashes: calls.map((c, k) => hashToolCall(names[k], c.args)),
      checked,
      emitted,
      intervention: intervention ? {
        kind, trigger, detector: intervention.detector, count: intervention.count,
        reason: intervention.reason, actionKey: intervention.actionKey,
      } : null,
      outcomes,
    });
  }
  output.push({ events, history: (state.toolCallHistory ?? []).map(snapshot), terminatedMessage });
}
process.stdout.write(JSON.stringify(output));
