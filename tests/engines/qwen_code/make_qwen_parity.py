"""Write the public parity set ``tests/data/parity/qwen-code/``: 40 generated sessions (OpenAI
chat bodies), ``configs.json`` and ``expected/<config>.jsonl``. Every expected replay is first
checked, step by step, against the real package through ``qwen_bridge.mjs`` (the oracle
test's comparison), so the files are the real code's verdicts.

Usage: ``LOOPSCOPE_QWEN_DIR=/tmp/loopscope-qwen-oracle PYTHONPATH=src python -m
tests.engines.qwen_code.make_qwen_parity``
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from tests.engines.qwen_code._qwen_gen import random_session
from tests.engines.qwen_code.test_qwen_oracle import (
    bridge_session,
    compare,
    oracle_dir,
    run_bridge,
)

from loopscope.engines.qwen_code.engine import ENGINE
from loopscope.formats import load_file
from loopscope.model import AssistantTurn, Session, ToolResult, UserMessage

OUT = Path(__file__).resolve().parents[2] / "data" / "parity" / "qwen-code"
CONFIGS = {
    "defaults": [],
    "detection-on": ["model.skipLoopDetection=false"],
    "explicit-cap-12": ["model.maxToolCallsPerTurn=12", "capMode=explicit"],
    "cap-off-detection-on": ["model.skipLoopDetection=false", "model.maxToolCallsPerTurn=0",
                             "capMode=explicit"],
    "adaptive-cap-4-what-if": ["model.maxToolCallsPerTurn=4", "ADAPTIVE_CAP_HARD_MULTIPLIER=5"],
}


def openai_body(session: Session) -> dict[str, object]:
    messages: list[dict[str, object]] = []
    for event in session.events:
        if isinstance(event, UserMessage):
            messages.append({"role": "user", "content": event.text})
        elif isinstance(event, AssistantTurn):
            message: dict[str, object] = {"role": "assistant", "content": event.text or None}
            if event.thinking:
                message["reasoning_content"] = event.thinking
            if event.tool_calls:
                message["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {
                        "name": c.name,
                        "arguments": c.raw_arguments if isinstance(c.raw_arguments, str)
                        else json.dumps(c.raw_arguments)}}
                    for c in event.tool_calls]
            messages.append(message)
        elif isinstance(event, ToolResult):
            messages.append({"role": "tool", "tool_call_id": event.call_id, "content": event.text})
    return {"model": "qwen3-coder", "messages": messages}


def main() -> None:
    oracle_dir()  # (before anything is removed: the package must be there)
    rng = random.Random(3636)
    shutil.rmtree(OUT, ignore_errors=True)
    (OUT / "sessions").mkdir(parents=True)
    (OUT / "expected").mkdir()
    files = []
    for n in range(40):
        path = OUT / "sessions" / f"qcp-{n:03d}.json"
        path.write_text(json.dumps(openai_body(random_session(rng, max_turns=30)),
                                   ensure_ascii=False) + "\n", encoding="utf-8")
        files.append(path)
    (OUT / "configs.json").write_text(json.dumps({"configs": [
        {"name": name, "set": pairs} for name, pairs in CONFIGS.items()]}, indent=2) + "\n")
    sessions = [s for f in files for s in load_file(f).sessions]
    for name, pairs in CONFIGS.items():
        config = ENGINE.resolve_config(None, [tuple(p.split("=", 1)) for p in pairs]).config
        node = run_bridge([bridge_session(s, config) for s in sessions])
        for session, steps in zip(sessions, node, strict=True):
            compare(session, config, steps)
        with (OUT / "expected" / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for session in sessions:
                replay = ENGINE.replay(session, config).to_json()
                replay["source"] = str(Path(session.source).relative_to(OUT))
                out.write(json.dumps(replay, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
