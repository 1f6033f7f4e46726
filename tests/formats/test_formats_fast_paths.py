"""The importers' fast paths equal the straightforward code they stand for.

Each fast path (a search instead of a regex scan, one split instead of a search per line, a
chained file taken whole instead of walked, the usual text part read inline…) is compared here
with a plain version of what it replaces, on generated inputs that reach its edges.
"""

from __future__ import annotations

import gc
import random
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.bulk import CollectorPaused, json_memo_key
from loopscope.formats import jsonio
from loopscope.formats.base import ImportContext, ImportLimits, Record
from loopscope.formats.detect import RESPONSES_ITEM_TYPES, content_test
from loopscope.formats.openclaw_session import _Importer, _quote, tool_result_text
from loopscope.formats.text import TEXT_JOINER, _part_text, extract_text, type_of

PROFILE = settings(max_examples=400, deadline=None)


def strict(value: Any) -> Any:
    """A form of a parsed JSON value where ``1``, ``1.0``, ``True`` and ``-0.0`` all differ."""
    if isinstance(value, dict):
        return ("dict", [(k, strict(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [strict(v) for v in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


# ------------------------------------------------------------------------------ jsonio

_NEGATIVE_ZERO = re.compile(rb"-(?=0[ \t\n\r]*(?:[,\]}]|\Z))")


def reference_has_negative_zero(data: bytes) -> bool:
    for match in _NEGATIVE_ZERO.finditer(data):
        i = match.start() - 1
        while i >= 0 and data[i] in b" \t\n\r":
            i -= 1
        if i < 0 or data[i] in b"[:,":
            return True
    return False


number_soup = st.lists(st.sampled_from([b"-", b"-", b"0", b"1", b" ", b"\n", b",", b"[", b"]",
                                        b"{", b"}", b":", b'"', b"a"]), max_size=300)


@PROFILE
@given(number_soup)
def test_negative_zero_search_equals_the_regex_scan(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    assert jsonio.has_negative_zero(data) == reference_has_negative_zero(data)


@PROFILE
@given(st.lists(st.sampled_from(["[", "{", "]", "a", "bb" * 40, '"'])), st.integers(1, 300),
       st.integers(0, 700), st.booleans())
def test_bracket_search_equals_counting(pieces: list[str], repeats: int, limit: int,
                                        as_bytes: bool) -> None:
    text = "".join(pieces) * repeats
    data: str | bytes = text.encode() if as_bytes else text
    assert jsonio._more_brackets_than(data, limit) == (jsonio._bracket_count(data) > limit)


def reference_loads_within_depth(data: bytes, max_depth: int) -> Any:
    k = jsonio.ORJSON_MAX_DEPTH - max_depth
    try:
        value = orjson.loads(b"[" * k + data + b"]" * k)
    except orjson.JSONDecodeError:
        return jsonio._NOT_PARSED
    for _ in range(k):
        if type(value) is not list or len(value) != 1:
            return jsonio._NOT_PARSED
        value = value[0]
    return value


@PROFILE
@given(st.lists(st.sampled_from([b"[", b"]", b",", b"1", b"{}", b'"s"', b" ", b'{"a":', b"}"]),
                max_size=14),
       st.sampled_from([1, 5, 512, 1000, 1023, 1024]))
def test_wrapped_parse_checks_every_level(pieces: list[bytes], max_depth: int) -> None:
    data = b"".join(pieces)
    got = jsonio._loads_within_depth(data, max_depth)
    want = reference_loads_within_depth(data, max_depth)
    assert (got is jsonio._NOT_PARSED) == (want is jsonio._NOT_PARSED)
    if want is not jsonio._NOT_PARSED:
        assert strict(got) == strict(want)


@pytest.mark.parametrize("depth", [511, 512, 513, 1024])
def test_wrapped_parse_at_the_depth_limit(depth: int) -> None:
    data = b"[" * depth + b"]" * depth
    got = jsonio._loads_within_depth(data, 512)
    assert (got is jsonio._NOT_PARSED) == (reference_loads_within_depth(data, 512)
                                           is jsonio._NOT_PARSED)



def nesting(value: Any) -> int:
    """The nesting of a parsed value, the root container being level 1."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict)
                                                  else item))
    return deepest


def reference_loads_shallow(data: bytes, max_depth: int) -> Any:
    """orjson's parse when the text is valid and nested at most ``max_depth`` deep."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return jsonio._NOT_PARSED
    return value if nesting(value) <= max_depth else jsonio._NOT_PARSED


def test_orjson_writing_limit_is_found() -> None:
    limit = jsonio._WRITING_LIMIT
    assert 0 < limit < jsonio.ORJSON_MAX_DEPTH
    orjson.dumps(jsonio._nested(limit, 0))
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(jsonio._nested(limit + 1, 0))
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps([jsonio._nested(limit, 0)])  # a list around a deepest object


@PROFILE
@given(st.lists(st.sampled_from([b"[", b"]", b",", b"1", b"{}", b'"s"', b" ", b'{"a":', b"}"]),
                max_size=14),
       st.integers(0, 300), st.sampled_from([1, 253, 254, 255, 512, 1024]))
def test_shallow_parse_is_the_parse_within_the_depth(pieces: list[bytes], wrap: int,
                                                     max_depth: int) -> None:
    # ``wrap`` levels around generated text reach every side of the writing limit.
    data = b"[" * wrap + b"".join(pieces) + b"]" * wrap
    got = jsonio._loads_shallow(data, max_depth)
    want = reference_loads_shallow(data, max_depth)
    if got is not jsonio._NOT_PARSED:  # it may decline; when it answers, it is exact
        assert want is not jsonio._NOT_PARSED and strict(got) == strict(want)
    elif want is not jsonio._NOT_PARSED and max_depth >= jsonio._WRITING_LIMIT:
        assert nesting(want) > jsonio._WRITING_LIMIT  # declined only a deeper value


@pytest.mark.parametrize("depth", [253, 254, 255, 511, 512, 513])
def test_loads_keeps_the_depth_rule_for_long_documents(depth: int) -> None:
    padding = b'"' + b"x" * jsonio._WRAP_WITHOUT_COUNTING + b'"'
    data = b"[" * (depth - 1) + b"[" + padding + b"]" + b"]" * (depth - 1)
    limits = ImportLimits()
    if depth > limits.max_json_depth:
        with pytest.raises(jsonio.JsonError) as caught:
            jsonio.loads(data, limits)
        assert caught.value.kind == jsonio.TOO_DEEP
    else:
        assert nesting(jsonio.loads(data, limits)) == depth

@PROFILE
@given(st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\r", b"\r\n", b"{}", b"xyz" * 5]),
                max_size=40),
       st.sampled_from([0, 1, 2, 4, 9, 1000]))
def test_line_splitters_agree(pieces: list[bytes], max_line_bytes: int) -> None:
    content = b"".join(pieces)
    chunks = iter([content[i:i + 5] for i in range(0, len(content), 5)])
    split_all = list(jsonio._all_memory_lines(content, max_line_bytes))
    assert split_all == list(jsonio._memory_lines(content, max_line_bytes))
    assert split_all == list(jsonio._split_lines(chunks, max_line_bytes))


json_lines = st.one_of(
    st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                 | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c,
                                                                     max_size=3),
                 max_leaves=8).map(lambda v: orjson.dumps(v, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
                                   if _orjson_can(v) else b'{"big": 1}'),
    st.sampled_from([b'{"a": -0}', b"[-0, 1]", b"-0", b'{"a": "-0"}', b'{"a": -0.0}', b"NaN",
                     b'{"a": NaN}', b"{not json", b"", b"   ", b'{"s": "\\ud800"}', b"\xff\xfe",
                     b'{"s": "caf\xc3\xa9"}', b'{"s": "x\xffy"}', b"[" * 600 + b"]" * 600,
                     b'{"a": 1e400}', b"1" * 30, b'{"k": "' + b"v" * 50 + b'"}',
                     # long lines, at the depth of orjson's writing limit and beyond
                     b"[" * 254 + b'"' + b"x" * 600 + b'"' + b"]" * 254,
                     b"[" * 255 + b'"' + b"x" * 600 + b'"' + b"]" * 255,
                     b"[" * 300 + b"]" * 300, b'{"a": -0, "pad": "' + b"x" * 1100 + b'"}',
                     b'{"pad": "' + b"x" * 1100 + b'", "s": "\\ud800"}',
                     b'{"pad": "' + b"x" * 1100 + b'"} trailing']),
)


def _orjson_can(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def reference_records(content: bytes, limits: ImportLimits) -> list[tuple[int, Any]]:
    """Every line through :func:`jsonio.parse_line`, the straightforward way."""
    out = []
    for number, line, _final, _length in jsonio._memory_lines(content, limits.max_line_bytes):
        if line is None or not line.strip():
            continue
        try:
            value, _bad = jsonio.parse_line(line, limits)
        except jsonio.JsonError:
            continue
        out.append((number, strict(value)))
    return out


@PROFILE
@given(st.lists(json_lines, max_size=12), st.sampled_from(
    [ImportLimits(), ImportLimits(max_value_chars=20), ImportLimits(max_json_depth=3),
     ImportLimits(max_line_bytes=40), ImportLimits(max_json_depth=254),
     ImportLimits(max_json_depth=260, max_value_chars=1000)]),
    st.integers(0, 12))
def test_records_equal_the_line_by_line_parse(lines: list[bytes], limits: ImportLimits,
                                              sampled: int) -> None:
    """The plain-line fast path of ``iter_records`` (orjson straight away) gives what
    ``parse_line`` gives, with or without a detection pass handing its parses over."""
    content = b"\n".join(lines)
    want = reference_records(content, limits)

    def records(parsed: dict[int, Any] | None) -> tuple[list[tuple[int, Any]], list[str]]:
        ctx = ImportContext("x.jsonl", limits)
        got = [(r.line, strict(r.value)) for r in jsonio.iter_records(
            "x.jsonl", limits, ctx, data=content, parsed=parsed)]
        return got, [p.text() for _, p in ctx.problems]

    plain, problems = records(None)
    assert plain == want
    handed: dict[int, Any] = {}
    detection = ImportContext("x.jsonl", limits)
    for n, _ in enumerate(jsonio.iter_records("x.jsonl", limits, detection, report=False,
                                              data=content, parsed=handed)):
        if n + 1 >= sampled:
            break
    assert records(handed) == (plain, problems)


# ------------------------------------------------------------------------------ detection


def reference_content_test(messages: list[Any], top_level_system: bool = False) -> str:
    anthropic = top_level_system
    responses = False
    for message in messages:
        if not isinstance(message, dict):
            continue
        if ("tool_calls" in message or "tool_call_id" in message or "function_call" in message
                or message.get("role") in ("tool", "function")):
            return "openai_chat"
        if type_of(message) in RESPONSES_ITEM_TYPES:
            responses = True
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                btype = type_of(block)
                if btype in ("tool_use", "tool_result", "thinking", "redacted_thinking",
                             "server_tool_use"):
                    anthropic = True
                elif btype in ("input_text", "output_text"):
                    responses = True
    if anthropic:
        return "anthropic_messages"
    if responses:
        return "openai_responses"
    return "openai_chat"


blocks = st.sampled_from([{"type": "tool_use"}, {"type": "text"}, {"type": "input_text"},
                          {"type": "thinking"}, {"type": ["x"]}, "s", None])
chat_messages = st.lists(st.one_of(
    # (roles that are no string too: the rest of a decided list is tested with == on each)
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "function",
                                                    ["tool"], {"r": 1}, None]),
                           "content": st.lists(blocks, max_size=3) | st.just("text")}),
    st.sampled_from([{"tool_calls": []}, {"tool_call_id": "x"}, {"type": "message"},
                     {"type": "function_call"}, {"function_call": {}}, 7, None])), max_size=8)


@PROFILE
@given(chat_messages, st.booleans())
def test_content_test_equals_the_full_scan(messages: list[Any], system: bool) -> None:
    assert content_test(messages, system) == reference_content_test(messages, system)
    # an Anthropic block first: the rest of the list is read by the one-set test
    decided = [{"role": "assistant", "content": [{"type": "tool_use"}]}, *messages]
    assert content_test(decided, system) == reference_content_test(decided, system)


# ------------------------------------------------------------------------------ text


def reference_extract_text(value: list[Any], joiner: str) -> str:
    pieces = []
    for element in value:
        if isinstance(element, str):
            pieces.append(element)
        elif isinstance(element, dict):
            piece = _part_text(element, joiner)
            if piece is not None:
                pieces.append(piece)
    return joiner.join(pieces)


parts = st.lists(st.one_of(
    st.text(max_size=3),
    st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["text", "input_text", "output_text", "image", "refusal",
                                 "document", None, 7]),
        "text": st.sampled_from(["t", "", None, 5]),
        "refusal": st.just("no"), "content": st.sampled_from(["c", ["d"]])}),
    st.integers()), max_size=5)


