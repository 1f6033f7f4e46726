"""Explanations: plain sentences for both detectors and both interventions, Gemini CLI's exact
recovery message, structural hints, the LLM-check note, limitations, and the Guide's worked
examples (each replayed: the detector fires where its text says)."""

from __future__ import annotations

import re

from loopscope.engines.contract import Explainer
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.engine import ENGINE
from loopscope.engines.gemini_cli.explain import cycle_hint, feedback_text
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session

LLM = "LLM loop check is not replayed"
FEEDBACK_START = "System: Potential loop detected. Details: "


def build(*turns: object) -> Session:
    b = SessionBuilder()
    b.user("fix the build")
    n = 0
    for turn in turns:
        if isinstance(turn, str):
            b.assistant(turn)
            continue
        draft = b.assistant("")
        for name, args in turn:  # type: ignore[attr-defined]
            n += 1
            b.call(draft, name, args, "json_text", id=f"c{n}")
    return b.build(id="x", source="x.json", format="openai_chat")


def explain(session: Session, config: GeminiConfig | None = None) -> list[object]:
    config = config or GeminiConfig()
    replay = ENGINE.run(ENGINE.prepare(session), config)
    return [ENGINE.explainer.explain_step(s, replay, config) for s in replay.steps]


def test_explainer_follows_the_contract() -> None:
    assert isinstance(ENGINE.explainer, Explainer)


def test_feedback_text_is_gemini_clis() -> None:
    assert feedback_text(None) == (
        "System: Potential loop detected. Details: Repetitive patterns identified. Please take a "
        "step back and confirm you're making forward progress. If not, take a step back, analyze "
        "your previous actions and rethink how you're approaching the problem. Avoid repeating "
        "the same tool calls or responses without new results.")
    assert feedback_text("Repeated tool call: x with arguments {}").startswith(
        FEEDBACK_START + "Repeated tool call: x with arguments {}. Please take")


def test_tool_call_recovery_then_halt() -> None:
    session = build(*[[("read_file", '{"path":"a"}')] for _ in range(6)])
    explained = explain(session)
    passing, recovery, halt = explained[3], explained[4], explained[5]
    assert passing.headline == "Gemini CLI would have let this call of `read_file` through."
    assert "4th identical call in a row" in passing.text
    assert recovery.headline.startswith("Gemini CLI would not have run this call of `read_file`")
    assert "5th identical call" in recovery.text and "began at call 1 (turn 1)" in recovery.text
    assert recovery.guard_action is not None and "asked it again" in recovery.guard_action
    title, message = recovery.upstream[0]
    assert title == "Gemini CLI's message to the model"
    assert message == feedback_text(
        'Repeated tool call: read_file with arguments {"path":"a"}')
    assert "TOOL_CALL_LOOP_THRESHOLD" in (recovery.which_limit or "")
    assert recovery.levers == ("enabled",)
    assert halt.headline.startswith("Gemini CLI would have stopped this request (second loop in "
                                    "the same prompt)")
    assert halt.upstream[0][1] == "Loop detected, stopping execution"
    for e in (recovery, halt):
        assert [lim.id for lim in e.limitations] == ["llm_check"]
        assert LLM in e.limitations[0].text
    assert passing.limitations == ()


def test_cycle_hint_names_the_cycle_and_where_it_began() -> None:
    a, b = ("read_file", '{"p":1}'), ("run_shell_command", '{"c":"make"}')
    session = build([("glob", "{}")], *[[a] if i % 2 == 0 else [b] for i in range(10)])
    replay = ENGINE.replay(session, GeminiConfig())
    assert replay.first_refusal is not None and replay.first_refusal.call == 10
    hint = cycle_hint(replay.steps, 10, 5)
    assert hint is not None
    assert (hint.length, hint.tools, hint.repeats, hint.start_call) == (
        2, ("read_file", "run_shell_command"), 5, 1)
    text = ENGINE.explainer.explain_step(replay.steps[10], replay, GeminiConfig()).text
    assert "5th repetition in a row of a 2-call cycle (`read_file`, `run_shell_command`)" in text
    assert "began at call 2 (turn 2)" in text


def test_content_explanation_shows_the_window_and_its_period() -> None:
    chant = "Let me check the file again. "  # 29 characters
    session = build(chant * 12, "And again.")
    explained = explain(session)
    first = explained[0]
    assert first.headline.startswith("Gemini CLI would not have shown this text")
    assert re.search(r"The same 50-character stretch `.{50}` came back 10 times", first.text)
    # (a trailing space is kept inside the code span by padding it)
    assert "repeats every 29 characters: ` Let me check the file again.  `" in first.text
    assert "CONTENT_LOOP_THRESHOLD" in (first.which_limit or "")
    assert first.upstream[0][1].startswith(FEEDBACK_START + "Repeating content detected: ")
    second = explained[1]
    assert "second loop in the same prompt" in second.headline
    # Without the prepared session (a reference replay never prepared) Gemini CLI's quote is
    # shown instead.
    other = build(chant * 13)
    replay = ENGINE.replay(other, GeminiConfig())
    text = ENGINE.explainer.explain_step(replay.steps[0], replay, GeminiConfig()).text
    assert "quoted the text around the repeat: `Repeating content detected:" in text


