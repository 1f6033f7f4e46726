"""Property tests for OpenClaw 2026.9.6: the fast path equals the plain replay (every view of
the lazy replay, every field of every step, what-ifs included), one prepared session serving
many configurations in any order, counts that do not depend on thresholds, and the stopping
limits never adding a refusal when raised."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engines.openclaw._openclaw9_gen import random_session_2026_9
from tests.engines.openclaw.test_openclaw_properties import assert_lazy_equals

from loopscope.engines.openclaw import ENGINE
from loopscope.engines.openclaw.v2026_9.config import (
    WHAT_IF_NAMES,
    OpenClaw9Config,
    make_config,
)
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

V9 = "2026.9.6"

# --------------------------------------------------------------------------- strategies

_NAMES = ["read", "Read", " read ", "exec", "Bash", "write", "process", "command_status", "",
          "  ", "ls", "gog"]
_PARAMS: list[Any] = [{"path": "/a"}, {"path": "/b"}, {"path": "/c"},
                      {"action": "poll", "sessionId": "s"}, {"action": "log", "sessionId": "s"},
                      {"command": "make"}, {"command": "make -j2"}, {}]
_MARKED = ('<<<EXTERNAL_UNTRUSTED_CONTENT id="{0}">>>page<<<END_EXTERNAL_UNTRUSTED_CONTENT '
           'id="{0}">>>')


def _result(kind: int, n: int) -> dict[str, Any] | None:
    """One of a few outcome shapes (``n`` varies the volatile parts)."""
    text = [{"type": "text", "text": "same"}]
    return [
        None,
        {"content": text, "details": {}},
        {"content": [{"type": "text", "text": f"v{n % 3}"}], "details": {}},
        {"content": [{"type": "text", "text": "ENOENT: no such file"}], "is_error": True},
        {"content": [{"type": "text", "text": "Tool gog not found"}], "is_error": True},
        {"content": text, "details": {"status": "blocked", "deniedReason": "tool-loop"}},
        {"content": [{"type": "text", "text": "Do not repeat this exact tool action."}],
         "details": {"status": "blocked", "deniedReason": "tool-loop"}, "is_error": True},
        {"content": text, "details": {"status": "failed", "exitCode": 2,
                                      "aggregated": f"12:0{n % 10}:00 attempt {n} failed "
                                                    f"after {n}ms pid {n}"}},
        {"content": text, "details": {"status": "completed", "exitCode": 1,
                                      "aggregated": "(Command exited with code 1)"}},
        {"content": text, "details": {"changed": False}},
        {"content": [{"type": "text", "text": _MARKED.format(f"{n:016x}")}], "details": {}},
        {"content": text, "details": {"status": "running", "aggregated": "steady"}},
    ][kind]


_call = st.tuples(st.sampled_from(range(len(_NAMES))), st.sampled_from(range(len(_PARAMS))),
                  st.integers(0, 11))
_event = st.one_of(
    st.just("user"), st.just("compaction"), st.just("prose"),
    st.lists(_call, min_size=1, max_size=4),
)


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    """A session whose calls repeat a handful of names, arguments and outcomes (so the
    detectors have something to count), with user messages, compactions and batches."""
    openclaw = draw(st.booleans())
    body = draw(st.lists(st.one_of(_event, st.lists(_call, min_size=1, max_size=1)),
                         max_size=60))
    repeat = draw(st.integers(1, 4))
    b = SessionBuilder()
    b.user("start")
    call_no = 0
    for event in body * repeat:
        if event == "user":
            b.user("again")
        elif event == "compaction":
            b.compaction("summary")
        elif event == "prose":
            b.assistant("thinking")
        else:
            turn = b.assistant("")
            results = []
            for name, params, kind in event:
                call_no += 1
                cid = f"c{call_no}"
                if openclaw:
                    b.call(turn, _NAMES[name], _PARAMS[params], "value", id=cid)
                else:
                    import json

                    b.call(turn, _NAMES[name], json.dumps(_PARAMS[params]), "json_text", id=cid)
                results.append((cid, _result(kind, call_no)))
            for cid, result in results:
                if result is None:
                    continue
                text = "\n".join(p["text"] for p in result["content"])
                if openclaw:
                    b.result(cid, result["content"], text, is_error=result.get("is_error", False),
                             details=result.get("details", {}))
                else:
                    b.result(cid, text, text, is_error=result.get("is_error", False))
    return b.build(id=f"hyp-{call_no}", source="generated",
                   format="openclaw_session" if openclaw else "openai_chat")


_WHAT_IF_RANGES = {"TOOL_CALL_HISTORY_SIZE": (1, 40), "WARNING_THRESHOLD": (1, 12),
                   "CRITICAL_THRESHOLD": (1, 22), "GLOBAL_CIRCUIT_BREAKER_THRESHOLD": (1, 32),
                   "UNKNOWN_TOOL_THRESHOLD": (1, 12), "ARGUMENT_CHURN_THRESHOLD": (1, 12),
                   "DEFAULT_WINDOW_SIZE": (1, 5), "LOOP_WARNING_BUCKET_SIZE": (1, 12)}


@st.composite
def configs(draw: st.DrawFn) -> OpenClaw9Config:
    values = {name: draw(st.integers(low, high)) for name, (low, high) in
              _WHAT_IF_RANGES.items() if draw(st.booleans())}
    return make_config(draw(st.sampled_from([True, True, True, False])), values)


def _random_config(rng: random.Random) -> OpenClaw9Config:
    values = {name: rng.randint(low, high) for name, (low, high) in _WHAT_IF_RANGES.items()
              if rng.random() < 0.5}
    return make_config(rng.random() < 0.9, values)


# --------------------------------------------------------------------------- fast == reference


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(sessions(), st.lists(configs(), min_size=1, max_size=5))
def test_fast_path_equals_replay_for_any_session_and_configs(session: Session,
                                                              cfgs: list[OpenClaw9Config]) -> None:
    prepared = ENGINE.prepare(session, V9)
    for config in cfgs:  # one prepared session, many configurations, in the drawn order
        assert_lazy_equals(prepared, config, ENGINE.replay(session, config))


def test_fast_path_equals_replay_on_generated_sessions() -> None:
    rng = random.Random(96)
    for n in range(80):
        session = random_session_2026_9(rng, calls=rng.randint(3, 150) if n % 10 else 300)
        prepared = ENGINE.prepare(session, V9)
        for _ in range(4):
            config = _random_config(rng)
            assert_lazy_equals(prepared, config, ENGINE.replay(session, config))


def test_reuse_in_any_order() -> None:
    rng = random.Random(7)
    session = random_session_2026_9(rng, calls=200)
    prepared = ENGINE.prepare(session, V9)
    cfgs = [_random_config(rng) for _ in range(12)]
    first = [ENGINE.run(prepared, c) for c in cfgs]
    again = [ENGINE.run(prepared, c) for c in reversed(cfgs)]
    assert first == list(reversed(again))
    assert first == [ENGINE.replay(session, c) for c in cfgs]


def test_counts_do_not_depend_on_thresholds() -> None:
    session = random_session_2026_9(random.Random(3), calls=120)
    prepared = ENGINE.prepare(session, V9)
    for values in ({}, {"WARNING_THRESHOLD": 2}, {"CRITICAL_THRESHOLD": 3,
                                                   "ARGUMENT_CHURN_THRESHOLD": 1}):
        assert ENGINE.run(prepared, make_config(True, values)).steps
    assert list(prepared._counters) == [30]  # counted once for the one history size
    assert ENGINE.run(prepared, make_config(True, {"TOOL_CALL_HISTORY_SIZE": 12})).steps
    assert sorted(prepared._counters) == [12, 30]


def _refused(session: Session, config: OpenClaw9Config) -> set[int]:
    return {n for n, s in enumerate(ENGINE.replay(session, config).steps)
            if s.verdict == "refuse"}


def test_raising_a_stopping_limit_never_adds_a_refusal() -> None:
    """Counts do not depend on verdicts, a call's verdict does not depend on the calls before
    it in its message, and a stop needs a count at or above the limit: so raising
    CRITICAL_THRESHOLD, GLOBAL_CIRCUIT_BREAKER_THRESHOLD or UNKNOWN_TOOL_THRESHOLD can only
    remove refused steps (recovery or terminal, skipped calls included)."""
    rng = random.Random(11)
    for _ in range(40):
        session = random_session_2026_9(rng, calls=rng.randint(20, 120))
        base = _random_config(rng).with_settings(enabled=True)
        before = _refused(session, base)
        for name in ("CRITICAL_THRESHOLD", "GLOBAL_CIRCUIT_BREAKER_THRESHOLD",
                     "UNKNOWN_TOOL_THRESHOLD"):
            current = base.settings()[name]
            raised = base.with_settings(**{name: current + rng.randint(1, 8)})
            assert _refused(session, raised) <= before, (session.id, name)


def test_what_ifs_at_upstream_values_are_upstream() -> None:
    session = random_session_2026_9(random.Random(5), calls=80)
    explicit = make_config(True, {name: spec.default for spec in ENGINE.settings_for(V9)
                                  for name in [spec.name] if name in WHAT_IF_NAMES})
    assert explicit == make_config(True)
    assert not explicit.hypothetical
    assert ENGINE.replay(session, explicit) == ENGINE.replay(session, make_config(True))
