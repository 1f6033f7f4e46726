"""Property tests: the fast path equals the plain replay (prepare's hashes, every view of the
lazy replay, every field of every step), monotonicity of the critical thresholds, and hash
invariances."""

from __future__ import annotations

import itertools
import random
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engines.openclaw._openclaw_gen import random_block, random_session

from loopscope.engines.openclaw import (
    ENGINE,
    OpenClawConfig,
    hash_tool_call,
    hash_tool_outcome,
)
from loopscope.engines.openclaw.shared.hashing import is_known_poll_call, result_text
from loopscope.engines.openclaw.shared.session import BLOCK_MARKERS, CallInput, session_ops
from loopscope.engines.openclaw.v2026_6.fast import (
    _COMMON_PREFIX_AB,
    _content_source,
    _has_block_marker,
)
from loopscope.formats.builder import SessionBuilder
from loopscope.jsonrules.javascript import digest, js_json_parse, js_trim, stable_stringify

SEEDS = range(60)


def _sessions() -> list[Any]:
    rng = random.Random(4242)
    return [random_session(rng) for _ in SEEDS]


SESSIONS = _sessions()


def test_fast_path_equals_plain_replay() -> None:
    rng = random.Random(99)
    for session in SESSIONS:
        prepared = ENGINE.prepare(session)
        for _ in range(4):
            config = OpenClawConfig.from_block(random_block(rng))
            assert ENGINE.run(prepared, config) == ENGINE.replay(session, config), session.id


def test_fast_path_reuse_in_any_order() -> None:
    """Cached counters and steps never leak between configurations."""
    rng = random.Random(5)
    session = SESSIONS[0]
    prepared = ENGINE.prepare(session)
    configs = [OpenClawConfig.from_block(random_block(rng)) for _ in range(12)]
    first = [ENGINE.run(prepared, c) for c in configs]
    again = [ENGINE.run(prepared, c) for c in reversed(configs)]
    assert first == list(reversed(again))


def _refused(session: Any, config: OpenClawConfig) -> set[int]:
    return {n for n, s in enumerate(ENGINE.replay(session, config).steps)
            if s.verdict == "refuse"}


def _critical_generic(session: Any, config: OpenClawConfig) -> set[int]:
    return {n for n, s in enumerate(ENGINE.replay(session, config).steps)
            if s.verdict == "refuse" and s.detector == "generic_repeat"}


def test_raising_critical_threshold_never_adds_refusals() -> None:
    rng = random.Random(11)
    for session in SESSIONS[:40]:
        block = random_block(rng)
        block["enabled"] = True
        base = OpenClawConfig.from_block(block)
        low = base.critical_threshold
        prepared = ENGINE.prepare(session)
        previous = {n for n, s in enumerate(ENGINE.run(prepared, base).steps)
                    if s.verdict == "refuse"}
        for critical in (low + 1, low + 3, low + 10, low + 40):
            raised = base.with_settings(criticalThreshold=critical)
            steps = ENGINE.run(prepared, raised).steps
            refused = {n for n, s in enumerate(steps) if s.verdict == "refuse"}
            assert refused <= previous, (session.id, critical)
            generic = {n for n, s in enumerate(steps)
                       if s.verdict == "refuse" and s.detector == "generic_repeat"}
            lower_generic_or_breaker = {
                n for n, s in enumerate(ENGINE.run(prepared, base).steps)
                if s.verdict == "refuse" and s.detector in ("generic_repeat",
                                                            "global_circuit_breaker")}
            assert generic <= lower_generic_or_breaker, (session.id, critical)
            previous = refused


def test_raising_breaker_and_unknown_thresholds_never_adds_refusals() -> None:
    rng = random.Random(12)
    for session in SESSIONS[:40]:
        base = OpenClawConfig.from_block({**random_block(rng), "enabled": True})
        before = _refused(session, base)
        for key in ("globalCircuitBreakerThreshold", "unknownToolThreshold"):
            current = base.settings()[key]
            raised = base.with_settings(**{key: current + rng.randint(1, 10)})
            assert _refused(session, raised) <= before


