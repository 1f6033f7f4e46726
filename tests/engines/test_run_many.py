"""The batch path (``run_many``: one vectorised pass per configuration over a whole corpus)
and the prepared-data codec (worker processes, the on-disk cache) are proven equal to the
per-session fast path, which is itself proven equal to the reference replay."""

from __future__ import annotations

import random
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engines.gglib.test_gglib_properties import config as gglib_config
from tests.engines.gglib.test_gglib_properties import session as gglib_messages
from tests.engines.openclaw._openclaw_gen import random_block, random_session

from loopscope.engines import get_engine
from loopscope.engines.base import FirstRefusal, PreparedSessions, RunColumns
from loopscope.engines.gglib import GglibConfig
from loopscope.engines.openclaw import OpenClawConfig

OPENCLAW = get_engine("openclaw")
GGLIB = get_engine("gglib")


def assert_columns_equal(columns: RunColumns, singles: list[Any]) -> None:
    """Every column of ``columns`` says what the per-session replays say."""
    assert len(columns) == len(singles)
    for i, one in enumerate(singles):
        assert bool(columns.refused[i]) == one.refused, i
        assert int(columns.refusal_counts[i]) == one.refusal_count, i
        assert int(columns.warning_counts[i]) == one.warning_count, i
        assert bool(columns.warned[i]) == one.warned, i
        assert columns.first_refusal(i) == one.first_refusal, i
        assert columns[i] == one, i
    turn, call, detector, names = columns.first_refusal_columns()
    assert columns.first_refusals() == [
        None if t < 0 else FirstRefusal(t, None if c < 0 else c, names[d])
        for t, c, d in zip(turn.tolist(), call.tolist(), detector.tolist(), strict=True)]


def _openclaw_corpus(seed: int, n: int) -> tuple[list[Any], PreparedSessions]:
    rng = random.Random(seed)
    sessions = [random_session(rng) for _ in range(n)]
    return sessions, PreparedSessions(OPENCLAW.prepare(s) for s in sessions)


def _low_block(rng: random.Random) -> dict[str, Any]:
    block = random_block(rng)
    if rng.random() < 0.6:  # low thresholds: many flagged calls, every detector
        block["enabled"] = True
        block["warningThreshold"] = rng.randint(1, 4)
        block["criticalThreshold"] = block["warningThreshold"] + rng.randint(1, 3)
        block["globalCircuitBreakerThreshold"] = block["criticalThreshold"] + rng.randint(1, 4)
        block["unknownToolThreshold"] = rng.randint(1, 4)
        block["historySize"] = rng.randint(2, 12)
    return block


def test_openclaw_run_many_equals_run_on_random_corpora() -> None:
    rng = random.Random(31)
    sessions, prepared = _openclaw_corpus(7, 50)
    for _ in range(30):  # one prepared corpus serves every configuration, in any order
        config = OpenClawConfig.from_block(_low_block(rng))
        columns = OPENCLAW.run_many(prepared, config)
        assert_columns_equal(columns, [OPENCLAW.run(p, config) for p in prepared])
    config = OpenClawConfig.from_block(_low_block(rng))
    assert OPENCLAW.run_many(prepared, config)[3] == OPENCLAW.replay(sessions[3], config)


def test_openclaw_run_many_on_a_plain_list_and_an_empty_corpus() -> None:
    _, prepared = _openclaw_corpus(8, 5)
    config = OPENCLAW.default_config()
    assert_columns_equal(OPENCLAW.run_many(list(prepared), config),
                         [OPENCLAW.run(p, config) for p in prepared])
    assert len(OPENCLAW.run_many(PreparedSessions(), config)) == 0


def test_openclaw_codec_round_trip() -> None:
    rng = random.Random(5)
    sessions, prepared = _openclaw_corpus(9, 40)
    for session, p in zip(sessions, prepared, strict=True):
        data = orjson.loads(orjson.dumps(OPENCLAW.encode_prepared(p)))
        back = OPENCLAW.decode_prepared(data)
        assert OPENCLAW.encode_prepared(back) == data
        for _ in range(3):
            config = OpenClawConfig.from_block(_low_block(rng))
            assert OPENCLAW.run(back, config) == OPENCLAW.replay(session, config)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(gglib_messages(), min_size=1, max_size=6), st.lists(gglib_config(), min_size=1,
                                                                     max_size=4))
def test_gglib_run_many_equals_run(corpus: list[list[Any]], configs: list[GglibConfig]) -> None:
    prepared = PreparedSessions(GGLIB.prepare_messages(m, source=f"s{i}")
                                for i, m in enumerate(corpus))
    for config in configs:
        columns = GGLIB.run_many(prepared, config)
        assert_columns_equal(columns, [GGLIB.run(p, config) for p in prepared])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gglib_messages(), st.lists(gglib_config(), min_size=1, max_size=3))
