"""Differential test against the real implementation, ``openhands-sdk==1.58.2``.

The SDK needs Python >= 3.12 and loopscope never imports it: ``openhands_bridge.py`` runs under
``LOOPSCOPE_OPENHANDS_PYTHON`` (a virtual environment's python with the SDK installed, for
example ``python3.12 -m venv /tmp/oh && /tmp/oh/bin/pip install openhands-sdk==1.58.2``). The
test sends it the event log loopscope's reference builds for each session — with every call's
raw argument text, so the SDK's own ``parse_tool_call_arguments`` and ``Agent._get_action_event``
decide what the action is — and the SDK's ``LocalConversation._check_stuck_or_nudge`` gives the
verdict after every turn. Every check is compared: verdict, detector, count, the nudge text and
the window size; and every call's parsed arguments (or error text).

Cases: seeded random sessions under random thresholds (including 1, 2 and values beyond the
window, and the scanned-window what-if), and every session of the public parity set under every
parity configuration. Skips cleanly without ``LOOPSCOPE_OPENHANDS_PYTHON``.
``LOOPSCOPE_ORACLE_SESSIONS`` changes the number of random sessions (default 300).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.engines.openhands._openhands_gen import random_config, random_session
from tests.engines.openhands._openhands_helpers import CORPUS, PARITY, config_of, load_sessions

from loopscope.engines.openhands import ENGINE, OpenHandsConfig
from loopscope.engines.openhands.events import (
    ActionEvent,
    AgentErrorEvent,
    Check,
    Condensation,
    MessageEvent,
    ObservationEvent,
    build_items,
    malformed_error,
    parse_arguments,
)
from loopscope.model import Session

pytestmark = pytest.mark.oracle

BRIDGE = Path(__file__).with_name("openhands_bridge.py")
SESSIONS = int(os.environ.get("LOOPSCOPE_ORACLE_SESSIONS", "300"))


def _python() -> str:
    python = os.environ.get("LOOPSCOPE_OPENHANDS_PYTHON")
    if not python:
        pytest.skip("LOOPSCOPE_OPENHANDS_PYTHON is not set")
    if not Path(python).exists():
        pytest.skip(f"{python} does not exist")
    return python


def run_bridge(cases: list[dict[str, Any]], snippets: Sequence[str] = ()) -> dict[str, Any]:
    completed = subprocess.run(
        [_python(), str(BRIDGE)],
        input=json.dumps({"cases": cases, "snippets": list(snippets)}),
        capture_output=True, text=True, timeout=1200, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    answer: dict[str, Any] = json.loads(completed.stdout)
    assert answer["sdk"] == "1.58.2"
    assert len(answer["results"]) == len(cases)
    return answer


def session_items(session: Session) -> tuple[list[list[Any]], list[dict[str, str]]]:
    """The log loopscope builds for ``session``, as bridge items (raw argument texts instead of
    parsed actions; the corrective message and the error of a call that did not parse are left
    to the SDK), and loopscope's own parse of each call."""
    texts: list[str] = []

    def parse(text: str) -> Any:
        texts.append(text)
        return parse_arguments(text)

    items: list[list[Any]] = []
    parsed: list[dict[str, str]] = []
    skip_error = False
    for item in build_items(session, parse):
        if isinstance(item, Check):
            items.append(["check"])
        elif isinstance(item, ActionEvent):
            text = texts[len(parsed)]
            items.append(["action", item.tool_name, list(item.thought), text])
            outcome = parse_arguments(text)
            if outcome.data is None:
                assert outcome.error is not None
                parsed.append({"error": malformed_error(item.tool_name, outcome.error)})
            else:
                parsed.append({"data": json.dumps(outcome.data)})
            skip_error = item.action is None
            continue
        elif isinstance(item, AgentErrorEvent):
            if not skip_error:
                items.append(["error", item.tool_name, item.error])
        elif isinstance(item, ObservationEvent):
            items.append(["observation", item.tool_name, item.text])
        elif isinstance(item, MessageEvent):
            if item.source == "user":
                items.append(["user", item.text])
            elif item.source == "agent":
                items.append(["reply", item.text])
            # environment: OpenHands' corrective message, written by the SDK itself
        else:
            assert isinstance(item, Condensation)
            items.append(["condensation"])
        skip_error = False
    return items, parsed


