"""The serde_json-compatible loader: what serde_json accepts and how it classifies numbers."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopscope.jsonrules import serde_json as serde
from loopscope.jsonrules.serde_json import (
    SerdeJsonError,
    loads_file_level,
    parse_json_serde,
    parse_serde_json,
)


def slow(text: str) -> Any:
    v = serde._slow_loads(text)
    serde._check_depth_and_surrogates(v)
    return v


@pytest.mark.parametrize(
    "text",
    [
        "NaN", "Infinity", "-Infinity", '{"v":NaN}', "1e400", "-1e400", "1" * 400, '{"v":1e400}',
        "[" * 128 + "]" * 128, "[" * 200 + "]" * 200, '{"a":' * 128 + "1" + "}" * 128,
        '"\\ud800"', '"\\udc00"', '{"\\ud800":1}', '["a\\udc00b"]', '"\\ude00\\ud83d"',
        '"a\x01"', '"\x1f"', '{"a":1} trailing', "\ufeff{}", '{"a":1,}', "[1,]", "", " ",
        "{not valid json", "01", "1.", ".5", "+1", "tru", "'a'", '{"a":1}\x0c',
    ],
)
def test_rejected(text: str) -> None:
    with pytest.raises(SerdeJsonError):
        parse_json_serde(text)
    ok, reason = parse_serde_json(text)
    assert ok is False and isinstance(reason, str) and reason


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("[" * 127 + "]" * 127, None),
        ('{"a":' * 127 + "1" + "}" * 127, None),
        (' \t\r\n{"a":1} \n', {"a": 1}),
        ('{"a":1,"a":2}', {"a": 2}),
        ('"\\ud83d\\ude00"', "😀"),
        ('"\x7f\u2028"', "\x7f\u2028"),
        ("1E2", 100.0),
        ("2.0e0", 2.0),
        ("9007199254740993", 9007199254740993),
        ("18446744073709551615", 18446744073709551615),
        ("-9223372036854775808", -9223372036854775808),
    ],
)
def test_accepted(text: str, value: Any) -> None:
    got = parse_json_serde(text)
    if value is not None:
        assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-0", -0.0),
        ("[-0]", [-0.0]),
        ('{"a": -0 }', {"a": -0.0}),
        ("18446744073709551616", 1.8446744073709552e19),
        ("-9223372036854775809", -9.223372036854776e18),
        ("123456789012345678901234567890", 1.2345678901234568e29),
        ("1" * 300, float("1" * 300)),
    ],
)
def test_number_classification(text: str, value: Any) -> None:
    got = parse_json_serde(text)
    assert got == value
    flat = got if not isinstance(got, list | dict) else (got[0] if isinstance(got, list) else got["a"])
    assert isinstance(flat, float)
    if flat == 0:
        assert math.copysign(1, flat) == -1


def test_file_level_only_applies_number_rules() -> None:
    assert loads_file_level('{"a":"\\ud800"}') == {"a": "\ud800"}
    deep = "[" * 300 + "]" * 300
    assert loads_file_level(deep) is not None
    v = loads_file_level(b'{"x":-0,"y":18446744073709551616,"d":"2024-01-05"}')
    assert math.copysign(1, v["x"]) == -1 and isinstance(v["y"], float)
    for bad in ['{"a":NaN}', '{"a":1e400}', "[" + "9" * 400 + "]", b"\xff"]:
        with pytest.raises(SerdeJsonError):
            loads_file_level(bad)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_fast_path_equals_slow_path(value: Any) -> None:
    text = json.dumps(value)
    a = parse_json_serde(text)
    b = slow(text)
    assert json.dumps(a) == json.dumps(b)
    assert repr(a) == repr(b)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='[]{}"\\:,-0123456789.eE tnrufalsNI\ud800', max_size=30))
def test_fast_and_slow_paths_agree_on_arbitrary_text(text: str) -> None:
    try:
        a: Any = ("ok", repr(parse_json_serde(text)))
    except SerdeJsonError:
        a = "rejected"
    try:
        b: Any = ("ok", repr(slow(text)))
    except SerdeJsonError:
        b = "rejected"
    assert a == b
