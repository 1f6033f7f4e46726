"""The rules of openclaw@2026.9.6, case by case (read from ``dist/tool-loop-detection-*.mjs``,
``dist/agent-tools.before-tool-call-*.mjs``, ``dist/agent-core-*.mjs`` and
``dist/tool-policy-shared-*.mjs``): names, outcome hashing, streaks, argument churn, the order
of the checks, the batch admission, recovery and terminal interventions, the warning buckets
and the post-compaction guard. The differential test runs the same rules in the real package;
these pin them without node."""

from __future__ import annotations

from typing import Any

import pytest

from loopscope.engines.openclaw import ENGINE
from loopscope.engines.openclaw.shared.hashing import hash_tool_call
from loopscope.engines.openclaw.v2026_9.hashing import (
    TERMINAL_EXEC_FAILURE,
    TOOL_LOOP_VETO,
    canonicalize_markers,
    detection_name,
    digest_outcome,
    exec_failure_identity,
    hash_tool_outcome,
    normalize_tool_name,
)
from loopscope.engines.openclaw.v2026_9.upstream import (
    TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE,
    BatchCall,
    HistoryRecord9,
    LoopState9,
    WarningBuckets,
    admit_tool_call_batch,
    argument_churn_streak,
    detect_tool_call_loop,
    no_progress_streak,
    record_tool_call,
    record_tool_call_outcome,
)
from loopscope.formats.builder import SessionBuilder
from loopscope.jsonrules.javascript import UNDEFINED, digest
from loopscope.model import Session

V9 = "2026.9.6"
TEXT = [{"type": "text", "text": "same"}]