@PROFILE
@given(parts, st.sampled_from(["", TEXT_JOINER]))
def test_text_parts_read_inline_equal_part_text(value: list[Any], joiner: str) -> None:
    assert extract_text(value, joiner) == reference_extract_text(value, joiner)


# ------------------------------------------------------------------------------ OpenClaw


class _TextSubclass(str):
    __slots__ = ()


class _DictSubclass(dict):  # type: ignore[type-arg]
    pass


def reference_tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join([
            entry["text"] for entry in content
            if isinstance(entry, dict) and isinstance(entry.get("type"), str)
            and isinstance(entry.get("text"), str)
        ])
    return ""


result_entries = st.one_of(
    st.builds(lambda kind, text, cls: cls({k: v for k, v in (("type", kind), ("text", text))
                                           if v != "MISSING"}),
              st.sampled_from(["text", _TextSubclass("text"), None, 7, "MISSING"]),
              st.sampled_from(["t", "", _TextSubclass("s"), None, 5, "MISSING"]),
              st.sampled_from([dict, _DictSubclass])),
    st.text(max_size=2))


@PROFILE
@given(st.one_of(st.lists(result_entries, max_size=3), st.text(max_size=2), st.none()))
def test_one_text_entry_is_its_result_text(content: Any) -> None:
    got = tool_result_text(content)
    want = reference_tool_result_text(content)
    assert (type(got), got) == (type(want), want)