def _case(session: Session, config: OpenHandsConfig) -> dict[str, Any]:
    items, _ = session_items(session)
    return {"config": {"enabled": config.enabled, **config.thresholds(),
                       "max_events": config.max_events}, "items": items}


def _compare(session: Session, config: OpenHandsConfig, sdk: dict[str, Any],
             tally: Counter[str]) -> int:
    """Both replay paths against the SDK's checks and parses; returns the checks compared."""
    plain = ENGINE.replay(session, config)
    fast = ENGINE.run(ENGINE.prepare(session), config)
    assert fast.to_json() == plain.to_json(), f"{session.id}: fast path differs"
    _, parsed = session_items(session)
    assert parsed == sdk["parsed"], f"{session.id}: parsed arguments differ"
    checks = sdk["checks"]
    assert len(checks) == len(plain.steps), session.id
    for step, want in zip(plain.steps, checks, strict=True):
        where = f"{session.id} turn {step.turn} under {config}"
        got = {"verdict": step.verdict, "detector": step.detector, "count": step.count,
               "message": step.extra.get("message"), "scan": step.extra.get("scan")}
        assert got == want, where
        tally[f"{step.verdict}:{step.detector}"] += 1
    return len(checks)


def _random_cases() -> list[tuple[Session, OpenHandsConfig]]:
    rng = random.Random(158_2)
    cases: list[tuple[Session, OpenHandsConfig]] = []
    for n in range(SESSIONS):
        session = random_session(rng, turns=rng.randint(3, 60) if n % 10 else 120,
                                 sid=f"oracle-{n}")
        for _ in range(2):
            cases.append((session, random_config(rng, what_if=n % 5 == 0)))
    return cases


def _parity_cases() -> list[tuple[Session, OpenHandsConfig]]:
    if not PARITY.is_dir():
        return []
    configs = json.loads((PARITY / "configs.json").read_text())["configs"]
    rng = random.Random(7)
    cases: list[tuple[Session, OpenHandsConfig]] = []
    for session in load_sessions().values():
        for config in configs:
            cases.append((session, config_of(config)))
        for _ in range(3):  # fresh thresholds as well
            cases.append((session, random_config(rng)))
    return cases


def _corpus_cases() -> list[tuple[Session, OpenHandsConfig]]:
    """The real recorded sessions of ``../shared/corpus`` (when present) under the defaults
    and two stricter settings."""
    from loopscope.formats import load_file

    if not CORPUS.is_dir():
        return []
    configs = (OpenHandsConfig(), OpenHandsConfig(True, 2, 1, 2, 4, 20),
               OpenHandsConfig(True, 3, 2, 2, 3, 12))
    cases: list[tuple[Session, OpenHandsConfig]] = []
    for path in sorted(CORPUS.rglob("*")):
        if path.is_file() and path.name != "SOURCES.md":
            for session in load_file(str(path)).sessions:
                cases.extend((session, config) for config in configs)
    return cases


def _nan_session() -> Session:
    from loopscope.formats.builder import SessionBuilder

    builder = SessionBuilder()
    builder.user("go")
    for k in range(4):
        turn = builder.assistant("", "")
        builder.call(turn, "read", '{"a": NaN, "b": [NaN]}', "json_text", id=f"c{k}")
        builder.result(f"c{k}", "same", "same")
    return builder.build(id="nan", source="nan.json", format="openai_chat")


