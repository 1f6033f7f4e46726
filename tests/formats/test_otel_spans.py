"""OpenTelemetry spans of any GenAI convention (issue #37): OTLP JSON and console-exporter dumps
whose spans follow OpenInference, Langfuse or OpenTelemetry GenAI — decided per span — import
one session per trace with every call, paired with its result by id, else by name and time.

Every fixture's calls are also counted here by :func:`raw_calls`, a reader of the raw spans
that shares nothing with the importer or the loader's tally.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.formats._fmt_helpers import codes, shape, write

from loopscope.cli import main
from loopscope.formats import load_file
from loopscope.formats.base import FileImport

FIXTURES = Path(__file__).parent / "fixtures"


# ----------------------------------------------------------------------- an independent count


def _plain(value: Any) -> Any:
    """An OTLP AnyValue (or a plain value) as a plain value."""
    if isinstance(value, dict):
        for key in ("stringValue", "intValue", "boolValue", "doubleValue"):
            if key in value:
                return value[key]
    return value


def _attrs(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):
        return items
    return {i["key"]: _plain(i["value"]) for i in items or []}


def _spans(path: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP document / JSON Lines file, or of a console dump (objects one
    after another, other lines skipped)."""
    text = path.read_text()
    if '"resourceSpans"' in text:
        exports = [json.loads(line) for line in text.splitlines() if line.strip()] \
            if path.suffix == ".jsonl" else [json.loads(text)]
        return [span for e in exports for r in e["resourceSpans"] for s in r["scopeSpans"]
                for span in s["spans"]]
    decoder, spans, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i] == "{":
            span, i = decoder.raw_decode(text, i)
            spans.append(span)
        else:
            i = text.find("\n", i) + 1 or len(text)
    return spans


_INDEXED_CALL_NAME = re.compile(r"tool_calls\.\d+\.(?:tool_call\.function\.)?name$")
_OUTPUT_KEYS = ("llm.output_messages", "gen_ai.output.messages", "gen_ai.completion",
                "langfuse.observation.output")


def _json_calls(value: Any) -> int:
    if isinstance(value, list):
        return sum(_json_calls(v) for v in value)
    if not isinstance(value, dict):
        return 0
    if value.get("type") == "tool_call":
        return 1
    return (len(value["tool_calls"]) if isinstance(value.get("tool_calls"), list) else 0) + sum(
        _json_calls(v) for k, v in value.items() if k != "tool_calls")


def raw_calls(path: Path) -> tuple[int, int]:
    """``(calls in model outputs, tool spans)`` of a span file, read from the raw text."""
    model = tools = 0
    for span in _spans(path):
        sources = [_attrs(span.get("attributes"))] + [
            _attrs(e.get("attributes")) for e in span.get("events") or []]
        attrs = sources[0]
        if "TOOL" in (attrs.get("openinference.span.kind"),
                      str(attrs.get("langfuse.observation.type")).upper()) \
                or attrs.get("gen_ai.operation.name") == "execute_tool":
            tools += 1
        for source in sources:
            model += sum(1 for key in source if _INDEXED_CALL_NAME.search(key))
            model += sum(_json_calls(_loads(v)) for k, v in source.items()
                         if k in _OUTPUT_KEYS and isinstance(v, str))
    return model, tools


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None  # a plain-text output


def fixture(name: str) -> FileImport:
    return load_file(str(FIXTURES / name))


def assert_counts(result: FileImport, name: str, *, paired: bool = True) -> None:
    """The loader's tally agrees with the independent count: every call seen; a tool span that
    answers a model call is the same call, set aside; nothing lost."""
    model, tools = raw_calls(FIXTURES / name)
    assert result.calls_seen == model + tools
    imported = model if paired else model + tools
    assert result.calls_imported == imported == sum(len(s.calls) for s in result.sessions)
    assert sum(result.calls_set_aside.values()) == model + tools - imported
    assert result.calls_lost == 0 and "calls_not_imported" not in codes(result)