def text(value: str, details: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": value}]}
    if details is not None:
        result["details"] = details
    return result


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(("raw", "normalised"), [
    ("exec", "exec"), ("Bash", "exec"), (" bash ", "exec"), ("APPLY-PATCH", "apply_patch"),
    ("cron", "automations"), ("Read", "read"), ("", "tool"), ("   ", ""),
    ("\ufeffRead\u3000", "read"), ("bash\u0085", "bash\u0085"),
])
def test_tool_names_are_normalised(raw: str, normalised: str) -> None:
    assert normalize_tool_name(raw) == normalised


def test_a_blank_name_is_detected_as_tool() -> None:
    assert detection_name(normalize_tool_name("  ")) == "tool"
    assert detection_name("read") == "read"


# --------------------------------------------------------------------------- outcome digests

MARK = ('<<<EXTERNAL_UNTRUSTED_CONTENT id={q}{id}{q}>>>{body}'
        '<<<END_EXTERNAL_UNTRUSTED_CONTENT id={q}{close}{q}>>>')


def marked(marker_id: str, body: str = "page", *, escapes: int = 0,
           close: str | None = None) -> str:
    q = "\\" * escapes + '"'
    return MARK.format(q=q, id=marker_id, body=body, close=close or marker_id)


def test_marker_ids_are_canonicalised() -> None:
    a, b = "0123456789abcdef", "fedcba9876543210"
    assert canonicalize_markers(marked(a)) == marked("0000000000000000")
    assert digest_outcome({"text": marked(a)}) == digest_outcome({"text": marked(b)})
    # Inside JSON text escaped once (\" quotes), the same.
    assert canonicalize_markers(marked(a, escapes=1)) == marked("0" * 16, escapes=1)
    # Mismatched ids, upper-case hex, 2 escapes (not 2^k-1): kept as they are.
    for kept in (marked(a, close=b), marked(a.upper()), marked(a, escapes=2)):
        assert canonicalize_markers(kept) == kept
    # A marker inside another: only the inner pair matches.
    nested = marked(a, body=marked(b))
    assert canonicalize_markers(nested) == marked(a, body=marked("0" * 16))
    # A quote inside the body with the wrong number of escapes keeps the match (1 escape).
    assert canonicalize_markers(marked(a, body='say "hi"', escapes=1)) == \
        marked(a, body='say "hi"', escapes=1)
    # Without markers the digest is the plain one.
    assert digest_outcome({"x": ["y", 1]}) == digest({"x": ["y", 1]})


def test_marker_canonicalisation_reaches_keys_and_orders_by_the_canonical_key() -> None:
    a, b = "0123456789abcdef", "fedcba9876543210"
    assert digest_outcome({marked(a): 1, "z": 2}) == digest_outcome({marked(b): 1, "z": 2})
    assert digest_outcome({marked(a): 1}) != digest({marked(a): 1})


# --------------------------------------------------------------------------- outcomes


def test_errors_are_no_progress_with_unknown_tool_names() -> None:
    outcome = hash_tool_outcome("gog", {}, error="Tool gog not found")
    assert outcome.result_hash and outcome.result_hash.startswith("error:")
    assert outcome.no_progress and outcome.unknown_tool_name == "gog"
    assert outcome.outcome_kind is None


def test_a_loop_veto_is_recorded_without_a_hash() -> None:
    veto = hash_tool_outcome("read", {}, text("blocked", {"status": "blocked",
                                                          "deniedReason": "tool-loop"}))
    assert (veto.result_hash, veto.outcome_kind) == (None, TOOL_LOOP_VETO)
    assert veto.recorded
    other = hash_tool_outcome("read", {}, text("no", {"status": "blocked",
                                                      "deniedReason": "plugin-approval"}))
    assert other.result_hash and other.outcome_kind is None
    assert not hash_tool_outcome("read", {}).recorded


def _exec(details: dict[str, Any], body: str = "out") -> Any:
    return hash_tool_outcome("exec", {"command": "make"}, text(body, details))


def test_terminal_exec_failures() -> None:
    failed = _exec({"status": "failed", "exitCode": 2, "aggregated": "boom"})
    assert failed.outcome_kind == TERMINAL_EXEC_FAILURE and failed.failure_identity_hash
    assert not failed.no_progress
    completed = _exec({"status": "completed", "exitCode": 1}, "error text")
    assert completed.outcome_kind == TERMINAL_EXEC_FAILURE
    for not_terminal in (
            {"status": "failed", "exitCode": 0, "aggregated": "boom"},
            {"status": "failed", "exitCode": 2, "aggregated": "boom", "timedOut": True},
            {"status": "failed", "exitCode": "2", "aggregated": "boom"},
            {"status": "failed", "exitCode": None, "aggregated": "boom"},
            {"status": "failed", "exitCode": 2, "aggregated": "(Command exited with code 2)"},
            {"status": "running", "exitCode": 2, "tail": "x"}):
        assert _exec(not_terminal).outcome_kind is None, not_terminal
    assert _exec({"status": "failed", "exitCode": 1}, "").outcome_kind is None
    assert _exec({"status": "failed", "exitCode": 1.5, "aggregated": "x"}).outcome_kind \
        == TERMINAL_EXEC_FAILURE


@pytest.mark.parametrize(("one", "other"), [
    ("2026-09-06T10:00:00Z build failed", "2026-09-07 11:22:33.123+02:00 build failed"),
    ("failed at 10:00:01.5", "failed at 9:59:59"),
    ("attempt 3 failed", "Attempt #17 failed"),
    ("retry 1: no route", "RETRY=22: no route"),
    ("took 120ms", "took 4.5 seconds"),
    ("took 3 s", "took 12s"),
    ("waited 2 minutes", "waited 1 hour"),
    ("pid 4000 died", "PID: 77 died"),
    ("ppid 1 exit", "ppid=2 exit"),
    ("took 2\u017f", "took 9s"),  # JS /iu folds the long s onto s
])
def test_failure_identity_ignores_volatile_parts(one: str, other: str) -> None:
    details = {"status": "failed", "exitCode": 1}
    assert exec_failure_identity(details, 1, one) == exec_failure_identity(details, 1, other)


@pytest.mark.parametrize(("one", "other"), [
    ("3 tests failed", "4 tests failed"),
    ("attempts 3", "attempts 4"),  # "attempts" is not a word of the pattern
    ("pid4000", "pid4001"),  # no word boundary
    ("12 sec", "13 sec"),
])
def test_failure_identity_keeps_the_rest(one: str, other: str) -> None:
    details = {"status": "failed", "exitCode": 1}
    assert exec_failure_identity(details, 1, one) != exec_failure_identity(details, 1, other)


def test_unchanged_writes_and_sends() -> None:
    unchanged = hash_tool_outcome("write", {"path": "a"}, text("ok", {"changed": False}))
    assert unchanged.result_hash == digest({"status": "unchanged"}) and unchanged.no_progress
    changed = hash_tool_outcome("write", {"path": "a"}, text("ok", {"changed": True}))
    assert not changed.no_progress and changed.result_hash != unchanged.result_hash
    payload = {"ok": True, "messageId": "m1", "timestamp": 5}
    for tool in ("conversations_send", "conversations_turn", "sessions_send"):
        first = hash_tool_outcome(tool, {}, text("a", payload))
        second = hash_tool_outcome(tool, {}, text("b", {**payload, "messageId": "m2"}))
        assert first == second
    plain = hash_tool_outcome("telegram", {"to": "x"}, text("a", payload))
    assert plain != hash_tool_outcome("telegram", {"to": "x"}, text("a", {**payload,
                                                                          "messageId": "m2"}))


def test_process_wait_is_not_a_poll() -> None:
    from loopscope.engines.openclaw.shared.hashing import is_known_poll_call

    assert is_known_poll_call("process", {"action": "poll"})
    assert is_known_poll_call("command_status", None)
    assert not is_known_poll_call("process", {"action": "wait"})


# --------------------------------------------------------------------------- streaks


def _record(args: str, result: str | None = None, kind: str | None = None, *,
            tool: str = "exec", fid: str | None = None, no_progress: bool = False
            ) -> HistoryRecord9:
    return HistoryRecord9(tool, f"{tool}:{args}", None, "run-1", result, None, None, kind, fid,
                          no_progress)


def test_vetoes_count_towards_the_streak() -> None:
    veto = TOOL_LOOP_VETO
    assert no_progress_streak([_record("a", "r"), _record("a", kind=veto),
                               _record("a", kind=veto)], "exec", "exec:a") == (3, "r")
    assert no_progress_streak([_record("a", kind=veto)] * 2, "exec", "exec:a") == (2, None)
    # A veto between two different outcomes is lost with the older one.
    assert no_progress_streak([_record("a", "r1"), _record("a", kind=veto), _record("a", "r2")],
                              "exec", "exec:a") == (1, "r2")


def test_the_exec_failure_streak_crosses_changed_arguments() -> None:
    failure = TERMINAL_EXEC_FAILURE
    history = [_record("b1", "h1", failure, fid="f"), _record("b2", "h2", failure, fid="f")]
    assert no_progress_streak(history, "exec", "exec:b3") == (2, "h2")
    # A different failure, a non-failure or another tool ends it.
    assert no_progress_streak([_record("b1", "h1", failure, fid="g"), *history],
                              "exec", "exec:b3") == (2, "h2")
    assert no_progress_streak([_record("b1", "h1"), *history], "exec", "exec:b3") == (2, "h2")
    # Coming back to the current arguments after crossing other ones stops it.
    assert no_progress_streak([_record("a", "h1", failure, fid="f"),
                               _record("b", "h2", failure, fid="f")], "exec", "exec:a") == (1, "h1")
    # Only for exec.
    assert no_progress_streak([_record("b1", "h1", failure, fid="f", tool="run"),
                               _record("b2", "h2", failure, fid="f", tool="run")],
                              "run", "run:b3") == (0, None)


def test_argument_churn() -> None:
    def churn(*variants: str, result: str = "e", current: str = "a") -> tuple[int, int]:
        history = [_record(v, result, tool="read", no_progress=True) for v in variants]
        return argument_churn_streak(history, "read", f"read:{current}")

    assert churn(*"abcabcabca") == (10, 3)
    assert churn(*"abababab") == (8, 2)
    assert churn(*"aaaabb") == (0, 0)  # a variant seen fewer than 3 times
    assert churn(*"aaabbb", current="c") == (0, 0)  # the current variant is not among them
    assert churn(*"aaaaaa") == (0, 0)  # one variant is a plain repeat
    mixed = [_record("a", "e1", tool="read", no_progress=True)] * 3 + \
        [_record("b", "e2", tool="read", no_progress=True)] * 3
    assert argument_churn_streak(mixed, "read", "read:a") == (0, 0)  # two outcomes
    progress = [_record("a", "e", tool="read", no_progress=True)] * 3 + \
        [_record("b", "ok", tool="read")] + [_record("b", "e", tool="read", no_progress=True)] * 3
    assert argument_churn_streak(progress, "read", "read:b") == (0, 0)


# --------------------------------------------------------------------------- the detector


def _state(*records: HistoryRecord9) -> LoopState9:
    return LoopState9(list(records))


def test_messages_of_2026_9() -> None:
    state = _state(*[_record("a", "r", tool="read")] * 30)
    verdict = detect_tool_call_loop(state, "read", None, True, "run-1", args_hash="read:a")
    assert verdict is not None and verdict.detector == "global_circuit_breaker"
    assert verdict.message == ("CRITICAL: read repeated identical no-progress outcomes 30 times. "
                               "Session execution blocked by global circuit breaker to prevent "
                               "runaway loops.")
    state = _state(*[_record("a", "r", tool="read")] * 20)
    verdict = detect_tool_call_loop(state, "read", None, True, "run-1", args_hash="read:a")
    assert verdict is not None and verdict.message == (
        "CRITICAL: Called read with identical outcomes 20 times. Session execution blocked to "
        "prevent runaway loops.")
    assert verdict.warning_key == "generic:read:read:a:r"
    churn = _state(*[_record(v, "e", tool="read", no_progress=True) for v in "abcabcabca"])
    verdict = detect_tool_call_loop(churn, "read", None, True, "run-1", args_hash="read:b")
    assert verdict is not None and (verdict.level, verdict.detector, verdict.count) == (
        "warning", "argument_churn", 10)
    assert verdict.warning_key == "argument-churn:read"
    assert verdict.message.startswith("WARNING: read has cycled through 3 repeated argument "
                                      "patterns with the same stable outcome 10 times.")


def test_detection_is_off_unless_enabled_is_truthy() -> None:
    state = _state(*[_record("a", "r", tool="read")] * 25)
    for enabled in (False, None, UNDEFINED, 0, ""):
        assert detect_tool_call_loop(state, "read", None, enabled, "run-1",
                                     args_hash="read:a") is None


# --------------------------------------------------------------------------- replay


class Chat:
    """A small OpenClaw session builder: one assistant message per ``message()``."""

    def __init__(self) -> None:
        self.b = SessionBuilder()
        self.b.user("go")
        self.n = 0

    def message(self, *calls: tuple[str, Any, Any]) -> Chat:
        turn = self.b.assistant("")
        ids = []
        for name, args, _ in calls:
            self.n += 1
            ids.append(f"c{self.n}")
            self.b.call(turn, name, args, "value", id=ids[-1])
        for cid, (_, _, result) in zip(ids, calls, strict=True):
            if result is not None:
                body, details, error = result
                self.b.result(cid, [{"type": "text", "text": body}], body, is_error=error,
                              details=details)
        return self

    def repeat(self, count: int, name: str = "read", args: Any = None,
               result: tuple[str, Any, bool] = ("same", {}, False)) -> Chat:
        for _ in range(count):
            self.message((name, args if args is not None else {"path": "/a"}, result))
        return self

    def user(self) -> Chat:
        self.b.user("again")
        return self

    def compaction(self) -> Chat:
        self.b.compaction("summary")
        return self

    def build(self) -> Session:
        return self.b.build(id="t", source="t.jsonl", format="openclaw_session")


def _replay(session: Session, **values: Any) -> list[Any]:
    config = ENGINE.config(values, V9).config
    result = ENGINE.replay(session, config)
    assert ENGINE.run(ENGINE.prepare(session, V9), config) == result
    return list(result.steps)


def test_recovery_then_terminal_then_a_new_run() -> None:
    session = Chat().repeat(22).user().repeat(21).build()
    steps = _replay(session)
    assert [(s.verdict, s.detector, s.count, s.extra["intervention"]) for s in steps[19:22]] == [
        ("warn", "generic_repeat", 19, None),
        ("refuse", "generic_repeat", 20, "recovery"),
        ("refuse", "tool_loop_recovery_terminated", 21, "terminal"),
    ]
    assert steps[21].extra["message"] == TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE
    assert steps[21].extra["loop_detector"] == "generic_repeat"
    # The new user message starts a run: counts and the one-shot recovery start again.
    assert steps[42].detector == "generic_repeat" and steps[42].extra["intervention"] == "recovery"
    assert steps[42].extra["run_id"] == "run-2"


def test_projected_vetoes_make_identical_calls_of_a_message_count() -> None:
    same = ("read", {"path": "/a"}, ("same", {}, False))
    session = Chat().repeat(19).message(("ls", {}, ("x", {}, False)), same, same).build()
    steps = _replay(session)
    last = steps[19:]
    # The first read sees 19 outcomes; the second also sees the first's projected veto (20).
    assert [(s.verdict, s.detector, s.count) for s in last] == [
        ("refuse", "tool_loop_batch_skipped", None),
        ("refuse", "tool_loop_batch_skipped", None),
        ("refuse", "generic_repeat", 20),
    ]
    assert {s.extra["loop_detector"] for s in last} == {"generic_repeat"}
    result = ENGINE.replay(session, ENGINE.default_config(V9))
    assert result.first_refusal is not None
    assert (result.first_refusal.call, result.first_refusal.detector) == (
        19, "tool_loop_batch_skipped")


def test_warnings_are_shown_once_per_bucket() -> None:
    steps = _replay(Chat().repeat(25, result=None).build())  # no results: warnings only
    shown = [s.count for s in steps if s.extra["warning_emitted"]]
    assert shown == [10, 20]
    assert [s.count for s in _replay(Chat().repeat(25, result=None).build(),
                                     LOOP_WARNING_BUCKET_SIZE=4)
            if s.extra["warning_emitted"]] == [10, 12, 16, 20, 24]
    buckets = WarningBuckets()
    assert [buckets.should_emit("k", "d", "t", n, "run-1") for n in (9, 10, 15, 20, 19)] == [
        False, True, False, True, False]
    assert buckets.should_emit("k", "d", "t", 10, "run-2")  # keys are per run


def test_post_compaction_window_is_three_and_retired_keys_do_not_move_it() -> None:
    session = Chat().compaction().repeat(3).build()
    for values in ({}, {"enabled": True}):
        steps = _replay(session, **values)
        assert (steps[2].verdict, steps[2].detector, steps[2].count) == (
            "refuse", "post_compaction_guard", 3)
        assert steps[2].extra["guard_abort"] is True
    legacy = ENGINE.resolve_config(None, [("postCompactionGuard.windowSize", "1")],
                                   version=V9).config
    assert [s.verdict for s in ENGINE.replay(session, legacy).steps] == ["pass", "pass", "refuse"]
    assert _replay(session, DEFAULT_WINDOW_SIZE=2)[1].detector == "post_compaction_guard"
    assert all(s.verdict == "pass" for s in _replay(session, enabled=False))


def test_names_are_normalised_in_the_replay() -> None:
    session = Chat().repeat(5, "Bash", {"command": "ls"}).repeat(6, "exec", {"command": "ls"})
    steps = _replay(session.build())
    assert steps[0].tools == ("Bash",) and steps[0].signature == hash_tool_call(
        "exec", {"command": "ls"})
    assert (steps[10].verdict, steps[10].detector, steps[10].count) == ("warn",
                                                                         "generic_repeat", 10)


def test_calls_are_not_recorded_when_disabled() -> None:
    state = LoopState9()
    record_tool_call(state, "read", {}, "c1", "run-1")
    assert record_tool_call_outcome(state, "read", {}, "c1", text("x"), run_id="run-1") \
        is state.history[0]
    # An outcome without its call is appended as its own record.
    record_tool_call_outcome(state, "read", {}, "c9", text("x"), run_id="run-1")
    assert len(state.history) == 2


def test_admission_skips_when_not_exactly_enabled() -> None:
    state = _state(*[_record("a", "r", tool="read")] * 25)
    calls = [BatchCall("read", None, "c", "read:a")]
    assert admit_tool_call_batch(state, calls, 1, "run-1", WarningBuckets()).intervention is None
    admitted = admit_tool_call_batch(state, calls, True, "run-1", WarningBuckets())
    assert admitted.intervention is not None and admitted.trigger == 0
    assert len(state.history) == 25  # the projected vetoes live in a copy