def test_raising_guard_window_never_refuses_a_clean_session() -> None:
    rng = random.Random(13)
    for session in SESSIONS:
        base = OpenClawConfig.from_block({**random_block(rng), "enabled": True})
        if _refused(session, base):
            continue
        for window in range(base.guard_window_size + 1, base.guard_window_size + 4):
            assert not _refused(session, base.with_settings(
                **{"postCompactionGuard.windowSize": window}))


def test_counts_do_not_depend_on_thresholds() -> None:
    """For a fixed window, every detector count is threshold-independent (what lets the fast path
    count once per ``historySize`` and only select per configuration)."""
    session = SESSIONS[1]
    prepared = ENGINE.prepare(session)
    ENGINE.run(prepared, OpenClawConfig.from_block({"warningThreshold": 1}))
    ENGINE.run(prepared, OpenClawConfig.from_block({"warningThreshold": 9,
                                                    "criticalThreshold": 50}))
    assert list(prepared._counters) == [30]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=8), st.randoms())
def test_argument_key_order_never_changes_the_hash(params: dict[str, Any],
                                                   rnd: random.Random) -> None:
    items = list(params.items())
    rnd.shuffle(items)
    assert hash_tool_call("t", dict(items)) == hash_tool_call("t", params)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_stable_text_parses_back_to_the_value(value: Any) -> None:
    """The stable form is JSON whose JS parse has the same stable form."""
    text = stable_stringify(value)
    ok, parsed = js_json_parse(text)
    assert ok
    assert stable_stringify(parsed) == text


# --------------------------------------------------------------------------- the lazy fast path


def assert_lazy_equals(prepared: Any, config: OpenClawConfig, ref: Any) -> None:
    """Every view of a fast-path replay equals the plain replay, each read on a fresh replay
    before anything has built its steps; then every field of every step."""
    c = ENGINE.run(prepared, config)
    assert (c.refusal_count, c.warning_count) == (ref.refusal_count, ref.warning_count)
    assert c._markers is None and c._steps is None  # counted, not built
    m = ENGINE.run(prepared, config)
    assert m.markers == ref.markers  # read first: built without any step
    assert m._steps is None and m._flagged is None
    assert [x.x for x in m.markers] == [x.x for x in ref.markers]
    r = ENGINE.run(prepared, config)
    assert r._steps is None
    assert (r.first_refusal, r.refused, r.warned) == (ref.first_refusal, ref.refused, ref.warned)
    assert r.flagged == ref.flagged
    assert (r.refusal_count, r.warning_count) == (ref.refusal_count, ref.warning_count)
    assert r._steps is None
    fresh = ENGINE.run(prepared, config)
    assert orjson.dumps(fresh.to_json()) == orjson.dumps(ref.to_json())
    steps = ENGINE.run(prepared, config).steps
    assert len(steps) == len(ref.steps)
    for mine, theirs in zip(steps, ref.steps, strict=True):
        assert mine == theirs
        assert list(mine.extra.items()) == list(theirs.extra.items())  # values and key order
    assert ENGINE.run(prepared, config) == ref


def test_lazy_views_equal_plain_replay() -> None:
    rng = random.Random(2024)
    for session in SESSIONS:
        prepared = ENGINE.prepare(session)
        for _ in range(4):
            config = OpenClawConfig.from_block(random_block(rng))
            assert_lazy_equals(prepared, config, ENGINE.replay(session, config))


def test_lazy_views_on_more_sessions_and_low_thresholds() -> None:
    """Low thresholds make most calls warn or refuse: the early stop of ``run`` (first refusal
    and first warning known) and the full evaluation behind the steps must agree."""
    rng = random.Random(77)
    for _ in range(80):
        session = random_session(rng, calls=rng.randint(1, 120))
        prepared = ENGINE.prepare(session)
        for _ in range(3):
            block = {**random_block(rng), "enabled": True}
            block["warningThreshold"] = rng.randint(1, 4)
            block["criticalThreshold"] = block["warningThreshold"] + rng.randint(1, 5)
            config = OpenClawConfig.from_block(block)
            assert_lazy_equals(prepared, config, ENGINE.replay(session, config))