# ----------------------------------------------------------------------- OTLP JSON


def test_openinference_spans_over_otlp_whose_first_span_is_a_chain() -> None:
    result = fixture("otlp_openinference_chain_first.json")
    assert result.detection.format == "otel_genai"
    (session,) = result.sessions
    assert shape(session) == ('U A0[search_flights] R0 A1[get_price, get_price] R1 R2! '
                              'A2("The cheapest is SK4711 at 132 EUR.")')
    assert session.events[0].text == "Find the cheapest flight from Lyon to Oslo on 12 May"
    # the model's arguments, never the TOOL span's parameter schema (tool.parameters)
    assert [c.arguments for c in session.calls] == [
        {"from": "LYS", "to": "OSL", "date": "2026-05-12"}, {"flight": "SK4711"},
        {"flight": "AF1234"}]
    # no tool_call.id on the get_price spans: paired by name, in time order
    results = [e for e in session.events if e.kind == "tool_result"]
    assert [r.text for r in results[1:]] == ["132 EUR", "PriceServiceTimeout"]
    assert session.models == ("gpt-4o-2024-08-06",)
    assert_counts(result, "otlp_openinference_chain_first.json")


def test_langfuse_spans_over_otlp() -> None:
    result = fixture("otlp_langfuse.jsonl")
    assert result.detection.format == "otel_genai"
    (session,) = result.sessions
    assert shape(session) == ('U A0[lookup_order] R0 A1[notify_customer] R1! '
                              'A2("It ships tomorrow.")')
    assert session.events[0].text == "Where is my order 1042?"  # langfuse.trace.input
    assert [c.arguments for c in session.calls] == [{"order_id": 1042}] * 2
    failed = [e for e in session.events if e.kind == "tool_result" and e.is_error]
    assert [e.text for e in failed] == ["SMTP 451: try again later"]
    assert session.models == ("gpt-4.1",)
    assert_counts(result, "otlp_langfuse.jsonl")


def test_conventions_mixed_in_one_file_are_decided_per_span() -> None:
    result = fixture("otlp_mixed_conventions.json")
    first, second = result.sessions
    # Langfuse root, OpenInference LLM, GenAI tool, OpenLLMetry chat, GenAI failing tool
    assert shape(first) == "U A0[read_file] R0 A1[run_tests] R1!"
    assert first.events[0].text == "Make the failing test pass"
    assert [c.id for c in first.calls] == ["toolu_1", "toolu_2"]
    assert first.calls[1].arguments == {"target": "tests/"}
    # older GenAI completion event, answered by a Langfuse tool span with a GenAI call id
    assert shape(second) == "A0[grep] R0"
    assert second.calls[0].arguments == {"pattern": "TODO"}
    assert_counts(result, "otlp_mixed_conventions.json")


