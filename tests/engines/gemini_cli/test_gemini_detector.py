"""The detector's rules, one behaviour at a time: JavaScript string and JSON semantics, the
tool-call cycles, the content windows (UTF-16 code units), the structure checks and the code
fence, counts and resets. Each case runs through both replay paths."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.engines.base import SessionReplay
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.engine import ENGINE
from loopscope.engines.gemini_cli.events import split_pieces
from loopscope.engines.gemini_cli.upstream import (
    Constants,
    Content,
    LoopDetectionService,
    ToolCallRequest,
    structure,
    tool_call_key,
)
from loopscope.formats.builder import SessionBuilder
from loopscope.jsonrules.node_json import (
    _fast_stringify,
    from_units,
    json_parse,
    json_stringify,
    json_stringify_reference,
    node_utf8,
    to_units,
)
from loopscope.model import Session

TOOL = "consecutive_identical_tool_calls"
TEXT = "chanting_identical_sentences"


def build(*items: Any) -> Session:
    """``("user", text)``, ``("turn", text, [(name, raw_arguments), ...])`` or a bare string
    (a reply without tools)."""
    b = SessionBuilder()
    n = 0
    for item in items:
        if isinstance(item, str):
            b.assistant(item)
        elif item[0] == "user":
            b.user(item[1])
        else:
            turn = b.assistant(item[1])
            for name, raw in item[2]:
                n += 1
                b.call(turn, name, raw, "json_text", id=f"c{n}")
    return b.build(id="t", source="t.json", format="openai_chat")


def replay(session: Session, config: GeminiConfig | None = None) -> SessionReplay:
    config = config or GeminiConfig()
    plain = ENGINE.replay(session, config)
    assert ENGINE.run(ENGINE.prepare(session), config) == plain
    return plain


def refused(session: Session, config: GeminiConfig | None = None) -> list[tuple[Any, ...]]:
    return [(s.turn, s.call, s.detector, s.count) for s in replay(session, config).steps
            if s.verdict == "refuse"]


def calls(*names_args: tuple[str, str]) -> list[Any]:
    return [("turn", "", [na]) for na in names_args]


# --------------------------------------------------------------------------- JavaScript semantics


@pytest.mark.parametrize(("text", "expected"), [
    ('{"b":1,"2":3,"a":1,"1":4}', '{"1":4,"2":3,"b":1,"a":1}'),
    ('{"01":1,"-1":2,"4294967295":3,"4294967294":4}',
     '{"4294967294":4,"01":1,"-1":2,"4294967295":3}'),
    ('{"a":1,"b":2,"a":3}', '{"a":3,"b":2}'),
    ("[100.0,-0,1e21,1e-7,0.0000001,1e16]", "[100,0,1e+21,1e-7,1e-7,10000000000000000]"),
    ("[12345678901234567890,9007199254740993,1e400,-1e400]",
     "[12345678901234567000,9007199254740992,null,null]"),
    ('"\\ud800 \\u001f \\u007f \\u2028 / \\ud83d\\ude00"', '"\\ud800 \\u001f \x7f \u2028 / 😀"'),
    ("[" * 1500 + "]" * 1500, "[" * 1500 + "]" * 1500),
])
def test_json_stringify_of_json_parse(text: str, expected: str) -> None:
    ok, value = json_parse(text)
    assert ok
    assert json_stringify(value) == expected


@pytest.mark.parametrize("text", ["NaN", "Infinity", "\ufeff{}", "{'a':1}", "[1,]", "1 2", "",
                                  "[" * 1500 + "]" * 1499])
def test_json_parse_rejects_what_javascript_rejects(text: str) -> None:
    assert json_parse(text)[0] is False


def test_utf16_units_and_node_utf8() -> None:
    assert len(to_units("a😀b")) == 4
    assert from_units(to_units("a😀b\ud800")) == "a😀b\ud800"
    assert node_utf8("\ud83d") == b"\xef\xbf\xbd"
    assert node_utf8("\ud83d\ude00") == "😀".encode()
    assert node_utf8("\ud83d\ud83d\ude00") == b"\xef\xbf\xbd" + "😀".encode()


def test_tool_call_key_is_sha256_of_name_and_stringify() -> None:
    expected = hashlib.sha256(b'read_file:{"path":"a"}').hexdigest()
    assert tool_call_key("read_file", {"path": "a"}) == expected
    # A lone surrogate in the name hashes as U+FFFD; in the arguments it is escaped.
    assert tool_call_key("t\ud800", {}) == hashlib.sha256("t\ufffd:{}".encode()).hexdigest()


@pytest.mark.parametrize("raw", ["", "null", "0", "-0", "false", '""', None])
def test_falsy_arguments_hash_like_an_empty_object(raw: str | None) -> None:
    session = build(("user", "go"), ("turn", "", [("t", raw), ("t", "{}")]))
    first, second = replay(session).steps
    assert first.signature == second.signature == f"t:{tool_call_key('t', {})}"


@pytest.mark.parametrize(("raw", "args"), [("[]", []), ('"x"', "x"), ("{not json", "{not json"),
                                           ("1", 1), ("true", True)])
def test_other_arguments_are_kept(raw: str, args: Any) -> None:
    (step,) = replay(build(("turn", "", [("t", raw)]))).steps
    assert step.signature == f"t:{tool_call_key('t', args)}"


@pytest.mark.parametrize(("name", "expected"), [
    ("  read_file\t", "read_file"), ("\u3000read\ufeff", "read"), ("", "generic_tool"),
    (" \n ", "generic_tool"), ("\x85x", "\x85x"), ("x\u200b", "x\u200b"), ("\x1cx", "\x1cx"),
])
def test_names_are_javascript_trimmed(name: str, expected: str) -> None:
    (step,) = replay(build(("turn", "", [(name, "{}")]))).steps
    assert step.tools == (expected,)
    assert step.signature == f"{expected}:{tool_call_key(expected, {})}"


def test_text_is_cut_after_line_feeds_only() -> None:
    assert split_pieces("a\nb\r\nc\u2028d\x85e\n\n") == ["a\n", "b\r\n", "c\u2028d\x85e\n", "\n"]
    assert split_pieces("") == []
    assert split_pieces("no newline") == ["no newline"]


# --------------------------------------------------------------------------- tool-call loops


@pytest.mark.parametrize(("cycle", "fires_at"), [(1, 4), (2, 9), (3, 14), (4, 19), (5, 24)])
def test_cycles_fire_on_their_fifth_repetition(cycle: int, fires_at: int) -> None:
    names = [(f"tool{i % cycle}", "{}") for i in range(30)]
    steps = refused(build(("user", "go"), *calls(*names)))
    assert steps[0] == (fires_at, fires_at, TOOL, 1)
    # The pattern goes on: every later call fires again, the count growing.
    assert [s[3] for s in steps] == list(range(1, 30 - fires_at + 1))


def test_a_six_call_cycle_never_fires() -> None:
    assert refused(build(*calls(*[(f"t{i % 6}", "{}") for i in range(60)]))) == []


def test_text_does_not_interrupt_and_a_user_message_resets() -> None:
    same = ("read", '{"p":1}')
    interleaved = [("turn", "thinking aloud", [same]) for _ in range(5)]
    assert refused(build(*interleaved))[0][:3] == (4, 4, TOOL)
    split = [*calls(same, same, same), ("user", "again"), *calls(same, same, same, same)]
    assert refused(build(*split)) == []


def test_parallel_calls_are_consecutive_entries() -> None:
    same = ("read", "{}")
    assert refused(build(("turn", "", [same] * 6))) == [(0, 4, TOOL, 1), (0, 5, TOOL, 2)]


def test_counts_restart_per_prompt_and_interventions() -> None:
    same = ("read", "{}")
    session = build(("user", "a"), *calls(*[same] * 6), ("user", "b"), *calls(*[same] * 5))
    steps = [s for s in replay(session).steps if s.verdict == "refuse"]
    assert [(s.count, s.extra["intervention"], s.extra["prompt"]) for s in steps] == [
        (1, "recovery", 1), (2, "halt", 1), (1, "recovery", 2)]
    assert steps[0].extra["detail"] == "Repeated tool call: read with arguments {}"
    assert [s.after_divergence for s in steps] == [False, True, True]


def test_what_if_tool_call_threshold() -> None:
    session = build(*calls(*[("read", "{}")] * 3))
    assert refused(session) == []
    config = GeminiConfig(tool_call_loop_threshold=3)
    assert refused(session, config) == [(2, 2, TOOL, 1)]


# --------------------------------------------------------------------------- content loops


CHANT = "I will try again now. "  # 22 units


def test_a_repeated_phrase_fires_and_fires_again() -> None:
    session = build(("user", "go"), CHANT * 12, "Something else entirely, said once.")
    steps = replay(session).steps
    assert [(s.verdict, s.count, s.extra["intervention"]) for s in steps] == [
        ("refuse", 1, "recovery"), ("refuse", 2, "halt")]
    # The window stays where it fired: the next text counts it again. (The detail is what
    # @google/gemini-cli-core@0.61.0 reports for this text under node.)
    assert steps[0].extra["detail"] == (
        'Repeating content detected: "will try again now. I will try again now. I will try '
        'again now. I will..."')
    assert steps[0].extra["pieces"] == 1


def test_a_tool_call_resets_the_text() -> None:
    session = build(("turn", CHANT * 6, [("read", "{}")]), CHANT * 6)
    assert refused(session) == []
    assert refused(build(CHANT * 6, CHANT * 6)) == [(1, None, TEXT, 1)]


def test_long_periods_do_not_fire() -> None:
    paragraph = "".join(f"word{i} " for i in range(60))  # ~ 400 units
    assert refused(build(paragraph * 12)) == []


@pytest.mark.parametrize(("piece", "resets", "divider"), [
    ("* item\n", True, False), ("+ item\n", True, False), ("- item\n", False, False),
    ("1. first\n", True, False), ("# Title\n", True, False), ("#no\n", False, False),
    ("> quote\n", True, False), ("| a | b |\n", True, False), ("-----\n", True, False),
    ("ABC", True, True), ("2026", True, True), ("DONE.", True, True), ("-----", True, True),
    ("abc", False, False), ("ABC\n", False, False), ("\u2500\u2500", True, True),
    ("```\n", True, False), ("   * indented\n", True, False), ("\u3000* wide space\n", True, False),
])
def test_structure_checks(piece: str, resets: bool, divider: bool) -> None:
    found = structure(to_units(piece))
    assert (found.resets, found.divider) == (resets, divider)


def test_list_items_reset_but_dash_lines_do_not() -> None:
    star = "".join(f"* {CHANT}\n" for _ in range(12))
    assert refused(build(star)) == []
    dash = "".join(f"- {CHANT}\n" for _ in range(12))
    assert refused(build(dash))[0][2] == TEXT


def test_code_fences_skip_text_even_across_prompts() -> None:
    fenced = "```\n" + CHANT * 12 + "\n"
    assert refused(build(fenced)) == []  # the fence stays open
    assert refused(build(fenced, ("user", "next"), CHANT * 12)) == []
    assert refused(build(fenced, "```\n", CHANT * 12))[0][2] == TEXT
    # Two fences in one piece reset but do not skip it.
    assert refused(build("x ``` y ``` " + CHANT * 12))[0][2] == TEXT


def test_windows_count_utf16_code_units() -> None:
    emoji = "😀 loop! "  # 9 units, 8 code points
    service = LoopDetectionService(Constants())
    result = service.add_and_check(Content(emoji * 20))
    # What @google/gemini-cli-core@0.61.0 reports under node: 180 units of history, the window
    # at unit 81 (its 10th occurrence, 9 units apart) fired.
    assert (len(service.stream_content_history), service.last_content_index) == (180, 81)
    assert result.detail == ('Repeating content detected: "! 😀 loop! 😀 loop! 😀 loop! 😀 loop! '
                             '😀 loop! 😀 loop! 😀 loop! 😀 lo..."')
    # Counted in code points instead, the 10th occurrence would be at 72.
    assert refused(build(emoji * 20))[0][2] == TEXT


def test_history_truncation_what_if() -> None:
    text = CHANT * 12
    assert refused(build(text)) != []
    assert refused(build(text), GeminiConfig(max_history_length=100)) == []


def test_disabled_records_nothing() -> None:
    service = LoopDetectionService(Constants(), disabled=True)
    for _ in range(6):
        assert service.add_and_check(ToolCallRequest("t", {})).count == 0
    assert service.tool_call_history == []
    assert refused(build(*calls(*[("t", "{}")] * 8)), GeminiConfig(enabled=False)) == []


def test_reset_keeps_the_code_block_flag() -> None:
    service = LoopDetectionService(Constants())
    service.add_and_check(Content("```\n"))
    service.reset("prompt-2")
    assert service.in_code_block is True
    service.add_and_check(Content(CHANT * 12))
    assert service.stream_content_history == ""


# --------------------------------------------------------------------------- the fast printer

_TRICKY_KEYS = st.sampled_from(["0", "1", "01", "-1", "4294967294", "4294967295", "true",
                                "false", "null", "NaN", "Infinity", "-Infinity", "a", "", "é"])
_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                       blacklist_categories=()), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
            | st.integers(min_value=-(2**53) - 3, max_value=2**53 + 3)
            | st.floats(allow_nan=True, allow_infinity=True) | _TEXT)
_KEYS = (_TRICKY_KEYS | _TEXT | st.integers(-3, 3) | st.booleans() | st.none()
         | st.floats(allow_nan=True, allow_infinity=True))
_VALUES = st.recursive(_SCALARS, lambda inner: (
    st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=20)


@settings(max_examples=3000, deadline=None)
@given(_VALUES)
def test_the_fast_json_stringify_equals_the_javascript_printer(value: Any) -> None:
    assert json_stringify(value) == json_stringify_reference(value)


@pytest.mark.parametrize("value", [
    {"path": "src/a.py", "line": 12, "recursive": True, "glob": None, "note": 'a "b"\n\t\\'},
    ["x", -3, {"nested": ["é", "\u2028", "\x7f", "\x01"]}], "plain", 900719925474099, {},
])
def test_common_arguments_take_the_fast_printer(value: Any) -> None:
    """The fast printer is used (not only correct): it must not fall back on plain arguments."""
    assert _fast_stringify(value) == json_stringify_reference(value)


@pytest.mark.parametrize("value", [
    [1.5], {"1": 1}, {True: 1}, {None: 1}, ["\ud800"], 2**53 + 1, [1e16], {1: "a"}, 1.0,
    json_parse("[" * 300 + "]" * 300)[1],
])
def test_the_fast_printer_declines_what_python_writes_differently(value: Any) -> None:
    assert _fast_stringify(value) is None
