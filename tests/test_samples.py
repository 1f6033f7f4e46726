"""The bundled ``sample_transcripts/``: each one loads and shows the behaviour it was written for.

Every sample is replayed through both engines at their defaults, and through OpenClaw at the
low thresholds the samples' README uses (``warningThreshold=3``, ``criticalThreshold=5``; the
circuit breaker stays at its default 30). The table below is the README's table in test form;
the tests after it check the detail that makes each sample worth shipping.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopscope.labels import LABEL_VALUES, labels_for_sessions, load_labels
from tests.conftest import SAMPLES

try:
    from loopscope.engines import SessionReplay, get_engine
    from loopscope.engines.gglib.upstream import scan_history
    from loopscope.formats import load_file, load_paths
    from loopscope.model import Session
except ImportError as exc:  # the loader and the engines are written alongside these samples
    pytest.skip(f"loader or engines not importable yet: {exc}", allow_module_level=True)

LOW = (("warningThreshold", "3"), ("criticalThreshold", "5"))
"""The OpenClaw thresholds the README calls "low"."""

Refusal = tuple[int, int | None, str] | None
"""``(turn, call, detector)`` of the first refusal, or ``None``."""


@dataclass(frozen=True)
class Expect:
    format: str
    gglib: Refusal
    openclaw: Refusal
    openclaw_low: Refusal


EXPECTED: dict[str, Expect] = {
    "write_loop_refused_at_third_batch.json": Expect("openai_chat", (3, 3, "loop"), None, None),
    "polling_rescued_by_changing_output.json": Expect("anthropic_messages", None, None, None),
    "quiet_poll_refused_at_observation_ceiling.json": Expect(
        "openai_chat", (16, 16, "loop"), None, (6, 6, "generic_repeat")),
    "ab_cycle_escapes_gglib_trips_pingpong.json": Expect(
        "openai_responses", None, None, (4, 4, "ping_pong")),
    "user_asks_three_times_for_same_failing_build.jsonl": Expect("claude_code", None, None, None),
    "prose_stagnation_same_reply_six_times.jsonl": Expect(
        "openai_chat", (11, None, "stagnation"), None, None),
    "unknown_tool_retry_storm.jsonl": Expect(
        "gemini_cli_stream", None, (10, 10, "unknown_tool_repeat"), (10, 10, "unknown_tool_repeat")),
    "post_compaction_loop.jsonl": Expect(
        "openclaw_session", (6, 6, "loop"), (6, 6, "post_compaction_guard"),
        (6, 6, "post_compaction_guard")),
    "exec_poll_durations_change.jsonl": Expect(
        "openclaw_session", (3, 3, "loop"), (21, 21, "generic_repeat"), (6, 6, "generic_repeat")),
    "edit_test_edit_test_legitimate.jsonl": Expect("codex_rollout", None, None, None),
    "parallel_batch_in_shuffled_order.jsonl": Expect("claude_code", (2, 4, "loop"), None, None),
    "timestamp_drift_two_conversations.jsonl#0": Expect("openai_chat", (16, 16, "loop"), None, None),
    "timestamp_drift_two_conversations.jsonl#1": Expect("openai_chat", None, None, None),
}


def _file_of(name: str) -> str:
    return name.split("#")[0]


@functools.cache
def sessions_of(file_name: str) -> tuple[Session, ...]:
    imported = load_file(str(SAMPLES / file_name))
    return tuple(imported.sessions)


def session(name: str) -> Session:
    file_name, _, n = name.partition("#")
    found = sessions_of(file_name)
    return found[int(n) if n else 0]


@functools.cache
def _replay(name: str, engine: str, overrides: tuple[tuple[str, str], ...]) -> SessionReplay:
    e = get_engine(engine)
    config = e.resolve_config(None, list(overrides)).config
    return e.replay(session(name), config)


def gglib(name: str) -> SessionReplay:
    return _replay(name, "gglib", ())


def openclaw(name: str, low: bool = False) -> SessionReplay:
    return _replay(name, "openclaw", LOW if low else ())


def refusal(replay: SessionReplay) -> Refusal:
    f = replay.first_refusal
    return None if f is None else (f.turn, f.call, f.detector)


def step_at(replay: SessionReplay, turn: int) -> Any:
    (step,) = [s for s in replay.steps if s.turn == turn]
    return step


def warnings_of(replay: SessionReplay) -> list[tuple[int, str | None, int | None]]:
    return [(s.turn, s.detector, s.count) for s in replay.steps if s.verdict == "warn"]


# --------------------------------------------------------------------------- loading


def test_every_file_in_the_folder_is_a_sample_in_the_table() -> None:
    on_disk = sorted(p.name for p in SAMPLES.iterdir() if p.suffix in {".json", ".jsonl"})
    assert on_disk == sorted({_file_of(n) for n in EXPECTED})


@pytest.mark.parametrize("name", sorted({_file_of(n) for n in EXPECTED}))
def test_every_sample_loads_cleanly_with_its_detected_format(name: str) -> None:
    imported = load_file(str(SAMPLES / name))
    wanted = {n: e for n, e in EXPECTED.items() if _file_of(n) == name}
    assert imported.detection.format == next(iter(wanted.values())).format
    assert [p.text() for p in imported.problems if p.severity != "info"] == []
    assert len(imported.sessions) == len(wanted)
    for s in imported.sessions:
        counts = s.counts()
        assert counts["calls"] > 0
        assert counts["unanswered_calls"] == 0 and counts["orphan_results"] == 0


def test_the_folder_loads_as_the_dashboard_opens_it() -> None:
    report = load_paths([str(SAMPLES)])
    assert not report.has_errors
    assert len(report.sessions) == len(EXPECTED)


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_first_refusals_match_the_readme(name: str) -> None:
    expect = EXPECTED[name]
    assert refusal(gglib(name)) == expect.gglib, "gglib at defaults"
    assert refusal(openclaw(name)) == expect.openclaw, "OpenClaw at defaults"
    assert refusal(openclaw(name, low=True)) == expect.openclaw_low, "OpenClaw at w3/c5"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gglib_steps_agree_with_the_upstream_walk_on_every_prefix(name: str) -> None:
    """The prefix property: up to the first refusal, each step is what upstream's ``scan_history``
    says about the transcript that ends with that turn's tool messages."""
    config = get_engine("gglib").resolve_config(None, []).config
    messages = session(name).chat_view()
    ends = []
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            j = i + 1
            while j < len(messages) and messages[j].get("role") == "tool":
                j += 1
            ends.append(j)
    steps = gglib(name).steps
    assert len(ends) == len(steps)
    for step, end in zip(steps, ends, strict=True):
        out = scan_history(messages[:end], config)
        assert (step.verdict == "refuse") == (out.verdict != "pass"), step.turn
        readings = (step.extra["identical"], step.extra["not_evaluated"], step.extra["rescued"])
        assert readings == (out.identical_result_repeat, out.repeat_not_evaluated, out.repeat_rescued)
        if step.verdict == "refuse":
            assert step.detector == out.verdict
            if out.verdict == "loop":
                assert step.signature == out.signature
            break


