"""Generic text extraction, the two OpenAI-chat rules (gglib's reply text, OpenClaw's result
text), compact JSON and timestamps."""

from __future__ import annotations

import pytest

from loopscope.formats.text import (
    compact_json,
    extract_text,
    gemini_response_text,
    iso_timestamp,
    openai_assistant_text,
    openai_tool_result_text,
)


def test_none_and_strings_unchanged() -> None:
    assert extract_text(None, "\n") == ""
    assert extract_text("  a\r\nb  ", "") == "  a\r\nb  "


def test_list_joiners() -> None:
    parts = ["x", {"type": "text", "text": "a"}, {"type": "output_text", "text": "b"},
             {"text": "c"}, {"type": "input_text", "text": ""}]
    assert extract_text(parts, "") == "xabc"
    assert extract_text(parts, "\n") == "x\na\nb\nc\n"


def test_part_kinds() -> None:
    parts = [
        {"type": "refusal", "refusal": "no"},
        {"type": "search_result", "content": [{"type": "text", "text": "found"}]},
        {"type": "tool_result", "content": "nested"},
        {"type": "document", "source": {"type": "text", "data": "doc"}},
        {"functionResponse": {"response": {"output": "out"}}},
        {"functionResponse": {"response": {"error": {"message": "bad"}}}},
        {"type": "image", "source": {}}, {"type": "thinking", "thinking": "hidden"},
        {"type": "redacted_thinking", "data": "x"}, 7, None,
    ]
    assert extract_text(parts, "|") == "no|found|nested|doc|out|bad"


def test_objects_numbers_booleans() -> None:
    assert extract_text({"b": 1, "a": "é"}, "\n") == '{"a":"é","b":1}'
    assert extract_text(3, "\n") == "3"
    assert extract_text(2.5, "\n") == "2.5"
    assert extract_text(True, "\n") == "true"
    assert extract_text({"type": "text", "text": "part"}, "\n") == "part"
    assert compact_json({"z": [1, {"y": None}], "a": True}) == '{"a":true,"z":[1,{"y":null}]}'


def test_gemini_response() -> None:
    assert gemini_response_text({"output": "o", "error": "e"}) == "o"
    assert gemini_response_text({"error": "e"}) == "e"
    assert gemini_response_text({"x": 1}) == '{"x":1}'


def test_openai_assistant_rule_is_gglib() -> None:
    assert openai_assistant_text("s") == "s"
    assert openai_assistant_text([{"type": "text", "text": "a"}, {"type": "output_text",
                                  "text": "b"}, {"text": "c"}, {"type": "text", "text": "d"}]) \
        == "ad"
    assert openai_assistant_text(None) == ""
    assert openai_assistant_text({"type": "text", "text": "a"}) == ""
    assert openai_assistant_text(5) == ""


def test_openai_tool_result_rule_is_openclaw() -> None:
    assert openai_tool_result_text(" s ") == " s "
    assert openai_tool_result_text([{"type": "text", "text": "a"}, {"type": "image",
                                    "text": "b"}, {"x": 1}, "raw"]) == "a\nb"
    assert openai_tool_result_text({"text": "a"}) == ""
    assert openai_tool_result_text(None) == ""
    assert openai_tool_result_text(12) == ""


@pytest.mark.parametrize(("value", "expected"), [
    (1777881601000, "2026-05-04T08:00:01.000Z"),
    (1777881601, "2026-05-04T08:00:01.000Z"),
    (1777881601.5, "2026-05-04T08:00:01.500Z"),
    ("2026-05-04T08:00:01+02:00", "2026-05-04T08:00:01+02:00"),
    ("  ", None), (None, None), (True, None), (float("inf"), None), (1e300, None),
])
def test_iso_timestamp(value: object, expected: str | None) -> None:
    assert iso_timestamp(value) == expected
