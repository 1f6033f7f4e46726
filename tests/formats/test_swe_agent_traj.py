"""swe_agent_traj: text-command calls, demonstrations, structure pairing."""

from __future__ import annotations

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    load_corpus,
    longest_identical_run,
    only,
    run_document,
    shape,
)

from loopscope.formats import swe_agent_traj
from loopscope.formats.swe_agent_traj import split_action

SPEC = {
    "environment": "swe_main",
    "history": [{"role": "system", "content": "You are an autonomous programmer."},
                {"role": "user", "content": "Fix the failing import in app.py."}],
    "trajectory": [
        {"action": "open app.py\n", "observation": "[File: app.py (3 lines total)]",
         "response": "Let me look.\n\n```\nopen app.py\n```", "thought": "Let me look.",
         "state": "{}"},
        {"action": "edit 1:1\nimport os\nend_of_edit\n", "observation": "File updated.",
         "response": "…", "thought": "Fix line 1.", "state": "{}"},
        {"action": "submit\n", "observation": "diff --git a/app.py b/app.py", "response": "…",
         "thought": "Done.", "state": "{}"},
    ],
    "info": {"exit_status": "submitted", "model_stats": {"api_calls": 3}},
}


def test_spec_example():
    s = only(run_document(swe_agent_traj, SPEC)[0])
    assert shape(s) == "S U A0[open] R0 A1[edit] R1 A2[submit] R2"
    assert [c.arguments for c in s.calls] == ["app.py", "1:1\nimport os\nend_of_edit", ""]
    assert all(c.arguments_kind == "free_text" for c in s.calls)
    assert [c.id for c in s.calls] == ["ls-0", "ls-1", "ls-2"]
    assert all(c.id_synthetic for c in s.calls)
    r = s.events[3]
    assert r.call_id == "ls-0" and r.paired_by == "structure"
    assert r.text == "[File: app.py (3 lines total)]" and r.meta["state"] == "{}"
    assert s.turns[0].text == "Let me look."
    assert s.title == "Fix the failing import in app.py."
    assert s.agent.name == "SWE-agent"
    assert s.metadata == {"exit_status": "submitted", "api_calls": 3, "environment": "swe_main"}
    # free text reaches the gglib engine as the JSON encoding of the string
    assert s.chat_view()[2]["tool_calls"][0]["function"]["arguments"] == '"app.py"'


@pytest.mark.parametrize(("action", "name", "arguments"), [
    ("open app.py\n", "open", "app.py"),
    ("submit", "submit", ""),
    ("  find_file \t \"x.py\"  \n", "find_file", '"x.py"'),
    ("edit 287:295\n    a = 1\nend_of_edit\n", "edit", "287:295\n    a = 1\nend_of_edit"),
    ("python\n-c 1", "python", "\n-c 1"),
    ("echo 123", "echo", "123"),
])
def test_split_action(action, name, arguments):
    assert split_action(action) == (name, arguments)


def test_arguments_are_never_json_parsed_and_blank_actions_are_prose_turns():
    doc = {"history": [{"role": "user", "content": "demo", "is_demo": True},
                       {"role": "user", "content": "demo 2", "message_type": "demonstration"},
                       {"role": "user", "content": "real task\nmore"}],
           "trajectory": [{"action": "echo 123", "observation": "123", "thought": "t"},
                          {"action": "  \n", "observation": "", "thought": "thinking"}]}
    s = only(run_document(swe_agent_traj, doc)[0])
    assert shape(s) == "U A0[echo] R0 A1"
    assert s.events[0].text == "real task\nmore" and s.title == "real task"
    assert s.calls[0].arguments == "123"


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.parametrize(("relative", "calls", "run"), [
    ("swe-agent-demonstrations/ctf_crypto_eps.traj", 14, (4, 9, "submit")),
    ("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj", 5, (1, 0, "find_file")),
    ("swe-agent/pydicom__pydicom-1458.traj", 12, (2, 6, "edit")),
    ("swe-agent/swe-agent__test-repo-i1.traj", 5, (1, 0, "find_file")),
])
@pytest.mark.corpus
def test_corpus_counts(relative, calls, run):
    imported = load_corpus(relative)
    assert imported.detection.format == "swe_agent_traj"
    s = only(imported.sessions)
    assert_counts(s, calls=calls, turns=calls, user=1, results=calls, unanswered=0)
    assert longest_identical_run(s) == run
    assert not [p for p in imported.problems if p.severity != "info"]


@pytest.mark.corpus
def test_corpus_spot_checks():
    s = only(load_corpus("swe-agent/swe-agent__test-repo-i1.traj").sessions)
    assert s.calls[2].name == "edit" and s.calls[2].arguments_kind == "free_text"
    assert s.calls[2].arguments == "4:4\ndef division(a: float, b: float) -> float:\nend_of_edit"
    assert s.calls[4].name == "submit" and s.calls[4].arguments == ""
    fc = only(load_corpus("swe-agent/6e44b9__sweagenttestrepo-1c2844.traj").sessions)
    assert fc.calls[0].name == "find_file" and fc.calls[0].arguments == "missing_colon.py"
    demo = only(load_corpus("swe-agent-demonstrations/ctf_crypto_eps.traj").sessions)
    assert demo.metadata["api_calls"] == 0