def test_recorded_text_cannot_break_out_of_its_code_span() -> None:
    hostile = "x` ![img](https://attacker.invalid/a.png) `"
    session = build(*[[(hostile, "{}")] for _ in range(5)])
    explained = explain(session)
    text = explained[4].text
    assert "of `` x` ![img](https://attacker.invalid/a.png) ` ``:" in text


def test_disabled_and_empty_steps() -> None:
    session = build(*[[("t", "{}")] for _ in range(5)], "")
    explained = explain(session, GeminiConfig(enabled=False))
    assert all(e.headline.startswith("Gemini CLI would have let") for e in explained[:5])
    assert "model.disableLoopDetection: true" in explained[4].text
    assert explained[5].headline.startswith("This reply has no text")


def test_what_if_limits_say_they_are_hypothetical() -> None:
    session = build(*[[("t", "{}")] for _ in range(3)])
    config = GeminiConfig(tool_call_loop_threshold=3)
    explained = explain(session, config)
    assert "TOOL_CALL_LOOP_THRESHOLD=3 is hypothetical" in (explained[2].which_limit or "")


def test_limitations() -> None:
    session = build(*[[("t", "{}")] for _ in range(6)])
    replay = ENGINE.run(ENGINE.prepare(session), GeminiConfig())
    ids = [lim.id for lim in ENGINE.explainer.limitations(session, replay, GeminiConfig())]
    assert "llm_check_due" not in ids
    assert {"shadow_after_stop", "recovery_then_halt", "results_ignored"} <= set(ids)
    long = build(*[[("t", f'{{"n":{i}}}')] for i in range(31)])
    replay = ENGINE.run(ENGINE.prepare(long), GeminiConfig())
    lims = ENGINE.explainer.limitations(long, replay, GeminiConfig())
    assert any(lim.id == "llm_check_due" and "31 model turns" in lim.text for lim in lims)
    explained = [ENGINE.explainer.explain_step(s, replay, GeminiConfig()) for s in replay.steps]
    assert [e.limitations[0].id if e.limitations else None for e in explained[28:]] == [
        None, "llm_check_due_here", "llm_check_due_here"]
    assert "30th model turn of its prompt" in explained[29].limitations[0].text
    fenced = build("```\nunclosed code\n")
    replay = ENGINE.run(ENGINE.prepare(fenced), GeminiConfig())
    ids = [lim.id for lim in ENGINE.explainer.limitations(fenced, replay, GeminiConfig())]
    assert "open_code_block" in ids
    b = SessionBuilder()
    b.user("go")
    b.assistant("working")
    b.user("Please continue.")
    own = b.build(id="o", source="o.json", format="openai_chat")
    replay_own = ENGINE.replay(own, GeminiConfig())
    ids = [lim.id for lim in ENGINE.explainer.limitations(own, replay_own, GeminiConfig())]
    assert "own_messages_as_prompts" in ids
    hypothetical = GeminiConfig(content_chunk_size=20)
    lims = ENGINE.explainer.limitations(None, replay, hypothetical)
    assert any(lim.id == "hypothetical" and "CONTENT_CHUNK_SIZE=20" in lim.text for lim in lims)


def test_notes_mention_the_llm_check() -> None:
    assert ENGINE.notes == ("Gemini CLI's LLM loop check is not replayed (it needs a live model); "
                            "a real Gemini CLI run could also stop on it after 30 turns in one "
                            "prompt.",)


def test_guide_examples_fire_where_they_say() -> None:
    examples = ENGINE.guide_examples()
    assert {e.detector for e in examples} == {d.id for d in ENGINE.detectors}
    found = {}
    for example in examples:
        config = ENGINE.config(example.values).config
        replay = ENGINE.replay(example.session, config)
        assert ENGINE.run(ENGINE.prepare(example.session), config) == replay
        refusals = [(s.turn, s.call, s.detector, s.extra["intervention"])
                    for s in replay.steps if s.verdict == "refuse"]
        found[example.title] = refusals
        first = refusals[0]
        assert first[2] == example.detector
        where = f"turn {first[0]}" if first[1] is None else f"call {first[1]}"
        assert where in example.story, (example.title, where, example.story)
    assert found["The same tool call again and again"] == [
        (4, 4, "consecutive_identical_tool_calls", "recovery")]
    assert found["Text that keeps repeating"] == [(0, None, "chanting_identical_sentences",
                                                   "recovery")]
    assert found["A warning first, then a stop"] == [
        (4, 4, "consecutive_identical_tool_calls", "recovery"),
        (5, 5, "consecutive_identical_tool_calls", "halt")]