# --------------------------------------------------------------------------- one behaviour each


def test_write_loop_is_refused_at_the_third_identical_batch() -> None:
    r = gglib("write_loop_refused_at_third_batch.json")
    writes = [s for s in r.steps if s.tools == ("write_file",)]
    assert [s.count for s in writes] == [1, 2, 3]
    assert [s.verdict for s in writes] == ["pass", "pass", "refuse"]
    third = writes[2]
    assert third.detector == "loop" and third.extra["rule"] == "strike"
    assert third.extra["batch_class"] == "mutating" and third.extra["effective_max"] == 2
    assert third.extra["identical"] is True  # the same permission error every time
    # Three repeats are far below OpenClaw's thresholds (warning at 10, or 3 prior calls at w3).
    for low in (False, True):
        o = openclaw("write_loop_refused_at_third_batch.json", low)
        assert len(o.steps) == 4 and warnings_of(o) == []


def test_polling_agent_is_rescued_by_its_changing_output() -> None:
    r = gglib("polling_rescued_by_changing_output.json")
    polls = [s for s in r.steps if s.extra["kind"] == "batch" and s.turn >= 1]
    assert len({s.signature for s in polls}) == 1 and len(polls) == 5  # the same command each time
    assert [s.extra["total"] for s in polls] == [1, 2, 3, 4, 5]
    assert all(s.count is not None and s.count <= 2 for s in polls)  # changed answers reset it
    assert [s.extra["rescued"] for s in polls] == [False, False, True, True, True]
    assert [s.extra["outcome"] for s in polls[1:]] == ["answer_changed"] * 4
    # OpenClaw never refuses a call whose outcome keeps changing; at w3 it only warns.
    assert warnings_of(openclaw("polling_rescued_by_changing_output.json")) == []
    low = openclaw("polling_rescued_by_changing_output.json", low=True)
    assert {d for _, d, _ in warnings_of(low)} == {"generic_repeat"}