def reference_branch(importer: _Importer, entries: list[Record]) -> list[Record]:
    """The active branch found by walking the parent links from the last entry (the walk of
    ``active_branch``, without its shortcut for chained files)."""
    by_id: dict[str, Record] = {}
    duplicates = 0
    for record in entries:
        entry_id = record.value.get("id")
        if not isinstance(entry_id, str):
            return entries
        if entry_id in by_id:
            duplicates += 1
            continue
        by_id[entry_id] = record
    if duplicates:
        importer.report("info", "duplicates_skipped",
                        f"{duplicates} entries repeat an id seen earlier; the later copies were "
                        "ignored", count=duplicates)
    position: dict[int, int] | None = None
    path: list[Record] = []
    seen: set[int] = set()
    current: Record | None = entries[-1]
    while current is not None:
        if id(current) in seen:
            importer.report("warning", "broken_parent_link",
                            f"the parent links of entry {_quote(current.value.get('id'))} form a "
                            "cycle; the branch ends here", line=current.line)
            break
        seen.add(id(current))
        path.append(current)
        parent = current.value.get("parentId")
        if parent is None and "parentId" in current.value:
            break
        if position is None:
            position = {id(r): n for n, r in enumerate(entries)}
        if not isinstance(parent, str):
            if position[id(current)] == 0:
                break
            shown = "missing" if "parentId" not in current.value else \
                f"a JSON {'number' if isinstance(parent, int | float) else 'value'}, not an entry id"
            importer.report("warning", "broken_parent_link",
                            f"the parent link (parentId) is {shown}; the branch continues with "
                            "the preceding entry", line=current.line)
            current = entries[position[id(current)] - 1]
            continue
        found = by_id.get(parent)
        if found is not None:
            current = found
            continue
        if (current.line - 1) in importer.ctx.skipped_lines and position[id(current)] > 0:
            previous = entries[position[id(current)] - 1]
            importer.report("warning", "broken_parent_link",
                            f"parent entry {_quote(parent)} is not in the file; the branch "
                            "continues with the preceding line", line=current.line)
            current = previous
            continue
        importer.report("warning", "broken_parent_link",
                        f"parent entry {_quote(parent)} is not in the file; the branch starts "
                        "here", line=current.line)
        break
    path.reverse()
    if len(entries) - len(path):
        importer.metadata["abandoned_entries"] = len(entries) - len(path)
    return path