def test_gglib_codec_round_trip(messages: list[Any], configs: list[GglibConfig]) -> None:
    p = GGLIB.prepare_messages(messages, source="x")
    data = orjson.loads(orjson.dumps(GGLIB.encode_prepared(p)))
    back = GGLIB.decode_prepared(data)
    assert GGLIB.encode_prepared(back) == data
    for config in configs:
        assert GGLIB.run(back, config) == GGLIB.run(p, config)


def test_decoding_refuses_damaged_data() -> None:
    _, prepared = _openclaw_corpus(10, 3)
    good = OPENCLAW.encode_prepared(prepared[0])
    assert good is not None and good["args_code"]
    for damage in ({"args_code": [999] * len(good["args_code"])}, {"turn": "x"},
                   {"session": 3}, {"ops": [-7]}):
        try:
            OPENCLAW.decode_prepared({**good, **damage})
        except ValueError:
            continue
        raise AssertionError(f"accepted {damage}")
    for bad in (None, [], {"session": "s", "source": "s", "format": "f", "messages": {}}):
        try:
            GGLIB.decode_prepared(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_plugin_without_run_many_uses_the_generic_path() -> None:
    from loopscope.engines.contract import BaseEngine

    class Plain(BaseEngine[Any, Any]):  # a plug-in that writes run only: BaseEngine's batch
        name = "plain"

        def run(self, prepared: Any, config: Any) -> Any:
            return OPENCLAW.run(prepared, config)

    _, prepared = _openclaw_corpus(11, 8)
    config = OpenClawConfig.from_block({"enabled": True, "warningThreshold": 2,
                                        "criticalThreshold": 3})
    assert_columns_equal(Plain().run_many(prepared, config),
                         [OPENCLAW.run(p, config) for p in prepared])


def _session_engine_corpus(name: str, seed: int, n: int) -> tuple[Any, list[Any], Any]:
    """``name``'s engine, ``n`` random sessions prepared, and their table (joined from two
    parts, read back as the cache reads it: validated)."""
    if name == "gemini-cli":
        from tests.engines.gemini_cli._gemini_gen import random_session
    else:
        from tests.engines.openhands._openhands_gen import random_session
    eng = get_engine(name)
    rng = random.Random(seed)
    prepared = [eng.prepare(random_session(rng)) for _ in range(n)]
    spec = eng.table_spec()
    assert spec is not None and not spec.keep_all  # columns of its own
    cut = n // 3
    joined = spec.join([dict(spec.encode(prepared[:cut])), dict(spec.encode(prepared[cut:]))])
    return eng, prepared, spec.open(joined.columns)


def test_gemini_cli_run_many_equals_run_on_tables_and_lists() -> None:
    """The vectorised pass (a tool-call threshold under Gemini CLI's own content constants,
    or detection off) and the walk of the stretches that could loop (a content what-if) both
    equal ``run`` for every session, on a table, a list that keeps derived data and a plain
    list."""
    from tests.engines.gemini_cli._gemini_gen import random_config

    from loopscope.engines.gemini_cli import columns as gemini_columns
    from loopscope.engines.gemini_cli.config import GeminiConfig

    eng, prepared, table = _session_engine_corpus("gemini-cli", 13, 60)
    rng = random.Random(17)
    own = [GeminiConfig(tool_call_loop_threshold=t) for t in (1, 2, 3, 5, 9)]
    own.append(GeminiConfig(enabled=False))
    what_ifs = [random_config(rng) for _ in range(30)]
    what_ifs = [c for c in what_ifs if c.content_constants != own[0].content_constants][:8]
    assert len(what_ifs) == 8
    for config in own + what_ifs:
        singles = [eng.run(p, config) for p in prepared]
        assert_columns_equal(eng.run_many(table, config), singles)
        assert_columns_equal(eng.run_many(PreparedSessions(prepared), config), singles)
        assert_columns_equal(eng.run_many(prepared, config), singles)
    # Neither pass decodes a session (assert_columns_equal read them all): a what-if walks the
    # table's text.
    assert "every session decoded" not in table.derived
    fresh = eng.table_spec().open(dict(table.columns))
    counts = eng.run_many(fresh, what_ifs[0]).refusal_counts
    assert counts.tolist() == [eng.run(p, what_ifs[0]).refusal_count for p in prepared]
    assert not fresh._decoded and not fresh.derived.get("every session decoded")
    # Some sessions are refused by each detector at a low threshold (the test can fail).
    low = eng.run_many(table, GeminiConfig(tool_call_loop_threshold=2))
    assert {low.first_refusal(i).detector for i in range(len(low))
            if low.first_refusal(i) is not None} == set(gemini_columns.DETECTORS)


def test_openhands_run_many_equals_run_on_tables_and_lists() -> None:
    """Every check at once with plain windows, the sessions that nudge one by one: equal to
    ``run`` for every session, on a table, a list that keeps derived data and a plain list,
    for random thresholds and scanned windows."""
    from tests.engines.openhands._openhands_gen import random_config

    from loopscope.engines.openhands import columns as openhands_columns
    from loopscope.engines.openhands.config import OpenHandsConfig

    eng, prepared, table = _session_engine_corpus("openhands", 23, 80)
    rng = random.Random(29)
    configs = [OpenHandsConfig(), OpenHandsConfig(enabled=False),
               # beyond any 32-bit count (and the arithmetic on them): nothing can hold
               OpenHandsConfig(action_observation=10**12, action_error=2**31 - 1,
                               monologue=2**31, alternating_pattern=10**30,
                               max_events=10**15),
               OpenHandsConfig(action_error=2, max_events=2**63 + 5)]
    configs += [random_config(rng, what_if=rng.random() < 0.5) for _ in range(40)]
    nudging = 0
    detectors: set[str] = set()
    kept = PreparedSessions(prepared)
    for config in configs:
        singles = [eng.run(p, config) for p in prepared]
        assert_columns_equal(eng.run_many(table, config), singles)
        assert_columns_equal(eng.run_many(kept, config), singles)
        assert_columns_equal(eng.run_many(prepared, config), singles)
        nudging += sum(r.warned for r in singles)
        detectors |= {r.first_refusal.detector for r in singles if r.first_refusal}
    # Both paths taken, every detector seen first (the test can fail).
    assert nudging and detectors == set(openhands_columns.DETECTORS)


def test_openhands_a_nudge_is_not_a_refusal_in_the_batch_either() -> None:
    """Three identical failing calls with ``action_error = action_observation = 3``: the plain
    window would read a refusal (three identical call + result pairs) at the third, but
    OpenHands nudges there instead, and nothing follows: warned, never refused."""
    from loopscope.engines.openhands.config import OpenHandsConfig
    from loopscope.formats.builder import SessionBuilder

    eng = get_engine("openhands")
    b = SessionBuilder()
    b.user("Fix the build.")
    for k in range(3):
        turn = b.assistant("", "")
        b.call(turn, "bash", {"command": "make"}, "value", id=f"c{k}")
        b.result(f"c{k}", "Permission denied", "Permission denied", is_error=True)
    prepared = PreparedSessions([eng.prepare(b.build(id="nudged", source="s.json",
                                                     format="openai_chat"))])
    config = OpenHandsConfig(action_observation=3, action_error=3)
    single = eng.run(prepared[0], config)
    assert single.warned and not single.refused  # (what the batch must say too)
    assert_columns_equal(eng.run_many(prepared, config), [single])


_NAMED_COLUMNS = '''
def run_many(engine, prepared, config):
    return None if "plain" in prepared else ("columns of", tuple(prepared), config.limit)

def table_spec(engine, version):
    return ("table of", engine.name, version)
'''


class _LimitConfig:
    """A configuration that keeps the values convention (``from_values``, ``notes``,
    ``values()``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.notes = (f"limit {limit}",) if limit > 3 else ()

    @classmethod
    def from_values(cls, values: Any) -> _LimitConfig:
        return cls(values["limit"])

    def values(self) -> dict[str, Any]:
        return {"limit": self.limit}


def test_base_engine_runs_the_named_columns_module_and_config_type(
        tmp_path: Any, monkeypatch: Any) -> None:
    """An engine that names its columns module and its configuration class gets ``run_many``,
    ``table_spec``, ``build_config`` and ``config_values`` from :class:`BaseEngine`: the
    module's vectorised pass where it lays the corpus out, else one session at a time."""
    from loopscope.engines.base import SessionReplay
    from loopscope.engines.contract import BaseEngine, SettingSpec

    (tmp_path / "named_columns_for_test.py").write_text(_NAMED_COLUMNS)
    monkeypatch.syspath_prepend(str(tmp_path))

    class Named(BaseEngine[_LimitConfig, str]):
        name = "named"
        schema = (SettingSpec("limit", "Limit", "int", 2, "A limit."),)
        config_type = _LimitConfig
        columns_module = "named_columns_for_test"

        def run(self, prepared: str, config: _LimitConfig) -> SessionReplay:
            return SessionReplay(prepared, prepared, "f", self.name, (), None)

    engine = Named()
    resolution = engine.config({"limit": 5})
    assert resolution.config.limit == 5 and resolution.warnings == ("limit 5",)
    assert engine.values(resolution.config) == {"limit": 5}
    assert engine.default_config().limit == 2
    assert engine.run_many(["a", "b"], resolution.config) == ("columns of", ("a", "b"), 5)
    plain = engine.run_many(["plain", "x"], resolution.config)
    assert [r.session for r in plain] == ["plain", "x"]
    assert engine.table_spec() == ("table of", "named", None)