def test_quiet_poll_is_refused_at_the_observation_allowance() -> None:
    name = "quiet_poll_refused_at_observation_ceiling.json"
    r = gglib(name)
    polls = [s for s in r.steps if s.tools == ("get_terminal_output",)]
    refused = step_at(r, 16)
    assert refused.tools == ("get_terminal_output",)
    assert refused.extra["batch_class"] == "observation"
    assert refused.extra["rule"] == "strike" and refused.count == 16
    assert refused.extra["effective_max"] == 15 and refused.extra["ceiling"] is None
    # "Quiet": the output did not change once before the refusal (gglib's known limitation L2) ...
    assert all(s.extra["outcome"] == "answer_repeated" for s in polls[1:15])
    # ... yet the build was still working: the next poll shows it finished. A false refusal.
    outputs = [e.text for e in session(name).events if e.kind == "tool_result"]
    assert ["Finished `release`" in text for text in outputs[1:18]] == [False] * 16 + [True]
    assert load_labels(SAMPLES / "labels.csv").labels[name].label == "ok"
    # OpenClaw at defaults only warns (generic_repeat from the 11th poll); at c5 it refuses.
    o = openclaw(name)
    assert warnings_of(o)[0] == (11, "generic_repeat", 10)
    assert step_at(openclaw(name, low=True), 6).count == 5


def test_ab_cycle_escapes_gglib_but_trips_openclaw_ping_pong_at_low_thresholds() -> None:
    name = "ab_cycle_escapes_gglib_trips_pingpong.json"
    r = gglib(name)
    assert all(s.count == 1 for s in r.steps if s.extra["kind"] == "batch")  # every run breaks
    # The cycle reading (gglib's known limitation L1): the same batch got the same answers, other work between.
    assert [s.turn for s in r.steps if s.extra["identical"]] == list(range(2, 12))
    low = openclaw(name, low=True)
    assert warnings_of(low)[:2] == [(2, "ping_pong", 3), (3, "ping_pong", 4)]
    refused = step_at(low, 4)
    assert refused.detector == "ping_pong" and refused.count == 5
    assert refused.extra["paired_tool"] == "read_file"
    # At OpenClaw's defaults the alternation only warns (count >= 10).
    assert warnings_of(openclaw(name))[0] == (9, "ping_pong", 10)


def test_user_turns_break_the_run_of_a_thrice_requested_failing_build() -> None:
    name = "user_asks_three_times_for_same_failing_build.jsonl"
    assert session(name).counts()["user_messages"] == 3
    builds = [s for s in gglib(name).steps if s.tools == ("Bash",)]
    assert len({s.signature for s in builds}) == 1
    assert [s.count for s in builds] == [1, 1, 1]
    assert [s.extra["identical"] for s in builds] == [False, True, True]  # same failure each time
    for low in (False, True):
        o = openclaw(name, low)
        assert [s.extra["run_id"] for s in o.steps] == ["run-1", "run-2", "run-3"]
        assert all(s.verdict == "pass" for s in o.steps)


def test_prose_stagnation_is_refused_at_the_sixth_identical_reply() -> None:
    r = gglib("prose_stagnation_same_reply_six_times.jsonl")
    prose = [s for s in r.steps if s.extra["kind"] == "prose"]
    assert len({s.extra["text_hash"] for s in prose}) == 1
    assert [s.count for s in prose] == [1, 2, 3, 4, 5, 6]
    last = prose[-1]
    assert last.verdict == "refuse" and last.detector == "stagnation"
    assert (last.extra["max_steps"], last.extra["window"]) == (5, 20)
    # The tool calls in between are all different: no loop refusal, nothing for OpenClaw.
    assert all(s.verdict == "pass" for s in r.steps if s.extra["kind"] == "batch")
    assert all(s.verdict == "pass" for s in openclaw("prose_stagnation_same_reply_six_times.jsonl", True).steps)


def test_unknown_tool_storm_is_refused_even_though_the_arguments_change() -> None:
    name = "unknown_tool_retry_storm.jsonl"
    o = openclaw(name)
    storm = [s for s in o.steps if s.tools == ("search_docs",)]
    assert len({s.signature for s in storm}) == len(storm) == 12  # a new query every time
    refused = step_at(o, 10)
    assert refused.detector == "unknown_tool_repeat" and refused.count == 10
    assert refused.extra.get("unknown_tool", "search_docs") == "search_docs"
    assert [s.verdict for s in o.steps[12:]] == ["pass", "pass"]  # the real tool works
    assert all(s.count == 1 for s in gglib(name).steps if s.extra["kind"] == "batch")


def test_post_compaction_loop_is_stopped_by_the_guard() -> None:
    name = "post_compaction_loop.jsonl"
    s = session(name)
    assert s.counts()["compactions"] == 1
    compaction_at = next(e.index for e in s.events if e.kind == "compaction")
    assert min(t.turn for t in s.turns if t.index > compaction_at) == 4
    for low in (False, True):
        o = openclaw(name, low)
        refused = step_at(o, 6)  # the third identical read after the compaction
        assert refused.detector == "post_compaction_guard" and refused.count == 3
        assert refused.extra["guard_abort"] is True
        assert [st.verdict for st in o.steps[:6]] == ["pass"] * 6
    # The same read before the compaction does not count towards the guard.
    reads = [st for st in openclaw(name).steps if st.signature == step_at(openclaw(name), 6).signature]
    assert [st.turn for st in reads] == [1, 4, 5, 6, 7]


