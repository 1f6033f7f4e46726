"""Golden values of ``openclaw@2026.6.11`` (``../shared/reference/openclaw_vectors.json``), the
stable-stringify cases and the table of argsHash / resultHash values the package gives."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from tests.engines.openclaw._openclaw_helpers import VECTORS

from loopscope.engines.openclaw import UNDEFINED, hash_tool_call, hash_tool_outcome
from loopscope.engines.openclaw.shared.hashing import extract_unknown_tool_name
from loopscope.engines.openclaw.v2026_6.config import merge_agent_overlay, resolve_loop_detection
from loopscope.jsonrules.javascript import (
    digest,
    js_json_parse,
    js_number,
    js_trim,
    sha256_hex,
    stable_stringify,
)

if not VECTORS.is_file():
    pytest.skip(f"vectors not found at {VECTORS}", allow_module_level=True)

DATA: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))


def _ids(rows: list[dict[str, Any]]) -> list[str]:
    return [f"{n}-{row.get('note', '')[:40]}" for n, row in enumerate(rows)]


@pytest.mark.parametrize("row", DATA["argsHash"], ids=_ids(DATA["argsHash"]))
def test_args_hash_vectors(row: dict[str, Any]) -> None:
    ok, value = js_json_parse(row["arguments"])
    assert ok is row["parses"]
    params = value if ok else row["arguments"]
    assert stable_stringify(params) == row["stable"]
    assert hash_tool_call(row["tool"], params) == row["argsHash"]
    assert row["argsHash"] == f"{row['tool']}:{sha256_hex(row['stable'])}"


@pytest.mark.parametrize("row", DATA["resultHash"], ids=_ids(DATA["resultHash"]))
def test_result_hash_vectors(row: dict[str, Any]) -> None:
    result = row.get("result", UNDEFINED)
    error = row.get("error", UNDEFINED)
    result_hash, unknown = hash_tool_outcome(row["tool"], row["params"], result, error)
    assert result_hash == row["resultHash"]
    assert unknown == row["unknownToolName"]
    if row["preimage"] is not None:
        prefix = "error:" if "error" in row else ""
        assert result_hash == prefix + sha256_hex(row["preimage"])


# The stableStringify section holds JS expressions; these are their Python equivalents
# (JS-only values — bigint, functions, Date, Error — have none: parsed JSON never holds them).
_root: dict[str, Any] = {"first": {"value": 1}, "second": {"value": 1}}
_root["self"] = _root
PY_EQUIVALENTS: dict[str, Any] = {
    "undefined": UNDEFINED,
    "({a: undefined, b: 1})": {"a": UNDEFINED, "b": 1},
    "[1, undefined, 'x']": [1, UNDEFINED, "x"],
    "NaN": math.nan,
    "({x: -Infinity})": {"x": -math.inf},
    "root = {first:S, second:S, self:root}": _root,
    "new Uint8Array([1,2,3])": b"\x01\x02\x03",
}


@pytest.mark.parametrize("row", DATA["stableStringify"], ids=[r["js"] for r in DATA["stableStringify"]])
def test_stable_stringify_vectors(row: dict[str, Any]) -> None:
    if row["js"] not in PY_EQUIVALENTS:
        pytest.skip("JS-only value (bigint, function, symbol, Date)")
    assert stable_stringify(PY_EQUIVALENTS[row["js"]]) == row["stable"]


@pytest.mark.parametrize("row", DATA["config"], ids=_ids(DATA["config"]))
def test_config_resolution_vectors(row: dict[str, Any]) -> None:
    block = None if row["input_absent"] else row["input"]
    assert resolve_loop_detection(block).to_json() == row["resolved"]


@pytest.mark.parametrize("row", DATA["overlay"], ids=_ids(DATA["overlay"]))
def test_overlay_vectors(row: dict[str, Any]) -> None:
    merged = merge_agent_overlay(row["cfg"], row["agentId"])
    if row["merged_absent"]:
        assert merged is UNDEFINED
        block = None
    else:
        assert merged == row["merged"]
        block = merged
    assert resolve_loop_detection(block).to_json() == row["resolved"]


# --------------------------------------------------------------------------- stable stringify


def test_s1_nested_key_sort() -> None:
    assert stable_stringify({"b": {"d": 4, "c": 3}, "a": 1}) == '{"a":1,"b":{"c":3,"d":4}}'


def test_s2_s3_cycles_and_repeats() -> None:
    shared = {"value": 1}
    root: dict[str, Any] = {"first": shared, "second": shared}
    root["self"] = root
    assert stable_stringify(root) == ('{"first":{"value":1},"second":{"value":1},'
                                      '"self":"[Circular]"}')
    same = {"value": "same"}
    items: list[Any] = [same, same]
    items.append(items)
    assert stable_stringify(items) == '[{"value":"same"},{"value":"same"},"[Circular]"]'


def test_s4_lone_surrogates() -> None:
    value = {"key\ud83d": "name", "high": "left\ud83dright", "low": "left\ude48right",
             "valid": "emoji 🙈 ok"}
    assert stable_stringify(value) == (
        '{"high":"left\\ud83dright","key\\ud83d":"name","low":"left\\ude48right",'
        '"valid":"emoji 🙈 ok"}')


def test_s4_split_pair_is_rejoined() -> None:
    assert stable_stringify("\ud83d\ude48") == '"🙈"'


def test_s5_python_side() -> None:
    value = {"finite": 1, "infinity": math.inf, "nan": math.nan, "nil": None,
             "undef": UNDEFINED}
    assert stable_stringify(value) == ('{"finite":1,"infinity":"Infinity","nan":"NaN",'
                                       '"nil":null,"undef":undefined}')


def test_s6_numbers() -> None:
    values = [1e21, 1e-7, 1e-6, 0.1, -0.0, 5e-324, 2**53 + 1, 100.0, 12345678901234567890]
    assert stable_stringify(values) == (
        "[1e+21,1e-7,0.000001,0.1,0,5e-324,9007199254740992,100,12345678901234567000]")


def test_s7_digit_keys_sort_as_strings() -> None:
    assert stable_stringify({"10": 1, "2": 2, "b": 3, "B": 4, "_": 5}) == (
        '{"10":1,"2":2,"B":4,"_":5,"b":3}')


def test_s8_raw_characters() -> None:
    assert stable_stringify("\u007f\u0000\u001f\u2029\ufeff") == (
        '"\u007f\\u0000\\u001f\u2029\ufeff"')


@pytest.mark.parametrize(("value", "text"), [
    (1.5e300, "1.5e+300"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (1e20, "100000000000000000000"), (123.456, "123.456"), (0.000123, "0.000123"),
    (1.5e-7, "1.5e-7"), (-2.5, "-2.5"), (2**53, "9007199254740992"), (1e16, "10000000000000000"),
])
def test_js_number_forms(value: float, text: str) -> None:
    assert js_number(value) == text


def test_huge_integer_is_infinity() -> None:
    assert stable_stringify(10**400) == '"Infinity"'
    assert stable_stringify(-(10**400)) == '"-Infinity"'


def test_utf16_key_order() -> None:
    assert stable_stringify({"～": 1, "😀": 2}) == '{"😀":2,"～":1}'


def test_js_trim_set() -> None:
    assert js_trim("\ufeff\u3000 x \xa0\u2028") == "x"
    assert js_trim("\x1cx\x85") == "\x1cx\x85"


def test_deep_nesting_does_not_raise() -> None:
    ok, _ = js_json_parse("[" * 200 + "]" * 200)
    assert ok
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    assert stable_stringify(deep) == "[" * 5000 + "1" + "]" * 5000


# --------------------------------------------------------------------------- hash values of the package


@pytest.mark.parametrize(("tool", "params", "expected"), [
    ("read", {"path": "/file.txt"},
     "read:fcd70c3cc3a31a5afa413e0119a4058f9c6e65288d5621a73ef706cb0649666b"),
    ("tool", {"b": 2, "a": 1},
     "tool:43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777"),
    ("tool", "string-param",
     "tool:21cb7feb6caa9fcd15b641236f2da636d1fae1f6898a052d9810f152b58bbb47"),
    ("tool", 123, "tool:a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3"),
    ("tool", None, "tool:74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"),
    ("tool", {}, "tool:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"),
    ("exec", {"command": "ls -la"},
     "exec:1df8bccaec747dc615b50678f35bf5b51756a45f9b2b77b247c7a617fde58b3e"),
    ("process", {"action": "poll", "sessionId": "sess-1"},
     "process:49e57b888f46767b725107d24370e31869c8110f24fccb663b3cd9f54b74fe70"),
    ("t", {"n": 1.5, "big": 1e21, "small": 1e-7, "neg0": -0.0, "f": 100.0, "u": UNDEFINED,
           "arr": [1, UNDEFINED, "x"], "nested": {"z": 1, "a": [True, False]}},
     "t:6bb9410d25e346dd3cae1315c8c40c7e7d60220581d9183244f862ac85a335f0"),
    ("t", {"é": 1, "e": 2, "Z": 3, "a": 4, "😀": 5, "～": 6},
     "t:62525eeafae801f36375def62db320f61830ec57fde756b10b99ec1960904422"),
    ("t", {"s": "line1\nline2\t\"q\" \\ \u0001 \u2028 ü"},
     "t:4c5e1400769bf542eb01e45d4c4ed1b371c1025d2788fe321f1b174ec4f9e4d2"),
    ("Bash", {"command": "ls"},
     "Bash:4cf29611a66934862f29acfcc817e30b905c1ab73d5e65831413eb6b454d49db"),
])
def test_args_hash_table(tool: str, params: Any, expected: str) -> None:
    assert hash_tool_call(tool, params) == expected
    assert len(expected) == len(tool) + 65


def _text(text: str, details: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if details is not None:
        result["details"] = details
    return result


@pytest.mark.parametrize(("tool", "params", "result", "error", "expected", "unknown"), [
    ("exec", {}, UNDEFINED, "Tool exec not found",
     "error:97dac4bb07ccc8dc5e8636bef0977d8d47b19daded96b97cb9d141a474c77cb9", "exec"),
    ("x", {}, UNDEFINED, "boom",
     "error:20b9458ca349a629a028ec64e716294abd767b0059bd4adb6ec0ea4fcf766725", None),
    ("x", {}, UNDEFINED, "",
     "error:12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126", None),
    ("x", {}, "hello", UNDEFINED,
     "5aa762ae383fbb727af3c7a36d4940a5b8c40a989452d2304fc958ff3f354e7a", None),
    ("x", {}, None, UNDEFINED,
     "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b", None),
    ("x", {}, {"content": [{"type": "text", "text": "  ok\n"}], "details": {}}, UNDEFINED,
     "9915c1dcbac87e7fce734e5bab2baf7358be7be8754f10a5fc93f76321587561", None),
    ("read", {}, _text("same output", {"ok": True}), UNDEFINED,
     "e8247a52b90c18a8c1ecdca3031675433387e6001940e9a290d3726bf729a020", None),
    ("exec", {}, _text("x", {"status": "completed", "exitCode": 0, "durationMs": 101,
                             "cwd": "/tmp/run-1", "aggregated": "Loki\nPrometheus"}), UNDEFINED,
     "dbfb8a1b044029f80664328c9121c354849466bedf03a306b582109a125d4173", None),
    ("exec", {}, _text("x", {"status": "running", "pid": 5, "tail": "(no new output)"}),
     UNDEFINED, "26c5faf97fd422ff81354acadb6860886d4018ee0a4388ffdb1a209147701d93", None),
    ("exec", {}, _text("t", {"status": ""}), UNDEFINED,
     "bf3e89f2cb9a415fef0d148b5ff8b901b2c2064be3834b7f9811ac8581fd0ddd", None),
    ("exec", {}, _text("x", {"status": "approval-pending", "host": "gw"}), UNDEFINED,
     "74326b29da592ea30ebfb1788d5f4fb9c8a8eee2a16ee9780ce3128e6954b4ab", None),
    ("process", {"action": "poll", "sessionId": "sess-1"},
     _text("(no new output)\n\nProcess still running.", {"status": "running",
                                                          "aggregated": "steady"}), UNDEFINED,
     "3dd0ce52bc8c569b73d432663043d8308f2f726318b5c97e201eab2ecd6c2056", None),
    ("process", {"action": "poll"}, _text("x"), UNDEFINED,
     "72e09f6eba3c7d3541b35e642ae0556c44051e30fa27c84e7443ec000aad9e36", None),
    ("message", {"action": "send"},
     _text("x", {"ok": True, "channel": "feishu", "chatId": "oc_chat", "runId": "run_0",
                 "messageId": "om_0", "receipt": {"platformMessageId": "p_0"}}), UNDEFINED,
     "f4c55806aa590d05a2091d6f4d0ea89bfb3bcdf8361e8e45e4a47756d8bde45d", None),
    ("x", {}, _text("b", {"status": "blocked", "deniedReason": "tool-loop"}), UNDEFINED, None,
     None),
    ("x", {}, UNDEFINED, UNDEFINED, None, None),
])
def test_outcome_hash_table(tool: str, params: Any, result: Any, error: Any,
                            expected: str | None, unknown: str | None) -> None:
    assert hash_tool_outcome(tool, params, result, error) == (expected, unknown)


@pytest.mark.parametrize(("error", "name"), [
    ("Tool exec not found", "exec"), ("Unknown tool: Himalaya", "himalaya"),
    ("tool 'foo.bar' is not available", "foo.bar"), ("No such tool", None),
    ('  unknown tool "Web.Search" requested', "web.search"),
    ("No such tool available: foo", None), ("Unknown tool: caf\u00e9", "caf"),
    ("unknown tool\u3000x", "x"), ("UNKNOWN TOOL \u212a", None),
])
def test_unknown_tool_extraction(error: str, name: str | None) -> None:
    assert extract_unknown_tool_name(error) == name


def test_digest_is_sha256_of_stable_text() -> None:
    assert digest({"b": 1, "a": [None]}) == sha256_hex('{"a":[null],"b":1}')
