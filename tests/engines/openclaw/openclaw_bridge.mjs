// Differential oracle bridge: runs operations against the real OpenClaw loop detector.
//
// Usage: node openclaw_bridge.mjs <folder containing node_modules/openclaw>  < input.json
//
// Input:  {"sessions": [[op, ...], ...]}, one fresh state per session. Operations:
//   {"op": "detect",  "tool", "params", "config"?, "runId"?}
//   {"op": "record",  "tool", "params", "toolCallId"?, "config"?, "runId"?}
//   {"op": "outcome", "tool", "params", "toolCallId"?, "result"?, "error"?, "config"?, "runId"?}
//   {"op": "stable",  "value"}
// A missing (or null) config, runId or toolCallId is passed as undefined; a missing result or
// error key is undefined too. Errors are passed as strings, as loopscope does (an Error object
// with an empty message would hash its name instead).
//
// Output (stdout): [{"results": [...], "history": [...]}, ...], one entry per session.
// The detector logs to stderr; set OPENCLAW_LOG_LEVEL=silent to avoid its log file.

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
if (!root) {
  process.stderr.write("usage: node openclaw_bridge.mjs <folder with node_modules/openclaw>\n");
  process.exit(2);
}
const dist = join(root, "node_modules", "openclaw", "dist");
const files = readdirSync(dist);
const loopFile = files.find(
  (f) => f.startsWith("tool-loop-detection-") && !f.startsWith("tool-loop-detection-config-") && f.endsWith(".js"),
);
const stableFile = files.find((f) => f.startsWith("stable-stringify-") && f.endsWith(".js"));
if (!loopFile || !stableFile) {
  process.stderr.write(`openclaw modules not found in ${dist}\n`);
  process.exit(3);
}
const loop = await import(pathToFileURL(join(dist, loopFile)).href);
const stable = await import(pathToFileURL(join(dist, stableFile)).href);
const detectToolCallLoop = loop.t;
const recordToolCall = loop.n;
const recordToolCallOutcome = loop.r;
const stableStringify = stable.t;
for (const [name, fn] of Object.entries({ detectToolCallLoop, recordToolCall, recordToolCallOutcome, stableStringify })) {
  if (typeof fn !== "function") {
    process.stderr.write(`${name} is not a function in the openclaw package\n`);
    process.exit(3);
  }
}

const orUndefined = (value) => (value === null ? undefined : value);
const scopeOf = (op) => (op.runId === undefined || op.runId === null ? undefined : { runId: op.runId });

function snapshot(record) {
  return {
    toolName: record.toolName,
    argsHash: record.argsHash,
    toolCallId: record.toolCallId ?? null,
    runId: record.runId ?? null,
    resultHash: record.resultHash ?? null,
    unknownToolName: record.unknownToolName ?? null,
  };
}

// Read stdin asynchronously: readFileSync(0) fails with EAGAIN on large non-blocking pipes.
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const output = [];
for (const ops of input.sessions) {
  const state = { toolCallHistory: [] };
  const results = [];
  for (const op of ops) {
    const config = orUndefined(op.config);
    if (op.op === "detect") {
      const v = detectToolCallLoop(state, op.tool, op.params, config, scopeOf(op));
      results.push(
        v.stuck
          ? {
              level: v.level,
              detector: v.detector,
              count: v.count,
              message: v.message,
              warningKey: v.warningKey ?? null,
              pairedToolName: v.pairedToolName ?? null,
            }
          : null,
      );
    } else if (op.op === "record") {
      recordToolCall(state, op.tool, op.params, orUndefined(op.toolCallId), config, scopeOf(op));
      const last = state.toolCallHistory.at(-1);
      results.push({ argsHash: last.argsHash, length: state.toolCallHistory.length });
    } else if (op.op === "outcome") {
      const args = {
        toolName: op.tool,
        toolParams: op.params,
        toolCallId: orUndefined(op.toolCallId),
        config,
        runId: orUndefined(op.runId),
      };
      if ("result" in op) args.result = op.result;
      if ("error" in op) args.error = op.error;
      const record = recordToolCallOutcome(state, args);
      results.push(record ? { ...snapshot(record), length: state.toolCallHistory.length } : null);
    } else if (op.op === "stable") {
      results.push(stableStringify(op.value));
    } else {
      throw new Error(`unknown op ${op.op}`);
    }
  }
  output.push({ results, history: state.toolCallHistory.map(snapshot) });
}
process.stdout.write(JSON.stringify(output));