def test_the_first_span_does_not_decide(tmp_path: Path) -> None:
    """The same spans written in another order (the root last, as exporters often do) make
    the same sessions."""
    lines = (FIXTURES / "otlp_langfuse.jsonl").read_text().splitlines()
    result = load_file(write(tmp_path, "r.jsonl", "\n".join(reversed(lines)) + "\n"))
    assert [len(s.calls) for s in result.sessions] == [2]
    assert [shape(s) for s in result.sessions] == [
        shape(s) for s in fixture("otlp_langfuse.jsonl").sessions]
    document = json.loads((FIXTURES / "otlp_mixed_conventions.json").read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.reverse()
    result = load_file(write(tmp_path, "r.json", json.dumps(document)))
    assert sorted(shape(s) for s in result.sessions) == sorted(
        shape(s) for s in fixture("otlp_mixed_conventions.json").sessions)


def test_capture_off_warns_once_for_the_file() -> None:
    result = fixture("otlp_capture_off.json")
    assert [len(s.calls) for s in result.sessions] == [2, 2]
    assert all(c.raw_arguments is None and c.result is None
               for s in result.sessions for c in s.calls)
    (warning,) = [p for p in result.problems if p.code == "content_not_captured"]
    assert (warning.severity, warning.source) == ("warning", result.path)
    assert warning.message.startswith("2 of 2 traces")
    assert "see only tool names" in warning.message
    assert str(FIXTURES / "otlp_capture_off.json") in warning.text()
    assert_counts(result, "otlp_capture_off.json", paired=False)


def test_capture_off_is_said_by_the_cli_beside_the_file() -> None:
    path = str(FIXTURES / "otlp_capture_off.json")
    run = CliRunner().invoke(main, ["replay", path, "--engine", "gglib"])
    assert run.exit_code == 0, run.output
    assert f"{path}: warning: 2 of 2 traces" in run.output
    assert "[content_not_captured]" in run.output


def test_a_trace_with_content_is_not_warned_of() -> None:
    for name in ("otlp_openinference_chain_first.json", "otlp_langfuse.jsonl",
                 "otlp_mixed_conventions.json", "otel_genai_otlp.json",
                 "openinference_spans.jsonl", "langfuse_observations.json"):
        assert "content_not_captured" not in codes(fixture(name)), name


# ----------------------------------------------------------------------- console exporter


def test_python_console_dump_with_a_repeated_span() -> None:
    result = fixture("otel_console_python.txt")
    assert result.detection.format == "otel_console"
    assert result.detection.layout == "document"
    (session,) = result.sessions
    assert shape(session) == "U A0[shell] R0 A1[shell] R1!"
    assert session.id == "5e0000000000000000000000000000aa"  # the trace id, without 0x
    assert session.events[0].text == "Why is the disk full?"
    assert session.calls[0].arguments == {"command": "du -sh /var/log"}
    assert [e.text for e in session.events if e.kind == "tool_result"] == [
        "41G\t/var/log", "PermissionError: journalctl needs root"]
    assert "duplicates_skipped" in codes(result)  # the span printed twice
    assert "unknown_record_type" in codes(result)  # the program's own line between spans
    model, tools = raw_calls(FIXTURES / "otel_console_python.txt")
    assert (model, tools) == (2, 3)  # the repeated execute_tool span counted twice
    assert result.calls_seen == 5 and result.calls_imported == 2
    assert result.calls_set_aside == {"span printed again": 1,
                                      "tool span of a call already in the model's output": 2}
    assert result.calls_lost == 0


def _console_spans() -> list[dict[str, Any]]:
    spans = _spans(FIXTURES / "otel_console_python.txt")
    return [s for i, s in enumerate(spans) if i != 2]  # without the repeat


def test_console_spans_one_per_line_as_an_array_or_alone(tmp_path: Path) -> None:
    spans = _console_spans()
    per_line = load_file(write(tmp_path, "s.jsonl", "".join(json.dumps(s) + "\n"
                                                            for s in spans)))
    assert per_line.detection.format == "otel_console" and "L15" in per_line.detection.reason
    array = load_file(write(tmp_path, "a.json", json.dumps(spans, indent=2)))
    assert array.detection.format == "otel_console"
    expected = shape(fixture("otel_console_python.txt").sessions[0])
    assert [shape(s) for s in per_line.sessions] == [shape(s) for s in array.sessions] \
        == [expected]
    assert per_line.calls_seen == array.calls_seen == 4
    alone = load_file(write(tmp_path, "one.json", json.dumps(spans[1], indent=4)))
    assert alone.detection.format == "otel_console"
    assert alone.calls_seen == 1 and [len(s.calls) for s in alone.sessions] == [1]


def test_openinference_attributes_in_a_console_dump_follow_openinference(
        tmp_path: Path) -> None:
    """Phoenix-instrumented code printed by the console exporter: the spans carry
    openinference.span.kind; they are still console spans, read by OpenInference rules."""
    def span(sid: str, parent: str | None, attrs: dict[str, Any]) -> str:
        return json.dumps({"name": sid, "context": {"trace_id": "0xab", "span_id": sid},
                           "kind": "SpanKind.INTERNAL", "parent_id": parent,
                           "start_time": f"2026-05-04T09:00:0{sid[-1]}.000000Z",
                           "status": {"status_code": "UNSET"}, "attributes": attrs,
                           "events": [], "links": [], "resource": {"attributes": {}}},
                          indent=4) + "\n"
    text = (span("0x2", "0x1", {"openinference.span.kind": "TOOL", "tool.name": "ls",
                                "input.value": "{}", "output.value": "a b"})
            + span("0x1", None, {"openinference.span.kind": "AGENT", "input.value": "list"}))
    result = load_file(write(tmp_path, "oi.txt", text))
    assert result.detection.format == "otel_console"
    (session,) = result.sessions
    assert shape(session) == "U A0[ls] R0"
    assert result.calls_seen == 1 and result.calls_lost == 0


NODE_CONSOLE_DIR = """{
  resource: {
    attributes: {
      'service.name': 'agent',
      'telemetry.sdk.language': 'nodejs'
    }
  },
  instrumentationScope: { name: 'ai', version: undefined, schemaUrl: undefined },
  traceId: '5e0000000000000000000000000000aa',
  parentSpanContext: undefined,
  traceState: undefined,
  name: 'execute_tool shell',
  id: '7000000000000003',
  kind: 0,
  timestamp: 1777885201000000,
  duration: 400123.5,
  attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'shell' },
  status: { code: 0 },
  events: [],
  links: []
}
"""


def test_javascript_console_output_is_named_and_refused(tmp_path: Path) -> None:
    result = load_file(write(tmp_path, "node.txt", NODE_CONSOLE_DIR * 2))
    assert codes(result) == ["unsupported_variant"]
    message = result.problems[0].message
    assert "JavaScript console exporter" in message and "OTLP exporter" in message
    assert not result.sessions


def test_a_damaged_console_dump_keeps_the_spans_before_the_damage(tmp_path: Path) -> None:
    text = (FIXTURES / "otel_console_python.txt").read_text()
    cut = text[: text.rindex('"name": "invoke_agent')]  # the root span cut short
    result = load_file(write(tmp_path, "cut.txt", cut))
    assert result.detection.format == "otel_console"
    assert [len(s.calls) for s in result.sessions] == [2]
    assert "unknown_record_type" in codes(result)


def _otlp(*spans: tuple[str, str, dict[str, str], list[tuple[str, dict[str, str]]]]) -> str:
    def attrs(values: dict[str, str]) -> list[dict[str, Any]]:
        return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t1", "spanId": sid, "parentSpanId": "", "name": sid,
         "startTimeUnixNano": str(1777885200000000000 + n), "attributes": attrs(a),
         "events": [{"name": e, "attributes": attrs(ea)} for e, ea in events]}
        for n, (sid, _, a, events) in enumerate(spans)]}]}]})


def test_newest_genai_output_in_an_event_and_under_a_langfuse_generation(
        tmp_path: Path) -> None:
    parts = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"path": "."}}]}])
    more = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c2", "name": "cat", "arguments": {"path": "a"}}]}])
    text = _otlp(
        ("s1", "", {"langfuse.observation.type": "generation",
                    "gen_ai.output.messages": parts}, []),
        ("s2", "", {"gen_ai.operation.name": "chat"},
         [("gen_ai.client.inference.operation.details", {"gen_ai.output.messages": more})]),
        ("s3", "", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "cat",
                    "gen_ai.tool.call.id": "c2", "gen_ai.tool.call.result": "hello"}, []))
    result = load_file(write(tmp_path, "e.json", text))
    (session,) = result.sessions
    assert shape(session) == "A0[ls] A1[cat] R1"
    assert [c.arguments for c in session.calls] == [{"path": "."}, {"path": "a"}]
    assert (result.calls_seen, result.calls_imported, result.calls_lost) == (3, 2, 0)