TYPOS_CASE: dict[str, Any] = {
    "config": {"enabled": True, **OpenHandsConfig().thresholds(), "max_events": 20},
    "items": [["action", "t", [], '{"security_rort": 1, "securtiy_risk": 2}'], ["check"]]}


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    """Every case of this module through one bridge process (importing the SDK takes
    seconds)."""
    _python()
    random_cases = _random_cases()
    parity_cases = _parity_cases()
    corpus_cases = _corpus_cases()
    nan = (_nan_session(), OpenHandsConfig())
    cases = [_case(s, c) for s, c in (*random_cases, *parity_cases, *corpus_cases, nan)]
    answer = run_bridge([*cases, TYPOS_CASE], [ENGINE.exports(c)[0].text for c in EXPORTED])
    results = answer["results"]
    k = len(random_cases)
    m = k + len(parity_cases)
    c = m + len(corpus_cases)
    return {"random": (random_cases, results[:k]), "parity": (parity_cases, results[k:m]),
            "corpus": (corpus_cases, results[m:c]), "nan": (nan, results[c]),
            "typos": results[c + 1], "snippets": answer["snippets"]}


EXPORTED = (OpenHandsConfig(), OpenHandsConfig(False, 7, 1, 12, 2, 20),
            OpenHandsConfig(True, 1, 9, 2, 30, 35))
"""Configurations whose Python export is executed with the SDK (the last one with a what-if,
which the export leaves out)."""


def test_the_python_export_configures_the_sdk(oracle: dict[str, Any]) -> None:
    for config, got in zip(EXPORTED, oracle["snippets"], strict=True):
        assert got["thresholds"] == config.thresholds()
        assert got["stuck_detection"] is config.enabled
        assert got["detector_thresholds"] == (config.thresholds() if config.enabled else None)


def test_random_sessions_match_the_sdk(oracle: dict[str, Any]) -> None:
    cases, sdk = oracle["random"]
    tally: Counter[str] = Counter()
    checks = sum(_compare(s, c, r, tally) for (s, c), r in zip(cases, sdk, strict=True))
    for key in ("refuse:action_observation", "refuse:action_error", "warn:action_error",
                "refuse:monologue", "refuse:alternating_pattern", "pass:None"):
        assert tally[key] > 0, f"the generator never produced {key}: {tally}"
    print(f"oracle: {len(cases)} session x config cases, {checks} checks, {dict(tally)}")


def test_parity_sessions_match_the_sdk(oracle: dict[str, Any]) -> None:
    cases, sdk = oracle["parity"]
    if not cases:
        pytest.skip("parity set absent")
    tally: Counter[str] = Counter()
    checks = sum(_compare(s, c, r, tally) for (s, c), r in zip(cases, sdk, strict=True))
    print(f"oracle (parity sessions): {len(cases)} cases, {checks} checks, {dict(tally)}")


def test_recorded_sessions_match_the_sdk(oracle: dict[str, Any]) -> None:
    cases, sdk = oracle["corpus"]
    if not cases:
        pytest.skip(f"corpus absent at {CORPUS}")
    tally: Counter[str] = Counter()
    checks = sum(_compare(s, c, r, tally) for (s, c), r in zip(cases, sdk, strict=True))
    print(f"oracle (recorded corpus): {len(cases)} cases, {checks} checks, {dict(tally)}")


def test_the_sdk_settles_nan_equality_and_typo_renames(oracle: dict[str, Any]) -> None:
    """Two behaviours checked on the real SDK, where a plain reading of the rules differs:

    * a parsed ``NaN`` equals every other parsed ``NaN`` (``json.loads`` returns one shared
      NaN object and container comparisons test identity first), so four identical calls with
      ``{"a": NaN}`` and the same result stop the run like any other repeat;
    * with several security-risk typos in one call only the first one found is renamed (the
      others stay), and which one that is depends on the process's string hashing.
    """
    (session, config), nan_sdk = oracle["nan"]
    assert [c["verdict"] for c in nan_sdk["checks"]] == ["pass", "pass", "pass", "refuse"]
    assert nan_sdk["checks"][3]["detector"] == "action_observation"
    _compare(session, config, nan_sdk, Counter())
    data = json.loads(oracle["typos"]["parsed"][0]["data"])
    assert "security_risk" in data and len(data) == 2
    assert {"security_rort", "securtiy_risk"} & set(data) and data["security_risk"] in (1, 2)
