"""Seeded random sessions and configurations for the differential and property tests.

Sessions mix the behaviours the detectors look at: identical repeats with stable or changing
results, ``process`` poll/log and ``command_status`` polling, ``exec`` with every status,
A/B ping-pong, unknown-tool errors, message sends with volatile ids, loop vetoes, calls without
results, user messages that split runs, and compactions. Both OpenClaw JSONL sessions (results
with ``details``) and OpenAI-chat sessions (JSON-text arguments, mapped results) are produced.
"""

from __future__ import annotations

import json
import random
from typing import Any

from loopscope.engines.openclaw import OpenClawConfig
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

_READ_PATHS = ["/a.txt", "/b.txt", "/c.txt", "src/main.py"]


def _content(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


class _Pattern:
    """One kind of call: its name, params, and how its outcome evolves."""

    def __init__(self, rng: random.Random, kind: str) -> None:
        self.rng = rng
        self.kind = kind
        self.n = 0
        self.stable = rng.random() < 0.6
        self.path = rng.choice(_READ_PATHS)
        self.session = f"sess-{rng.randint(1, 3)}"
        self.command = rng.choice(["make test", "tail -n 3 build.log", "date", "ls"])
        self.missing = rng.choice(["gog", "web.search", "Himalaya", "exec"])
        self.dir = f"/d{rng.randint(0, 2)}"

    def next_call(self) -> tuple[str, Any, dict[str, Any] | None]:
        """``(name, params, result)``; result is ``{"content", "details"?, "is_error"}`` or
        ``None`` (no recorded result)."""
        rng = self.rng
        self.n += 1
        i = self.n if not self.stable else 0
        if rng.random() < 0.04:
            return self._name(), self._params(), None
        if rng.random() < 0.03:
            return self._name(), self._params(), {
                "content": _content("CRITICAL: blocked"),
                "details": {"status": "blocked", "deniedReason": "tool-loop", "reason": "x"}}
        kind = self.kind
        if kind == "read":
            return "read", {"path": self.path}, {"content": _content(f"contents {i}"),
                                                 "details": {"ok": True}}
        if kind == "poll":
            action = "poll" if rng.random() < 0.8 else "log"
            details: dict[str, Any] = {"status": "running"}
            if rng.random() < 0.7:
                details["aggregated"] = f"steady {i}"
            if action == "log":
                details.update(totalLines=i, totalChars=10 * i)
            return "process", {"action": action, "sessionId": self.session}, {
                "content": _content("(no new output)\n\nProcess still running."),
                "details": details}
        if kind == "command_status":
            return "command_status", {"commandId": "cmd-7"}, {
                "content": _content(f"RUNNING {i}"), "details": {"status": "running"}}
        if kind == "exec":
            status = rng.choice(["completed", "failed", "running", "approval-pending", "",
                                 "queued", None])
            details = {"durationMs": rng.randint(1, 500), "cwd": f"/tmp/run-{rng.randint(0, 9)}",
                       "pid": rng.randint(100, 999)}
            if status is not None:
                details["status"] = status
            if status in ("completed", "failed"):
                details["exitCode"] = rng.choice([0, 1, None, "1"])
                details["aggregated"] = rng.choice([f"out {i}", "", "  ", f"  out {i} "])
                if rng.random() < 0.2:
                    details["timedOut"] = True
            elif status == "running":
                if rng.random() < 0.8:
                    details["tail"] = "(no new output)" if self.stable else f"line {i}"
            elif status == "approval-pending":
                details.update(host="gateway", command=self.command)
            return "exec", {"command": self.command}, {"content": _content(f"  output {i} "),
                                                       "details": details}
        if kind == "unknown":
            message = rng.choice([f"Tool {self.missing} not found",
                                  f"Unknown tool: {self.missing}",
                                  f"tool '{self.missing}' is not available", "No such tool"])
            return self.missing if rng.random() < 0.7 else "exec", {"q": rng.randint(0, 3)}, {
                "content": _content(message), "is_error": True}
        if kind == "send":
            payload = {"ok": True, "channel": "feishu", "chatId": "oc_chat",
                       "runId": f"run_{self.n}", "messageId": f"om_{self.n}",
                       "receipt": {"platformMessageId": f"p_{self.n}"}}
            tool = rng.choice(["message", "message", "sessions_send", "telegram"])
            action = rng.choice(["send", "reply", "read", "poll"])
            return tool, {"action": action, "target": "feishu:oc_chat", "text": "ping"}, {
                "content": _content(json.dumps(payload, indent=2)), "details": payload}
        if kind == "error":
            return "write", {"path": self.path}, {"content": _content(f"EACCES {i}"),
                                                  "is_error": True}
        if kind == "empty":
            return "", {}, {"content": _content("?"), "details": {}}
        return "list", {"dir": self.dir}, {"content": _content(f"x {i}")}

    def _name(self) -> str:
        return {"read": "read", "poll": "process", "command_status": "command_status",
                "exec": "exec", "unknown": self.missing, "send": "message", "error": "write",
                "empty": ""}.get(self.kind, "list")

    def _params(self) -> Any:
        if self.kind == "poll":
            return {"action": "poll", "sessionId": self.session}
        if self.kind == "read":
            return {"path": self.path}
        return {"v": 1}


KINDS = ["read", "poll", "command_status", "exec", "unknown", "send", "error", "list", "empty"]


def random_session(rng: random.Random, *, openclaw: bool | None = None,
                   calls: int | None = None, compactions: bool = True) -> Session:
    """One random session with about ``calls`` tool calls."""
    if openclaw is None:
        openclaw = rng.random() < 0.6
    total = calls if calls is not None else rng.randint(5, 90)
    patterns = [_Pattern(rng, rng.choice(KINDS)) for _ in range(rng.randint(1, 4))]
    b = SessionBuilder()
    b.user("start")
    made = 0
    call_id = 0
    mode = rng.choice(["repeat", "pingpong", "mixed"])
    if mode == "pingpong" and rng.random() < 0.5:
        # Two stable sides, so critical ping-pong (which needs evidence) can happen.
        patterns = [_Pattern(rng, rng.choice(["read", "list", "command_status"]))
                    for _ in range(2)]
        for pattern in patterns:
            pattern.stable = True
    pending: list[tuple[str, dict[str, Any] | None]] = []
    while made < total:
        roll = rng.random()
        if roll < 0.04:
            b.user("keep going")
            continue
        if compactions and roll < 0.07:
            b.compaction("summary")
            continue
        if roll < 0.09:
            b.assistant("thinking out loud")
            continue
        if mode == "repeat":
            pattern = patterns[0] if rng.random() < 0.8 else rng.choice(patterns)
        elif mode == "pingpong":
            pattern = patterns[made % min(2, len(patterns))]
        else:
            pattern = rng.choice(patterns)
        batch = 1 if rng.random() < 0.85 else rng.randint(2, 3)
        turn = b.assistant("")
        for _ in range(batch):
            name, params, result = pattern.next_call()
            call_id += 1
            cid = f"call_{call_id}" if rng.random() > 0.02 else None
            if openclaw:
                b.call(turn, name, params, "value", id=cid)
            else:
                text = json.dumps(params) if rng.random() > 0.05 else "{not json"
                b.call(turn, name, text, "json_text", id=cid)
            pending.append((cid or "", result))
            made += 1
        for cid, result in pending:
            if result is None:
                continue
            if openclaw:
                b.result(cid, result["content"], "\n".join(p["text"] for p in result["content"]),
                         is_error=result.get("is_error", False),
                         details=result.get("details", {}))
            else:
                text = "\n".join(p["text"] for p in result["content"])
                b.result(cid, text, text, is_error=result.get("is_error", False))
        pending = []
    return b.build(id=f"gen-{rng.randint(0, 10**9)}", source="generated",
                   format="openclaw_session" if openclaw else "openai_chat")


def random_block(rng: random.Random) -> dict[str, Any]:
    """A random ``loopDetection`` block (valid types; thresholds may be misordered)."""
    block: dict[str, Any] = {}
    if rng.random() < 0.9:
        block["enabled"] = rng.random() < 0.92
    for key, low, high in [("historySize", 2, 40), ("warningThreshold", 1, 12),
                           ("criticalThreshold", 1, 22), ("globalCircuitBreakerThreshold", 1, 32),
                           ("unknownToolThreshold", 1, 12)]:
        if rng.random() < 0.6:
            block[key] = rng.randint(low, high)
    detectors = {name: rng.random() < 0.75 for name in ("genericRepeat", "knownPollNoProgress",
                                                        "pingPong") if rng.random() < 0.4}
    if detectors:
        block["detectors"] = detectors
    if rng.random() < 0.4:
        block["postCompactionGuard"] = {"windowSize": rng.randint(1, 5)}
    return block


def random_config(rng: random.Random) -> OpenClawConfig:
    return OpenClawConfig.from_block(random_block(rng))
