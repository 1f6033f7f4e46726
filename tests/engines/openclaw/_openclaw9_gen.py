"""Seeded random sessions for the OpenClaw 2026.9.6 differential and property tests.

They exercise what 2026.9.6 added: tool names that need normalising (``Bash``, `` READ ``,
``apply-patch``, ``cron``, empty and blank names), several calls per message (identical ones
included, so the projected vetoes of the batch admission matter), external-content markers with
fresh ids, terminal ``exec`` failures whose output carries timestamps, retries, durations and
pids (with and without changing arguments), unchanged writes, one tool failing with the same
error over a few argument variants (argument churn), recorded loop vetoes (as results and as
errors), message sends with volatile ids (``conversations_send`` too), polls, unknown tools,
user messages that start runs, compactions, and long repeats that reach the critical levels.
"""

from __future__ import annotations

import json
import random
from typing import Any

from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session


def _content(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _marker(rng: random.Random, body: str, escapes: int = 0) -> str:
    quote = "\\" * escapes + '"'
    marker_id = "".join(rng.choice("0123456789abcdef") for _ in range(16))
    return (f"<<<EXTERNAL_UNTRUSTED_CONTENT id={quote}{marker_id}{quote}>>>{body}"
            f"<<<END_EXTERNAL_UNTRUSTED_CONTENT id={quote}{marker_id}{quote}>>>")


_NAMES = {
    "exec": ["exec", "exec", "Bash", " exec ", "bash", "EXEC"],
    "read": ["read", "read", " READ ", "Read"],
    "write": ["write", "write", "Write"],
    "patch": ["apply-patch", "apply_patch", "Apply-Patch"],
    "cron": ["cron", "automations"],
}


class _Pattern:
    """One kind of call: its name, params, and how its outcome evolves."""

    def __init__(self, rng: random.Random, kind: str, *, reliable: bool = False) -> None:
        self.rng = rng
        self.kind = kind
        self.reliable = reliable
        """Always a result, never a recorded veto."""
        self.n = 0
        self.stable = rng.random() < 0.7
        self.variants = rng.randint(1, 3)
        self.path = rng.choice(["/a.txt", "/b.txt", "src/main.py"])
        self.command = rng.choice(["make test", "npm run build", "pytest -x"])
        self.missing = rng.choice(["gog", "web.search", "Himalaya"])
        self.churn_tool = rng.choice(["read", "write", "edit"])
        if kind == "churn":
            self.variants = rng.randint(2, 4)

    def _name(self, family: str) -> str:
        names = _NAMES[family]
        return names[0] if self.rng.random() < 0.6 else self.rng.choice(names)

    def next_call(self) -> tuple[str, Any, dict[str, Any] | None]:
        """``(name, params, result)``; result ``{"content", "details"?, "is_error"?}`` or
        ``None`` (no recorded result)."""
        rng = self.rng
        self.n += 1
        i = 0 if self.stable else self.n
        variant = rng.randrange(self.variants)
        if not self.reliable and rng.random() < 0.03:
            return self._name("read"), {"path": self.path}, None
        if not self.reliable and rng.random() < 0.03:
            text = "CRITICAL: Called read with identical outcomes 20 times. Session execution " \
                   "blocked to prevent runaway loops.\n\nDo not repeat this exact tool action."
            return self._name("read"), {"path": self.path}, {
                "content": _content(text), "is_error": rng.random() < 0.5,
                "details": {"status": "blocked", "deniedReason": "tool-loop",
                            "intervention": {"kind": "critical-tool-loop"}}}
        kind = self.kind
        if kind == "read":
            return self._name("read"), {"path": self.path}, {
                "content": _content(f"contents {i}"), "details": {"ok": True}}
        if kind == "fetch":
            body = f"page body {i}"
            text = _marker(rng, body, rng.choice([0, 0, 1, 3, 2]))
            details: dict[str, Any] = {"url": "https://example.com"}
            if rng.random() < 0.3:
                details["raw"] = json.dumps({"text": _marker(rng, body)})
            if rng.random() < 0.1:
                details[_marker(rng, "key")] = 1
            return "web_fetch", {"url": "https://example.com"}, {
                "content": _content(text), "details": details}
        if kind == "poll":
            action = rng.choice(["poll", "poll", "log", "wait"])
            details = {"status": "running"}
            if rng.random() < 0.7:
                details["aggregated"] = f"steady {i}"
            return "process", {"action": action, "sessionId": "s1"}, {
                "content": _content("(no new output)"), "details": details}
        if kind == "command_status":
            return "command_status", {"commandId": "c7"}, {
                "content": _content(f"RUNNING {i}"), "details": {"status": "running"}}
        if kind == "exec_fail":
            command = f"{self.command} --shard {variant}" if self.variants > 1 else self.command
            stamp = f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:0{rng.randint(0, 9)}:00Z"
            output = rng.choice([
                f"{stamp} attempt {self.n}: build failed after {rng.randint(1, 900)}ms (pid {rng.randint(100, 999)})",
                f"ERROR at 12:3{rng.randint(0, 9)}:0{rng.randint(0, 9)} retry #{self.n} took {rng.random():.2f} seconds",
                "FAILED: 3 tests" if self.stable else f"FAILED: {self.n} tests",
                "(Command exited with code 1)", "",
            ])
            details = {"status": rng.choice(["failed", "failed", "completed"]),
                       "exitCode": rng.choice([1, 1, 2, 0, 1.5]),
                       "durationMs": rng.randint(1, 900), "aggregated": output}
            if rng.random() < 0.1:
                details["timedOut"] = True
            if rng.random() < 0.1:
                del details["aggregated"]
            return self._name("exec"), {"command": command}, {
                "content": _content(output or "(Command exited with code 1)"), "details": details}
        if kind == "exec":
            status = rng.choice(["completed", "running", "approval-pending", "queued", None])
            details = {"durationMs": rng.randint(1, 500)}
            if status is not None:
                details["status"] = status
            if status == "completed":
                details.update(exitCode=0, aggregated=f"ok {i}")
            elif status == "running":
                details["tail"] = "(no new output)" if self.stable else f"line {i}"
            return self._name("exec"), {"command": self.command}, {
                "content": _content(f"output {i}"), "details": details}
        if kind == "write":
            changed = rng.random() < (0.2 if self.stable else 0.6)
            return self._name("write"), {"path": self.path, "content": "x"}, {
                "content": _content("written" if changed else "no change"),
                "details": {"changed": changed, "path": self.path}}
        if kind == "churn":
            return self.churn_tool, {"path": f"/missing/{variant}.txt"}, {
                "content": _content("ENOENT: no such file" if self.stable else f"ENOENT {i}"),
                "is_error": True}
        if kind == "unknown":
            message = rng.choice([f"Tool {self.missing} not found", f"Unknown tool: {self.missing}"])
            return self.missing, {"q": variant}, {"content": _content(message), "is_error": True}
        if kind == "send":
            payload = {"ok": True, "channel": "feishu", "messageId": f"om_{self.n}",
                       "timestamp": 1000 + self.n}
            tool = rng.choice(["message", "sessions_send", "conversations_send",
                               "conversations_turn", "telegram"])
            return tool, {"action": rng.choice(["send", "read"]), "to": "x", "text": "ping"}, {
                "content": _content(json.dumps(payload)), "details": payload}
        if kind == "names":
            family = rng.choice(["patch", "cron"])
            return self._name(family), {"v": variant}, {"content": _content(f"ok {i}")}
        if kind == "blank":
            return rng.choice(["", "  ", "tool"]), {}, {"content": _content("?"), "details": {}}
        return "list", {"dir": f"/d{variant}"}, {"content": _content(f"x {i}")}


KINDS = ["read", "fetch", "poll", "command_status", "exec_fail", "exec", "write", "churn",
         "unknown", "send", "names", "blank", "list"]


def random_session_2026_9(rng: random.Random, *, openclaw: bool | None = None,
                          calls: int | None = None) -> Session:
    """One random session with about ``calls`` tool calls."""
    if openclaw is None:
        openclaw = rng.random() < 0.6
    total = calls if calls is not None else rng.randint(5, 90)
    patterns = [_Pattern(rng, rng.choice(KINDS)) for _ in range(rng.randint(1, 3))]
    mode = rng.choice(["repeat", "repeat", "pingpong", "pingpong", "mixed"])
    if mode == "pingpong":
        if rng.random() < 0.5:  # two steady sides: the critical level needs that evidence
            patterns = [_Pattern(rng, kind, reliable=True) for kind in
                        rng.sample(["read", "command_status", "fetch", "write"], 2)]
            for pattern in patterns:
                pattern.stable = True
        for pattern in patterns:
            pattern.stable = pattern.stable or rng.random() < 0.8
    b = SessionBuilder()
    b.user("start")
    made = 0
    call_id = 0
    calm = 0.2 if mode == "pingpong" else 1.0  # long alternations need long runs
    while made < total:
        roll = rng.random() / calm
        if roll < 0.025:
            b.user("keep going")
            continue
        if roll < 0.05:
            b.compaction("summary")
            continue
        if roll < 0.06:
            b.assistant("thinking out loud")
            continue
        if mode == "repeat":
            pattern = patterns[0] if rng.random() < 0.85 else rng.choice(patterns)
        elif mode == "pingpong":
            pattern = patterns[made % min(2, len(patterns))]
        else:
            pattern = rng.choice(patterns)
        batch = 1 if mode == "pingpong" or rng.random() < 0.75 else rng.randint(2, 4)
        same = rng.random() < 0.5
        turn = b.assistant("")
        pending: list[tuple[str, dict[str, Any] | None]] = []
        first = pattern.next_call()
        for k in range(batch):
            name, params, result = first if k == 0 or same else (
                rng.choice(patterns).next_call())
            call_id += 1
            cid = f"call_{call_id}"
            if openclaw:
                b.call(turn, name, params, "value", id=cid)
            else:
                text = json.dumps(params) if rng.random() > 0.05 else "{not json"
                b.call(turn, name, text, "json_text", id=cid)
            pending.append((cid, result))
            made += 1
        for cid, result in pending:
            if result is None:
                continue
            text = "\n".join(p["text"] for p in result["content"])
            if openclaw:
                b.result(cid, result["content"], text, is_error=result.get("is_error", False),
                         details=result.get("details", {}))
            else:
                b.result(cid, text, text, is_error=result.get("is_error", False))
    return b.build(id=f"gen9-{rng.randint(0, 10**9)}", source="generated",
                   format="openclaw_session" if openclaw else "openai_chat")