def _reference_hashes(session: Any) -> list[tuple[Any, ...]]:
    """Per call, what the reference path derives: the literal upstream hashing functions over
    :func:`session_ops`."""
    out = []
    for op in session_ops(session):
        if not isinstance(op, CallInput):
            continue
        outcome_hash, unknown = hash_tool_outcome(op.name, op.params, op.result, op.error)
        out.append((op.turn, op.call, op.name, op.run, op.recorded_block,
                    hash_tool_call(op.name, op.params), outcome_hash or None,
                    unknown if outcome_hash else None, is_known_poll_call(op.name, op.params)))
    return out


def _prepared_hashes(p: Any) -> list[tuple[Any, ...]]:
    """The hashes of every call, read through the prepared session's codes as well: equal
    result hashes have equal codes, numbered by first appearance (the hashes are written when
    first read, and a code taken by a hash written at once must not split)."""
    codes: dict[str, int] = {}
    for code, result_hash in zip(p.result_code, p.result_hash, strict=True):
        assert (code == 0) == (result_hash is None)
        if result_hash is not None:
            assert codes.setdefault(result_hash, len(codes) + 1) == code
            assert p.result_hashes[code - 1] == result_hash
    return list(zip(p.turn, p.call, p.tool_name, p.run, p.recorded_block, p.args_hash,
                    p.result_hash, p.unknown_tool, p.poll, strict=True))


def test_prepare_hashes_like_the_reference_on_generated_sessions() -> None:
    rng = random.Random(31)
    for session in [*SESSIONS, *(random_session(rng) for _ in range(40))]:
        assert _prepared_hashes(ENGINE.prepare(session)) == _reference_hashes(session)


EDGE_TEXTS = ["plain", "", "  padded \n", "lone \ud800 surrogate", "astral \U0001F600 é ü",
              "ctl \x00\x1f\x7f \u2028 \ufeff", 'quote " back \\ slash',
              "Session Execution BLOCKED to prevent runaway loops", "COMPACTION_LOOP_PERSISTED",
              "session execution blocked by global circuit breaker", "\u212a kelvin \u0130 dot",
              "Unknown tool: Web.Search", "tool gog not found", "x" * 5000]
EDGE_ARGS: list[Any] = ['{"a":1}', '{"b":[1,2.5,-0,1e400]}', "{not json", '"\\ud800"',
                        '{"\\ud83d\\ude00":1,"\\uffff":2}', "9" * 400, '\ufeff{"a":1}', "[]",
                        '{"action":"poll","sessionId":"s"}', '{"action":"log"}', "null", "",
                        '{"action":"send","text":"hi"}', '{"action":7}']
EDGE_NAMES = ["read", "process", "exec", "message", "sessions_send", "command_status", "", "gog"]
EDGE_DETAILS: list[dict[str, Any]] = [{}, {"status": "running", "tail": "t"},
                                      {"status": "blocked", "deniedReason": "tool-loop"},
                                      {"ok": True}, {"status": "completed", "exitCode": 0}]


def _edge_session(openclaw: bool, texts: list[str]) -> Any:
    """Every tool name × argument text × details × error flag, for each text: prepare's fast
    paths (plain results, process polls and logs, errors, block markers) at their edges."""
    b = SessionBuilder()
    b.user("start")
    n = 0
    for text in texts:
        for name, raw, details, error in itertools.product(
                EDGE_NAMES, EDGE_ARGS, EDGE_DETAILS if openclaw else [{}], (False, True)):
            n += 1
            turn = b.assistant("")
            if openclaw:
                ok, value = js_json_parse(raw)
                b.call(turn, name, value if ok else raw, "value", id=f"c{n}")
                b.result(f"c{n}", [{"type": "text", "text": text}], text, is_error=error,
                         details=details)
            else:
                b.call(turn, name, raw, "json_text", id=f"c{n}")
                b.result(f"c{n}", text, text, is_error=error)
            if n % 97 == 0:
                b.user("next")
    return b.build(id="edge", source="edge", format="openclaw_session" if openclaw else "openai_chat")


