// Differential oracle bridge: replays sessions through the real Gemini CLI loop detector
// (LoopDetectionService of @google/gemini-cli-core, dist/src/services/loopDetectionService.js).
//
// Usage: node gemini_bridge.mjs <folder containing node_modules/@google/gemini-cli-core> < input.json
//
// Input: {"sessions": [session, ...], "stringify": [jsonText, ...]}. A session is
//   {"constants": {NAME: value, ...} | null, "disabled": bool, "events": [event, ...]}
// with events as recorded (before any loopscope conversion):
//   {"t": "user"}                                      a user message: reset("prompt-<k>")
//   {"t": "turn", "text": str, "calls": [{"name": str, "raw": any, "kind": str}, ...]}
// A turn is streamed as Gemini CLI's turn.js does with one chunk per line of its text: one
// Content event per piece (cut after each "\n"), then one ToolCallRequest per call, with
// name = name.trim() || "generic_tool" and args = (JSON.parse(raw) for JSON text, the raw
// string if that fails, the recorded value otherwise) || {}. In shadow mode clearDetection()
// follows every detection. "constants" replaces the module constants of the detector (what-ifs):
// the module's own source is loaded with those constants changed.
//
// Output (stdout): {"sessions": [[step, ...], ...], "stringify": [text | null, ...]} with
//   {"kind": "content", "results": [{count, type?, detail?}, ...]}
//   {"kind": "call", "name": str, "key": str, "result": {count, type?, detail?}}
// and JSON.stringify(JSON.parse(text)) per "stringify" entry (null when either throws).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
if (!root) {
  process.stderr.write("usage: node gemini_bridge.mjs <folder with node_modules/@google/gemini-cli-core>\n");
  process.exit(2);
}
const src = join(root, "node_modules", "@google", "gemini-cli-core", "dist", "src");
const servicePath = join(src, "services", "loopDetectionService.js");
const { GeminiEventType } = await import(pathToFileURL(join(src, "core", "turn.js")).href);
const original = await import(pathToFileURL(servicePath).href);

const CONSTANTS = ["TOOL_CALL_LOOP_THRESHOLD", "CONTENT_LOOP_THRESHOLD", "CONTENT_CHUNK_SIZE", "MAX_HISTORY_LENGTH"];
const patched = new Map();
let scratch = null;
process.on("exit", () => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

// The detector module with some constants changed: its source, with `const NAME = value;`
// rewritten and its relative imports pointed back into the package.
async function serviceClass(constants) {
  if (!constants) return original.LoopDetectionService;
  const id = JSON.stringify(constants);
  if (patched.has(id)) return patched.get(id);
  let text = readFileSync(servicePath, "utf8");
  for (const [name, value] of Object.entries(constants)) {
    if (!CONSTANTS.includes(name) || !Number.isInteger(value)) throw new Error(`bad constant ${name}`);
    const pattern = new RegExp(`const ${name} = \\d+;`, "g");
    const found = text.match(pattern) ?? [];
    if (found.length !== 1) throw new Error(`constant ${name} found ${found.length} times`);
    text = text.replace(pattern, `const ${name} = ${value};`);
  }
  const servicesUrl = pathToFileURL(join(src, "services")).href + "/";
  const srcUrl = pathToFileURL(src).href + "/";
  text = text.replaceAll("from '../", `from '${srcUrl}`).replaceAll("from './", `from '${servicesUrl}`);
  scratch ??= mkdtempSync(join(tmpdir(), "gemini-oracle-"));
  const file = join(scratch, `loopDetectionService-${patched.size}.mjs`);
  writeFileSync(file, text);
  const cls = (await import(pathToFileURL(file).href)).LoopDetectionService;
  patched.set(id, cls);
  return cls;
}

function makeConfig(disabled) {
  // The few Config methods the detector and its telemetry touch (as in the package's own test).
  return {
    get config() {
      return this;
    },
    getTelemetryEnabled: () => false,
    getUsageStatisticsEnabled: () => false,
    isInteractive: () => false,
    getDebugMode: () => false,
    getSessionId: () => "oracle",
    getDisableLoopDetection: () => disabled,
  };
}

function argsOf(call) {
  let value = call.raw;
  if (value === null || value === undefined) return {};
  if (call.kind === "json_text" && typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      value = call.raw;
    }
  }
  return value || {};
}

const plain = (r) => (r.count ? { count: r.count, type: r.type, detail: r.detail } : { count: 0 });

async function replay(session) {
  const Service = await serviceClass(session.constants);
  const service = new Service(makeConfig(Boolean(session.disabled)));
  const steps = [];
  let prompt = 0;
  const check = (event) => {
    const result = service.addAndCheck(event);
    if (result.count) service.clearDetection();
    return plain(result);
  };
  for (const event of session.events) {
    if (event.t === "user") {
      prompt += 1;
      service.reset(`prompt-${prompt}`, "");
      continue;
    }
    const text = event.text ?? "";
    if (text || event.calls.length === 0) {
      const pieces = text.split(/(?<=\n)/).filter((p) => p.length > 0);
      steps.push({
        kind: "content",
        results: pieces.map((piece) => check({ type: GeminiEventType.Content, value: piece })),
      });
    }
    for (const call of event.calls) {
      const name = (typeof call.name === "string" ? call.name : "").trim() || "generic_tool";
      const value = { name, args: argsOf(call), callId: "oracle", isClientInitiated: false, prompt_id: `prompt-${prompt}` };
      const key = service.getToolCallKey(value);
      steps.push({ kind: "call", name, key, result: check({ type: GeminiEventType.ToolCallRequest, value }) });
    }
  }
  return steps;
}

function stringify(text) {
  try {
    const out = JSON.stringify(JSON.parse(text));
    return out === undefined ? null : out;
  } catch {
    return null;
  }
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const sessions = [];
for (const session of input.sessions ?? []) sessions.push(await replay(session));
process.stdout.write(JSON.stringify({ sessions, stringify: (input.stringify ?? []).map(stringify) }));
