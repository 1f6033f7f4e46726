"""inspect_eval: samples as sessions, calls by ``function``, attachments,
error results, header-only logs and the optional ``.eval`` zip."""

from __future__ import annotations

import json
import zipfile

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    only,
    run_document,
    shape,
)

from loopscope.formats import inspect_eval
from loopscope.formats.base import ImportContext, ImportLimits

SAMPLE = {
    "id": 1, "epoch": 1, "attachments": {"abc": "resolved text"},
    "scores": {"includes": {"value": "C", "answer": "x"}},
    "messages": [
        {"id": "m0", "role": "system", "content": "Be helpful."},
        {"id": "m1", "role": "user", "content": "Open example.org and give its title.",
         "source": "input"},
        {"id": "m2", "role": "assistant", "source": "generate", "model": "demo",
         "content": [{"type": "reasoning", "reasoning": "Go there."}, {"type": "text", "text": ""}],
         "tool_calls": [{"id": "call_1", "function": "web_browser_go",
                         "arguments": {"url": "https://example.org"}},
                        {"id": "call_2", "function": "bash", "arguments": {"cmd": "x"},
                         "parse_error": "bad JSON"}]},
        {"id": "m3", "role": "tool", "tool_call_id": "call_1", "function": "web_browser_go",
         "content": "attachment://abc"},
        {"id": "m4", "role": "tool", "tool_call_id": "call_2", "function": "bash",
         "content": "", "error": {"type": "parsing", "message": "bad JSON"}},
        {"id": "m5", "role": "assistant", "content": "The title is Example Domain.",
         "source": "generate", "model": "demo"},
    ],
}
LOG = {"version": 2, "status": "success",
       "eval": {"task": "lookup", "model": "openai/demo"}, "samples": [SAMPLE]}


def test_spec_like_log():
    sessions, problems = run_document(inspect_eval, LOG)
    s = only(sessions)
    assert shape(s) == "S U A0[web_browser_go, bash] R0 R1! A1"
    assert s.id == "lookup:1:1"
    assert s.agent.name == "inspect_ai" and s.agent.version == "lookup"
    assert s.models == ("openai/demo", "demo")
    assert s.turns[0].thinking == "Go there."
    go, bash = s.calls
    assert go.arguments == {"url": "https://example.org"} and go.arguments_kind == "value"
    assert go.arguments_error is None
    assert bash.arguments_error == "bad JSON"
    assert s.events[3].text == "resolved text" and s.events[3].name == "web_browser_go"
    assert s.events[4].is_error and s.events[4].meta["error_type"] == "parsing"
    assert s.metadata["scores"] == {"includes": "C"} and s.metadata["status"] == "success"
    assert s.events[2].origin.pointer == "/samples/0/messages/2"
    assert not codes(problems, "warning")


def test_several_samples_and_unresolved_attachments():
    other = {**SAMPLE, "id": "b", "epoch": 2, "attachments": {},
             "messages": [{"role": "user", "content": "attachment://missing"}]}
    sessions, problems = run_document(inspect_eval, {**LOG, "samples": [SAMPLE, other]})
    assert [s.id for s in sessions if s] == ["lookup:1:1", "lookup:b:2"]
    assert sessions[1] is not None and sessions[1].events[0].text == "attachment://missing"
    assert "unresolved_attachment" in codes(problems, "info")


def test_header_only_log_yields_nothing():
    sessions, problems = run_document(
        inspect_eval, {"version": 2, "status": "started", "eval": {"task": "t"}})
    assert sessions == [] and not codes(problems, "error")


def test_eval_zip(tmp_path):
    path = tmp_path / "run.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({k: v for k, v in LOG.items()
                                                    if k != "samples"}))
        archive.writestr("samples/1_epoch_1.json", json.dumps(SAMPLE))
        archive.writestr("samples/2_epoch_1.json", "{not json")
    ctx = ImportContext(str(path), ImportLimits())
    sessions = list(inspect_eval.import_zip(str(path), ctx))
    assert sessions[0] is not None and sessions[0].id == "lookup:1:1"
    assert sessions[1] is None
    assert [p.code for _, p in ctx.problems if p.severity == "error"] == ["session_failed"]


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.corpus
def test_corpus_browser_log():
    imported = load_corpus("inspect-ai/2025-05-12T20-27-36-04-00_browser.json")
    assert imported.detection.format == "inspect_eval"
    s = only(imported.sessions)
    assert s.id == "browser:1:1"
    assert_counts(s, calls=4, turns=5, user=1, results=4, unanswered=0)
    assert [(c.name, c.arguments) for c in s.calls] == [
        ("web_browser_go", {"url": "https://www.aisi.gov.uk/"}),
        ("web_browser_click", {"element_id": 151}),
        ("web_browser_click", {"element_id": 884}),
        ("web_browser_click", {"element_id": 903}),
    ]
    assert not [p for p in imported.problems if p.severity != "info"]