def test_prepare_hashes_like_the_reference_on_edge_cases() -> None:
    for openclaw in (False, True):
        for texts in ([t] for t in EDGE_TEXTS):
            session = _edge_session(openclaw, texts)
            assert _prepared_hashes(ENGINE.prepare(session)) == _reference_hashes(session), texts
        session = _edge_session(openclaw, EDGE_TEXTS[:3])
        config = OpenClawConfig.from_block({"warningThreshold": 1, "criticalThreshold": 2})
        assert_lazy_equals(ENGINE.prepare(session), config, ENGINE.replay(session, config))


def test_run_does_not_build_steps() -> None:
    session = SESSIONS[3]
    r = ENGINE.run(ENGINE.prepare(session), OpenClawConfig.from_block({}))
    _ = (r.first_refusal, r.warned)
    assert r._steps is None


@settings(max_examples=500, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text()
    | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    lambda children: st.lists(children, max_size=4) | st.tuples(children, children)
    | st.dictionaries(st.text(max_size=5) | st.sampled_from(["\U0001F600", "\uffff", "\ud800"]),
                      children, max_size=5),
    max_leaves=25))
def test_digest_fast_path_equals_stable_stringify(value: Any) -> None:
    """``digest`` writes plain values through orjson; it must hash exactly stableStringify."""
    import hashlib

    assert digest(value) == hashlib.sha256(stable_stringify(value).encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- memoised hashing

# Argument values whose JSON texts (the memo keys) collide or nearly do: NaN and ±Infinity are
# written like null but hash as "NaN"/"Infinity"; 1, 1.0 and true differ; key orders differ;
# integers beyond 64 bits and lone surrogates have no key at all.
TRICKY_VALUES: list[Any] = [
    None, float("nan"), float("inf"), float("-inf"), 1, 1.0, True, 0, 0.0, -0.0, "1", [1],
    {"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": None}, {"a": float("nan")}, {"a": 1.0},
    {"a": True}, 2**70, -(2**70), "\ud800", {"k": "\ud800"}, {"action": "poll"},
    {"action": "log"}, {"action": "poll", "sessionId": "s"}, {},
]
REPEATED_TEXTS = ["same", "same", " same\n", "Session Execution BLOCKED to prevent runaway loops",
                  "session execution blocked by global circuit breaker", "compaction_loop_persisted",
                  "session execution blocked", "other", ""]


def _memo_session(picks: list[tuple[int, int, int, bool]], openclaw: bool) -> Any:
    b = SessionBuilder()
    b.user("start")
    for n, (value, name, text, error) in enumerate(picks):
        turn = b.assistant("")
        b.call(turn, EDGE_NAMES[name], TRICKY_VALUES[value], "value", id=f"c{n}")
        content: Any = ([{"type": "text", "text": REPEATED_TEXTS[text]}] if openclaw
                        else REPEATED_TEXTS[text])
        b.result(f"c{n}", content, REPEATED_TEXTS[text], is_error=error)
    return b.build(id="memo", source="memo",
                   format="openclaw_session" if openclaw else "openai_chat")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(TRICKY_VALUES) - 1),
                          st.integers(0, len(EDGE_NAMES) - 1),
                          st.integers(0, len(REPEATED_TEXTS) - 1), st.booleans()),
                min_size=1, max_size=25),
       st.booleans())
def test_memoised_hashes_equal_the_reference(picks: list[tuple[int, int, int, bool]],
                                             openclaw: bool) -> None:
    """Arguments recorded as values are hashed once per JSON text and results once per text,
    per session and across sessions: no value or text ever takes another's hash (NaN is no
    null, a poll no log, a text with a block marker no plain one)."""
    session = _memo_session(picks, openclaw)
    reference = _reference_hashes(session)
    assert _prepared_hashes(ENGINE.prepare(session)) == reference
    # again, now that the argument hashes are shared across sessions, and in another order
    assert _prepared_hashes(ENGINE.prepare(session)) == reference
    reordered = _memo_session(picks[::-1], openclaw)
    assert _prepared_hashes(ENGINE.prepare(reordered)) == _reference_hashes(reordered)