def test_exec_poll_durations_are_ignored_by_openclaw_hashing() -> None:
    name = "exec_poll_durations_change.jsonl"
    s = session(name)
    poll_results = [e for e in s.events if e.kind == "tool_result"][1:]
    assert len({e.details["durationMs"] for e in poll_results}) > 10  # every poll took its own time
    o = openclaw(name)
    polls = o.steps[1:]
    assert len({st.extra["result_hash"] for st in polls}) == 1  # ... and hashes the same
    assert warnings_of(o)[0] == (11, "generic_repeat", 10)
    assert step_at(o, 21).count == 20 and step_at(o, 21).verdict == "refuse"
    low = openclaw(name, low=True)
    assert warnings_of(low)[:2] == [(4, "generic_repeat", 3), (5, "generic_repeat", 4)]
    assert step_at(low, 6).count == 5
    # gglib compares the answers the model saw: identical text, refused at the third poll.
    assert step_at(gglib(name), 3).extra["identical"] is True


def test_edit_test_cycle_is_never_refused() -> None:
    name = "edit_test_edit_test_legitimate.jsonl"
    for r in (gglib(name), openclaw(name), openclaw(name, low=True)):
        assert r.first_refusal is None
    tests = [s for s in gglib(name).steps if s.tools == ("shell",)]
    assert len(tests) == 4 and len({s.signature for s in tests}) == 1
    assert all(s.count == 1 for s in tests)  # each edit breaks the run
    assert warnings_of(openclaw(name)) == []


def test_parallel_batch_in_shuffled_order_has_one_signature() -> None:
    r = gglib("parallel_batch_in_shuffled_order.jsonl")
    batches = [s for s in r.steps if s.extra["kind"] == "batch"]
    assert [s.tools for s in batches] == [("Bash", "Read"), ("Read", "Bash"), ("Bash", "Read")]
    assert len({s.signature for s in batches}) == 1
    assert [s.count for s in batches] == [1, 2, 3]
    assert batches[2].verdict == "refuse" and batches[2].call == 4


def test_a_drifting_timestamp_buys_tolerance_up_to_the_ceiling() -> None:
    name = "timestamp_drift_two_conversations.jsonl#0"
    r = gglib(name)
    refused = step_at(r, 16)
    assert refused.extra["rule"] == "ceiling" and refused.count == 2
    assert (refused.extra["total"], refused.extra["ceiling"]) == (16, 15)
    assert [s.turn for s in r.steps if s.extra["rescued"]] == list(range(3, 16))
    for low in (False, True):  # outcomes never repeat, so OpenClaw never gets past warnings
        o = openclaw(name, low)
        assert o.first_refusal is None and warnings_of(o)
    assert session("timestamp_drift_two_conversations.jsonl#1").source.endswith("#1")


# --------------------------------------------------------------------------- labels


def test_labels_cover_every_sample_session_exactly() -> None:
    labels, problems = load_labels(SAMPLES / "labels.csv")
    assert problems == []
    assert sorted(labels) == sorted(EXPECTED)
    assert {lab.label for lab in labels.values()} <= set(LABEL_VALUES)


def test_labels_map_onto_the_sources_the_replay_prints(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for cwd, arg in [(SAMPLES.parent, "sample_transcripts"), (tmp_path, str(SAMPLES)),
                     (SAMPLES, "."), (SAMPLES, "post_compaction_loop.jsonl"),
                     (SAMPLES / "..", "sample_transcripts/timestamp_drift_two_conversations.jsonl")]:
        monkeypatch.chdir(cwd)
        sources = [s.source for s in load_paths([arg]).sessions]
        assert sources
        labels, problems = labels_for_sessions([arg])
        assert problems == []
        assert sorted(labels) == sorted(sources), (cwd, arg)


def test_labels_agree_with_what_each_sample_shows() -> None:
    """A loop label's start is never after the engine that catches it refuses, and the only
    good session a default engine refuses is the documented quiet-poll false refusal."""
    labels = load_labels(SAMPLES / "labels.csv").labels
    for name, expect in EXPECTED.items():
        label = labels[name]
        refusals = [r for r in (expect.gglib, expect.openclaw, expect.openclaw_low) if r]
        if label.label == "loop":
            assert refusals, f"{name}: a labelled loop that no engine catches"
            start = label.from_turn or 0
            assert all(turn >= start for turn, _, _ in refusals), name
        elif name != "quiet_poll_refused_at_observation_ceiling.json":
            assert expect.gglib is None and expect.openclaw is None, name