entry_ids = st.sampled_from(["a", "b", "c", "d", "e", 7, None])


@PROFILE
@given(st.lists(st.tuples(entry_ids, st.sampled_from(["prev", "a", "b", "c", "x", None, 3])),
                min_size=1, max_size=8),
       st.sets(st.integers(0, 9), max_size=3))
def test_chained_file_is_its_own_branch(shape: list[tuple[Any, Any]],
                                        skipped: set[int]) -> None:
    """A file whose every entry names the one before as its parent (the first none) is taken
    whole; any other shape is walked: the same branch, problems and metadata either way."""
    entries = []
    previous: Any = None
    for n, (entry_id, parent) in enumerate(shape):
        value = {"type": "message", "id": entry_id,
                 "parentId": previous if parent == "prev" else parent}
        previous = entry_id
        entries.append(Record(n + 1, value))

    def importer() -> _Importer:
        ctx = ImportContext("s.jsonl", ImportLimits())
        ctx.skipped_lines.update(dict.fromkeys(skipped, "invalid_json_line"))
        return _Importer(ctx)

    fast, reference = importer(), importer()
    got = fast.active_branch(entries)
    want = reference_branch(reference, entries)
    assert [r.line for r in got] == [r.line for r in want]
    assert fast.ctx.problems == reference.ctx.problems
    assert fast.metadata == reference.metadata