def test_memoised_hashes_on_every_combination() -> None:
    """Each value × tool name × text twice over, in a fixed order, in one session."""
    picks = [(value, name, text, False) for value in range(len(TRICKY_VALUES))
             for name in range(len(EDGE_NAMES)) for text in range(len(REPEATED_TEXTS))]
    for openclaw in (False, True):
        session = _memo_session(picks + picks, openclaw)
        assert _prepared_hashes(ENGINE.prepare(session)) == _reference_hashes(session)


def test_memoised_arguments_never_answer_for_another_type() -> None:
    """A value orjson writes like an earlier one (a UUID like its string) is no JSON value: it
    fails as on the reference path instead of taking the string's hash."""
    text = "12345678-1234-5678-1234-567812345678"
    ENGINE.prepare(_session_with_arguments({"id": text}))
    odd = _session_with_arguments({"id": uuid.UUID(text)})
    with pytest.raises(TypeError):
        _reference_hashes(odd)
    with pytest.raises(TypeError):
        ENGINE.prepare(odd)


def _session_with_arguments(arguments: Any) -> Any:
    b = SessionBuilder()
    b.call(b.assistant(""), "read", arguments, "value", id="c")
    return b.build(id="args", source="args", format="openclaw_session")


def test_block_markers_searched_by_their_common_start() -> None:
    assert all(marker.startswith(_COMMON_PREFIX_AB) for marker in BLOCK_MARKERS[:2])


# Texts around the markers: every case, ASCII or not (lower-casing "İ" gives two characters,
# "K" (Kelvin) gives "k"), without a cased letter at all; the first two markers are searched
# by their common start.
_MARKER_PIECES = [*BLOCK_MARKERS, *(m.upper() for m in BLOCK_MARKERS), BLOCK_MARKERS[0].title(),
                  "session execution blocked ", "compaction_loop", "_persisted", "x", "X", " ",
                  "1", "\u0130", "\u212a", "é", "\ud800"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_MARKER_PIECES), max_size=6), st.text(max_size=5))
def test_block_marker_search_equals_searching_the_lower_case_text(pieces: list[str],
                                                                  noise: str) -> None:
    text = noise.join(pieces)
    assert _has_block_marker(text) == any(m in text.lower() for m in BLOCK_MARKERS)


class _TextSubclass(str):
    __slots__ = ()


class _DictSubclass(dict):  # type: ignore[type-arg]
    pass


_result_entries = st.one_of(
    st.builds(lambda kind, text, cls: cls({k: v for k, v in (("type", kind), ("text", text))
                                           if v != "MISSING"}),
              st.sampled_from(["text", _TextSubclass("text"), None, 7, "MISSING"]),
              st.sampled_from(["t", " t\n", "", _TextSubclass(" s "), None, 5, "MISSING"]),
              st.sampled_from([dict, _DictSubclass])),
    st.text(max_size=2))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(_result_entries, max_size=3), st.text(max_size=2), st.none()))
def test_one_text_entry_is_its_content_text(content: Any) -> None:
    got = js_trim(_content_source(content))
    want = result_text({"content": content})
    assert (type(got), got) == (type(want), want)


def test_result_hashes_read_like_lists() -> None:
    """The prepared hashes, written when first read, read like the lists they stand for."""
    session = _edge_session(False, ["a", "b", "a"])
    p = ENGINE.prepare(session)
    by_call = [h for _, _, _, _, _, _, h, _, _ in _reference_hashes(session)]
    assert list(p.result_hash) == by_call and p.result_hash == by_call
    assert repr(p.result_hash) == repr(by_call)
    assert p.result_hash[2:9] == by_call[2:9] and p.result_hash[-1] == by_call[-1]
    assert len(p.result_hashes) == len(set(filter(None, by_call)))
    assert repr(p.result_hashes) == repr(list(dict.fromkeys(filter(None, by_call))))
