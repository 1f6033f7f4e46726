// Differential oracle bridge: replays sessions through Qwen Code's own loop guards (the
// LoopDetectionService of @qwen-code/qwen-code, bundled in one of its chunks/*.js).
//
// Usage: node qwen_bridge.mjs <folder containing node_modules/@qwen-code/qwen-code> < input.json
//
// How the class is reached: the bundle does not export LoopDetectionService. A module loader
// hook (module.register) serves the chunk that defines it with one line appended,
// `export { LoopDetectionService as __loopscopeLoopDetectionService };` -- the package's code is
// otherwise loaded unchanged. For what-if constants the hook also rewrites `var NAME = value;`
// of the named module constants (the chunk is then imported under another URL, so each set of
// constants is its own module instance).
//
// Input: {"sessions": [session, ...]}. A session is
//   {"skip": bool, "cap": int, "explicit": bool, "constants": {NAME: value} | null,
//    "events": [event, ...]}
// with events as recorded:
//   {"t": "user"}                          a user message: reset("prompt-<k>")
//   {"t": "turn", "text": str, "thinking": str, "calls": [{"name": str, "raw": any, "kind": str}]}
// A turn is streamed as Qwen Code's turn.ts does, with the text cut after each "\n": one Thought
// event {subject: "", description: thinking} when thinking is non-empty, one Content event per
// piece, then one ToolCallRequest per call with name = name || "undefined_tool_name" and
// args = (JSON.parse(raw) for JSON text, the raw string when that fails, the value otherwise) || {}.
// Each event goes through checkAlwaysOnSafeties, then (when it did not fire and skip is false)
// addAndCheckHeuristicLoops, as client.ts does. Shadow mode: loopDetected is cleared after
// every detection.
//
// Output (stdout): {"sessions": [[step, ...], ...]} with
//   {"kind": "content", "hits": [{type, tier}, ...]}
//   {"kind": "call", "name": str, "key": str, "hit": {type, tier} | null, "total": int}

import { readdirSync, readFileSync } from "node:fs";
import { register } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
if (!root) {
  process.stderr.write("usage: node qwen_bridge.mjs <folder with node_modules/@qwen-code/qwen-code>\n");
  process.exit(2);
}
const chunks = join(root, "node_modules", "@qwen-code", "qwen-code", "chunks");
const MARK = "var LoopDetectionService = class";
const target = readdirSync(chunks).filter((f) => f.endsWith(".js"))
  .find((f) => readFileSync(join(chunks, f), "utf8").includes(MARK));
if (!target) throw new Error(`no chunk under ${chunks} defines LoopDetectionService`);
const targetUrl = pathToFileURL(join(chunks, target)).href;

const CONSTANTS = ["TOOL_CALL_LOOP_THRESHOLD", "CONTENT_LOOP_THRESHOLD", "GLOBAL_DUPLICATE_THRESHOLD",
  "ALTERNATING_PATTERN_CYCLES", "FILE_READ_THRESHOLD", "STAGNATION_THRESHOLD",
  "ADAPTIVE_CAP_HARD_MULTIPLIER", "THOUGHT_REPEAT_THRESHOLD"];

const hook = `
const TARGET = ${JSON.stringify(targetUrl)};
const NAMES = ${JSON.stringify(CONSTANTS)};
export async function load(url, context, nextLoad) {
  const base = url.split("?")[0];
  if (base !== TARGET) return nextLoad(url, context);
  const loaded = await nextLoad(base, { ...context, format: "module" });
  let text = String(loaded.source);
  const query = new URL(url).searchParams.get("constants");
  if (query) {
    for (const [name, value] of Object.entries(JSON.parse(query))) {
      if (!NAMES.includes(name) || !Number.isInteger(value)) throw new Error("bad constant " + name);
      const pattern = new RegExp("\\\\nvar " + name + " = \\\\d+;", "g");
      const found = text.match(pattern) ?? [];
      if (found.length !== 1) throw new Error("constant " + name + " found " + found.length + " times");
      text = text.replace(pattern, "\\nvar " + name + " = " + value + ";");
    }
  }
  text += "\\nexport { LoopDetectionService as __loopscopeLoopDetectionService };\\n";
  return { format: "module", source: text, shortCircuit: true };
}
`;
register("data:text/javascript," + encodeURIComponent(hook));

const classes = new Map();
async function serviceClass(constants) {
  const id = constants ? JSON.stringify(constants) : "";
  if (!classes.has(id)) {
    const url = constants ? `${targetUrl}?constants=${encodeURIComponent(id)}` : targetUrl;
    classes.set(id, (await import(url)).__loopscopeLoopDetectionService);
  }
  return classes.get(id);
}

function makeConfig(skip, cap, explicit) {
  // The Config methods the service and its telemetry touch. The cap value follows
  // Config.getMaxToolCallsPerTurn: a value <= 0 is Infinity.
  return {
    getSkipLoopDetection: () => skip,
    getMaxToolCallsPerTurn: () => (cap <= 0 ? Number.POSITIVE_INFINITY : cap),
    isMaxToolCallsPerTurnExplicit: () => explicit,
    getDebugLogger: () => ({ debug() {}, info() {}, warn() {}, error() {} }),
    getTelemetryEnabled: () => false,
    getUsageStatisticsEnabled: () => false,
    getSessionId: () => "oracle",
    isInteractive: () => false,
    getDebugMode: () => false,
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

function pieces(text) {
  if (!text) return [];
  return text.split(/(?<=\n)/).filter((p) => p.length > 0);
}

async function replay(session) {
  const Service = await serviceClass(session.constants);
  const service = new Service(makeConfig(session.skip, session.cap, session.explicit));
  let prompt = 0;
  let callId = 0;
  const steps = [];
  const feed = (event) => {
    if (service.checkAlwaysOnSafeties(event)) {
      service.loopDetected = false;
      return { type: service.getLastLoopType(), tier: "always-on" };
    }
    if (!session.skip && service.addAndCheckHeuristicLoops(event)) {
      service.loopDetected = false;
      return { type: service.getLastLoopType(), tier: "heuristic" };
    }
    return null;
  };
  for (const event of session.events) {
    if (event.t === "user") {
      prompt += 1;
      service.reset(`prompt-${prompt}`);
      continue;
    }
    const text = event.text ?? "";
    const thinking = event.thinking ?? "";
    if (text || thinking || event.calls.length === 0) {
      const hits = [];
      if (thinking) {
        const hit = feed({ type: "thought", value: { subject: "", description: thinking } });
        if (hit) hits.push(hit);
      }
      for (const piece of pieces(text)) {
        const hit = feed({ type: "content", value: piece });
        if (hit) hits.push(hit);
      }
      steps.push({ kind: "content", hits });
    }
    for (const call of event.calls) {
      callId += 1;
      const name = call.name || "undefined_tool_name";
      const args = argsOf(call);
      const value = { callId: `call-${callId}`, name, args, isClientInitiated: false, prompt_id: `prompt-${prompt}` };
      const hit = feed({ type: "tool_call_request", value });
      steps.push({ kind: "call", name, key: service.getToolCallKey(value), hit, total: service.turnToolCallTotal });
    }
  }
  return steps;
}

const input = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const session of input.sessions) out.push(await replay(session));
process.stdout.write(JSON.stringify({ sessions: out }));
