// The reference side of the benchmark: the real OpenClaw loop detector (openclaw@2026.6.11)
// replaying every tool call of a folder of OpenAI-chat sessions, the way loopscope replays
// them (loopscope's replay: one step per call, run ids by user messages, each call's
// outcome from the first later tool message carrying its id, errors as strings).
//
// Usage: node openclaw_node_replay.mjs <folder with node_modules/openclaw> <corpus folder> [repeats]
// Prints one JSON line: {"load_s", "replay_ms" (median), "sessions", "calls", "refused_sessions"}.
// Files that are not OpenAI-chat request bodies ({"messages": [...]}) are skipped.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [root, corpus, repeatsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg || 5);
const dist = join(root, "node_modules", "openclaw", "dist");
const loopFile = readdirSync(dist).find(
  (f) => f.startsWith("tool-loop-detection-") && !f.startsWith("tool-loop-detection-config-") && f.endsWith(".js"),
);
const loop = await import(pathToFileURL(join(dist, loopFile)).href);
const [detect, record, outcome] = [loop.t, loop.n, loop.r];
if (![detect, record, outcome].every((f) => typeof f === "function")) {
  throw new Error("openclaw loop-detection exports not found");
}

// The same threshold change the Python side re-runs with (benchmarks/bench.py OPENCLAW_CHANGE).
const config = { enabled: true, warningThreshold: 5, criticalThreshold: 8, globalCircuitBreakerThreshold: 12 };

function resultText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.filter((p) => p && typeof p === "object" && typeof p.text === "string").map((p) => p.text).join("\n");
  }
  return "";
}

function parseArgs(raw) {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "string") return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

// Loading: read, parse and map every session to its calls.
const loadStart = process.hrtime.bigint();
const sessions = [];
for (const name of readdirSync(corpus).sort()) {
  if (!name.endsWith(".json")) continue;
  const body = JSON.parse(readFileSync(join(corpus, name), "utf8"));
  if (!body || !Array.isArray(body.messages)) continue;
  const messages = body.messages;
  const calls = [];
  let run = 0;
  messages.forEach((m, i) => {
    if (m.role === "user") run += 1;
    if (m.role !== "assistant" || !Array.isArray(m.tool_calls)) return;
    for (const tc of m.tool_calls) {
      const fn = tc && tc.function ? tc.function : {};
      const id = typeof tc.id === "string" ? tc.id : undefined;
      let result;
      let error;
      if (id !== undefined) {
        const answer = messages.slice(i + 1).find((r) => r.role === "tool" && r.tool_call_id === id);
        if (answer) {
          const text = resultText(answer.content);
          if (answer.is_error === true || answer.isError === true || answer.status === "error") error = text;
          else result = { content: [{ type: "text", text }], details: {} };
        }
      }
      calls.push({ name: typeof fn.name === "string" ? fn.name : "", params: parseArgs(fn.arguments), id, result, error, runId: `run-${run}` });
    }
  });
  sessions.push(calls);
}
const loadS = Number(process.hrtime.bigint() - loadStart) / 1e9;

function replayAll() {
  let refused = 0;
  for (const calls of sessions) {
    const state = { toolCallHistory: [] };
    let sessionRefused = false;
    for (const c of calls) {
      const v = detect(state, c.name, c.params, config, { runId: c.runId });
      if (v.stuck && v.level === "critical") sessionRefused = true;
      record(state, c.name, c.params, c.id, config, { runId: c.runId });
      if (c.result !== undefined || c.error !== undefined) {
        outcome(state, { toolName: c.name, toolParams: c.params, toolCallId: c.id, result: c.result, error: c.error, config, runId: c.runId });
      }
    }
    if (sessionRefused) refused += 1;
  }
  return refused;
}

const times = [];
let refusedSessions = 0;
for (let r = 0; r < repeats; r += 1) {
  const start = process.hrtime.bigint();
  refusedSessions = replayAll();
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
times.sort((a, b) => a - b);
const calls = sessions.reduce((n, s) => n + s.length, 0);
console.log(JSON.stringify({ load_s: loadS, replay_ms: times[Math.floor(times.length / 2)], sessions: sessions.length, calls, refused_sessions: refusedSessions }));