def test_chained_file_is_taken_whole_and_a_branch_is_walked() -> None:
    chain = [Record(n, {"id": f"e{n}", "parentId": f"e{n - 1}" if n else None})
             for n in range(5)]
    importer = _Importer(ImportContext("s.jsonl", ImportLimits()))
    assert importer.active_branch(chain) == chain and not importer.metadata
    forked = [*chain, Record(5, {"id": "e5", "parentId": "e2"})]
    importer = _Importer(ImportContext("s.jsonl", ImportLimits()))
    assert [r.line for r in importer.active_branch(forked)] == [0, 1, 2, 5]
    assert importer.metadata == {"abandoned_entries": 2}


# ------------------------------------------------------------------------------ model helpers


def test_collector_paused_restores_the_callers_state() -> None:
    was = gc.isenabled()
    try:
        gc.enable()
        with CollectorPaused():
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        with CollectorPaused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        gc.enable()
        with pytest.raises(ValueError), CollectorPaused():
            raise ValueError
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_json_memo_key() -> None:
    assert json_memo_key({"a": 1}) != json_memo_key({"a": 1.0}) != json_memo_key({"a": True})
    assert json_memo_key({"a": 1, "b": 2}) != json_memo_key({"b": 2, "a": 1})
    # Written alike, not equal: a memo must compare the values too (see json_memo_key).
    assert json_memo_key(float("nan")) == json_memo_key(None)
    for unkeyed in (2**70, "\ud800", {1: "a"}, type("S", (str,), {})("s"), object()):
        assert json_memo_key(unkeyed) is None


def test_fast_paths_on_a_random_corpus_of_lines() -> None:
    """A larger seeded run of the records property (lines of every kind, mixed)."""
    rng = random.Random(12)
    samples = [b'{"a": 1}', b'{"a": -0}', b"{bad", b"", b'{"t": "' + b"x" * 2000 + b'"}',
               b"[" * 520 + b"]" * 520, b'{"d": [' + b"[" * 30 + b"]" * 30 + b"]}", b"-0"]
    limits = ImportLimits()
    for _ in range(200):
        content = b"\n".join(rng.choice(samples) for _ in range(rng.randint(0, 30)))
        ctx = ImportContext("x.jsonl", limits)
        got = [(r.line, strict(r.value)) for r in jsonio.iter_records("x.jsonl", limits, ctx,
                                                                      data=content)]
        assert got == reference_records(content, limits)
