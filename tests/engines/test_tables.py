"""Prepared sessions as one table of columns (``engine.table_spec``): every session decoded
from a table is the session prepared (its JSON codec writing, and every replay), tables joined
from parts equal the table of the whole, the vectorised counts of a new window equal the
per-session counts, and damaged columns are refused."""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engines.gglib.test_gglib_properties import config as gglib_config
from tests.engines.gglib.test_gglib_properties import session as gglib_messages
from tests.engines.openclaw._openclaw_gen import random_session
from tests.engines.test_run_many import _low_block

from loopscope.engines import get_engine
from loopscope.engines.gglib import columns as gglib_columns
from loopscope.engines.openclaw import OpenClawConfig
from loopscope.engines.openclaw.v2026_6 import columns as openclaw_columns
from loopscope.engines.openclaw.v2026_6.config import DEFAULT_HISTORY_SIZE
from loopscope.engines.openclaw.v2026_6.fast import _compute_counters
from loopscope.engines.table import (
    PreparedTable,
    StringPool,
    TableError,
    concat,
    first_of_each,
    pool_schema,
    unique_codes,
    validate,
)

OPENCLAW = get_engine("openclaw")
GGLIB = get_engine("gglib")


def _openclaw_prepared(seed: int, n: int) -> tuple[list[Any], list[Any]]:
    rng = random.Random(seed)
    sessions = [random_session(rng, calls=rng.randint(0, 60)) for _ in range(n)]
    return sessions, [OPENCLAW.prepare(s) for s in sessions]


def _same_columns(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert set(a) == set(b)
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        assert np.array_equal(a[name], b[name]), name


def test_openclaw_table_rows_are_the_prepared_sessions() -> None:
    rng = random.Random(3)
    sessions, prepared = _openclaw_prepared(21, 40)
    spec = OPENCLAW.table_spec()
    assert spec is not None
    table = spec.table(prepared)
    assert len(table) == len(prepared)
    for i, (session, p) in enumerate(zip(sessions, prepared, strict=True)):
        back = table[i]
        assert OPENCLAW.encode_prepared(back) == OPENCLAW.encode_prepared(p), i
        for _ in range(3):
            config = OpenClawConfig.from_block(_low_block(rng))
            assert OPENCLAW.run(back, config) == OPENCLAW.replay(session, config), i
    # A table read back from its columns (as the on-disk cache does) is validated and equal.
    again = spec.open({k: v.copy() for k, v in table.columns.items()})
    assert [OPENCLAW.encode_prepared(again[i]) for i in range(len(again))] == [
        OPENCLAW.encode_prepared(p) for p in prepared]


def test_openclaw_joined_parts_equal_the_whole() -> None:
    _, prepared = _openclaw_prepared(22, 30)
    spec = OPENCLAW.table_spec()
    assert spec is not None
    whole = spec.table(prepared)
    cuts = [0, 1, 1, 7, 19, 30]  # an empty part included
    parts = [dict(spec.encode(prepared[a:b])) for a, b in pairwise(cuts)]
    joined = spec.join(parts)
    for i, p in enumerate(prepared):
        assert OPENCLAW.encode_prepared(joined[i]) == OPENCLAW.encode_prepared(p)
    # Same columns up to the string pool (each part had its own): compare the decoded strings.
    for name, col in spec.schema.items():
        if col.ref == "string" or name.startswith("string_"):
            continue
        assert np.array_equal(joined.columns[name], whole.columns[name]), name
    spec.open(joined.columns)  # and it validates


def _ping_pong_with_an_empty_name(rng: random.Random) -> Any:
    """A/B alternation where one side's tool name is empty (it never counts as the pair)."""
    from loopscope.formats.builder import SessionBuilder

    b = SessionBuilder()
    b.user("go")
    for k in range(rng.randint(4, 30)):
        turn = b.assistant("")
        name = "" if k % 2 else "read"
        b.call(turn, name, {"path": "/a"}, "value", id=f"c{k}")
        text = "same" if rng.random() < 0.8 else f"new {k}"
        b.result(f"c{k}", [{"type": "text", "text": text}], text, details={})
    return b.build(id="pp", source="pp", format="openclaw_session")


@pytest.mark.parametrize("seed", range(6))
def test_openclaw_window_counters_equal_the_per_session_counts(seed: int) -> None:
    rng = random.Random(seed)
    _, prepared = _openclaw_prepared(100 + seed, 25)
    prepared.insert(3, OPENCLAW.prepare(_ping_pong_with_an_empty_name(rng)))
    spec = OPENCLAW.table_spec()
    assert spec is not None
    pack = openclaw_columns.Pack(spec.table(prepared))
    c = pack.table.columns
    for history_size in (1, 2, 3, rng.randint(4, 12), DEFAULT_HISTORY_SIZE, 200):
        got = openclaw_columns.window_counters(
            pack.owner, pack.position, c["args_code"], c["result_code"], c["unknown_code"],
            c["tool_code"], c["run_start"], pack.tool_empty(), history_size)
        for s, p in enumerate(prepared):
            a, b = int(pack.offsets[s]), int(pack.offsets[s + 1])
            want = _compute_counters(p, history_size)
            for field in openclaw_columns._COUNTER_FIELDS:
                assert got[field][a:b].tolist() == list(getattr(want, field)), (
                    history_size, s, field)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(gglib_messages(), min_size=1, max_size=6),
       st.lists(gglib_config(), min_size=1, max_size=3), st.integers(0, 5))
def test_gglib_table_rows_and_stagnation(corpus: list[list[Any]], configs: list[Any],
                                        cut: int) -> None:
    prepared = [GGLIB.prepare_messages(m, source=f"s{i}") for i, m in enumerate(corpus)]
    spec = GGLIB.table_spec()
    assert spec is not None
    cut = min(cut, len(prepared))
    table = spec.join([dict(spec.encode(prepared[:cut])), dict(spec.encode(prepared[cut:]))])
    spec.open(table.columns)
    for i, p in enumerate(prepared):
        back = table[i]
        assert GGLIB.encode_prepared(back) == GGLIB.encode_prepared(p)
        for config in configs:
            assert GGLIB.run(back, config) == GGLIB.run(p, config)
    pack = gglib_columns.Pack(table)
    for max_steps in (0, 1, 2, 3, 5, 9):
        want = [n for p in prepared for n in p.messages.stagnation(max_steps)[0]]
        assert pack.stagnation(max_steps).tolist() == want, max_steps


def test_damaged_columns_are_refused() -> None:
    _, prepared = _openclaw_prepared(23, 6)
    spec = OPENCLAW.table_spec()
    assert spec is not None
    good = dict(spec.table(prepared).columns)
    assert good["args_code"].size > 0
    damages: list[tuple[str, Any]] = [
        ("args_code", good["args_code"] + 1000),  # a code beyond its session's hashes
        ("args_code", good["args_code"].astype(np.int64)),  # another dtype
        ("turn", good["turn"][:-1]),  # a column of the wrong length
        ("call_start", good["call_start"][::-1].copy()),  # ranges out of order
        ("tool", good["tool"] + 10**6),  # outside the string pool
        ("op", np.full(len(good["op"]) or 1, -7, dtype=np.int32)),
        ("w_ping_pong_last", good["w_ping_pong_last"] + 10**4),
    ]
    for name, value in damages:
        with pytest.raises(TableError):
            spec.open({**good, name: value})
    with pytest.raises(TableError):
        spec.open({k: v for k, v in good.items() if k != "turn"})
    with pytest.raises(TableError):
        spec.open({**good, "extra": np.zeros(1)})
    g_spec = GGLIB.table_spec()
    assert g_spec is not None
    g_good = dict(g_spec.table([GGLIB.prepare_messages(
        [{"role": "assistant", "content": "A"}, {"role": "assistant", "content": "A"}])]).columns)
    for name, value in (("outcome", g_good["outcome"] + 9),
                        ("prose_step", g_good["prose_step"] + 5),
                        ("stagnation", g_good["stagnation"] * 0)):
        with pytest.raises(TableError):
            g_spec.open({**g_good, name: value})


def test_concat_shifts_positions_and_keeps_nones() -> None:
    from loopscope.engines.table import Column

    schema = {"start": Column("int64", "session", "item", starts=True),
              "item": Column("int32", "item", "thing", nullable=True),
              "thing": Column("int8", "thing")}
    a = {"start": np.array([0, 1], dtype=np.int64), "item": np.array([0, -1], dtype=np.int32),
         "thing": np.array([5], dtype=np.int8)}
    b = {"start": np.array([0], dtype=np.int64), "item": np.array([1, -1, 0], dtype=np.int32),
         "thing": np.array([6, 7], dtype=np.int8)}
    joined = validate(schema, concat(schema, [a, b]))
    assert joined["start"].tolist() == [0, 1, 2]
    assert joined["item"].tolist() == [0, -1, 2, -1, 1]
    assert joined["thing"].tolist() == [5, 6, 7]
    table = PreparedTable("x", "k", schema, joined, lambda t, i: t.span("start", i))
    assert [table[i] for i in range(3)] == [(0, 1), (1, 2), (2, 5)]


def test_openhands_and_gemini_cli_round_trip_through_their_json_tables() -> None:
    """Engines whose prepared data has a JSON codec write one JSON text per session beside
    their columns: every session read back replays as the session itself."""
    from tests.engines.gemini_cli._gemini_gen import random_config as gemini_config
    from tests.engines.gemini_cli._gemini_gen import random_session as gemini_session
    from tests.engines.openhands._openhands_gen import random_config as openhands_config
    from tests.engines.openhands._openhands_gen import random_session as openhands_session

    rng = random.Random(41)
    for name, make, configure in (("openhands", openhands_session, openhands_config),
                                  ("gemini-cli", gemini_session, gemini_config)):
        eng = get_engine(name)
        sessions = [make(rng) for _ in range(40)]
        prepared = [eng.prepare(s) for s in sessions]
        spec = eng.table_spec()
        assert spec is not None and not spec.keep_all
        cut = len(prepared) // 3
        table = spec.open(spec.join([dict(spec.encode(prepared[:cut])),
                                     dict(spec.encode(prepared[cut:]))]).columns)
        for i, (session, p) in enumerate(zip(sessions, prepared, strict=True)):
            back = table[i]
            assert table[i] is back  # kept (among the last read)
            assert eng.encode_prepared(back) == eng.encode_prepared(p), (name, i)
            for _ in range(3):
                config = configure(rng)
                assert eng.run(back, config) == eng.replay(session, config), (name, i)
                assert eng.counters(back, eng.run(back, config), config) == eng.counters(
                    p, eng.run(p, config), config)


@pytest.mark.parametrize("name", ["openhands", "gemini-cli"])
def test_json_codecs_refuse_damaged_data(name: str) -> None:
    from tests.engines.gemini_cli._gemini_gen import random_session as gemini_session
    from tests.engines.openhands._openhands_gen import random_session as openhands_session

    eng = get_engine(name)
    rng = random.Random(5)
    make = openhands_session if name == "openhands" else gemini_session
    good = None
    while good is None or not good["turn"]:
        good = eng.encode_prepared(eng.prepare(make(rng)))
    assert good is not None
    damages: list[dict[str, Any]] = [{"turn": "x"}, {"session": 3}, {"call": [-9] * len(
        good["turn"])}, {"turn": good["turn"] + [1]}]
    if name == "openhands":
        damages += [{"base": [10**6] * len(good["turn"])}, {"tools": [99] * len(good["turn"])}]
    else:
        damages += [{"repeats": [[10**6, 1]]}, {"stretches": [["x", [5], [0]]]},
                    {"content": [[[0, "d", 10**6, []]], []]}]
    for damage in damages:
        with pytest.raises(ValueError):
            eng.decode_prepared({**good, **damage})
    for bad in (None, [], "x"):
        with pytest.raises(ValueError):
            eng.decode_prepared(bad)


@pytest.mark.parametrize("engine", ["openclaw", "gglib", "openhands", "gemini-cli"])
def test_gathered_sessions_equal_their_own_table(engine: str) -> None:
    """Picking sessions out of a table (in any order, some dropped) and shrinking its string
    pool gives the table of exactly those sessions."""
    from tests.engines.gemini_cli._gemini_gen import random_session as gemini_session
    from tests.engines.openhands._openhands_gen import random_session as openhands_session

    from loopscope.engines.table import compact_pool, gather

    rng = random.Random(9)
    eng = get_engine(engine)
    if engine == "openclaw":
        prepared = _openclaw_prepared(77, 20)[1]
    elif engine == "gglib":
        prepared = [eng.prepare(s) for s in _openclaw_prepared(78, 20)[0]]
    else:
        make = openhands_session if engine == "openhands" else gemini_session
        prepared = [eng.prepare(make(rng)) for _ in range(20)]
    spec = eng.table_spec()
    assert spec is not None
    whole = spec.table(prepared)
    order = [7, 3, 19, 0, 12, 13, 5]
    picked = spec.open(compact_pool(spec.schema, gather(spec.schema, whole.columns, order)))
    assert len(picked) == len(order)
    for k, i in enumerate(order):
        assert eng.encode_prepared(picked[k]) == eng.encode_prepared(prepared[i])
    if engine in ("openhands", "gemini-cli"):  # their own columns too (not the pool's order)
        own = set(spec.schema) - {"data", "string_start", "string_bytes"}
        alone = spec.table([prepared[i] for i in order]).columns
        _same_columns({k: picked.columns[k] for k in own}, {k: alone[k] for k in own})
    assert picked.columns["string_bytes"].size < whole.columns["string_bytes"].size
    empty = spec.open(compact_pool(spec.schema, gather(spec.schema, whole.columns, [])))
    assert len(empty) == 0


@given(st.integers(1, 300).flatmap(lambda size: st.tuples(
    st.just(size), st.lists(st.integers(0, size - 1), max_size=400))))
def test_unique_codes_equals_numpy_unique(case: tuple[int, list[int]]) -> None:
    """The presence-map ``unique`` of pool references (gglib's first re-run) is
    ``np.unique(…, return_inverse=True)``: the same codes, the same inverse."""
    size, values = case
    array = np.array(values, dtype=np.int32)
    codes, inverse = unique_codes(array, size)
    expected_codes, expected_inverse = np.unique(array, return_inverse=True)
    assert codes.tolist() == expected_codes.tolist() and codes.dtype == array.dtype
    assert inverse.reshape(-1).tolist() == expected_inverse.reshape(-1).tolist()


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(0, n - 1), max_size=60))))
def test_first_of_each_is_every_sessions_first_position(case: tuple[int, list[int]]) -> None:
    """``first_of_each`` (every corpus pass's first refusal per session) is, per session, the
    first of the ascending positions it owns, else ``missing``: a plain loop says the same."""
    n, owned = case
    owners = np.array(sorted(owned), dtype=np.int32)
    positions = np.arange(len(owners), dtype=np.int64) * 3 + 1
    expected = [-1] * n
    for position, owner in zip(positions.tolist(), owners.tolist(), strict=True):
        if expected[owner] == -1:
            expected[owner] = position
    assert first_of_each(positions, owners, n).tolist() == expected
    first = first_of_each(positions, owners, n, missing=9999)
    assert first.tolist() == [9999 if e == -1 else e for e in expected]
    assert first.dtype == np.int64


@given(st.lists(st.text(st.characters(exclude_categories=()), max_size=12), min_size=1,
                max_size=30),
       st.data())
def test_strings_read_in_one_pass_equal_each_string(texts: list[str], data: Any) -> None:
    """``PreparedTable.strings`` (sliced at once) reads what ``string`` reads one by one: any
    code, in any order and repeated, the last one and empty or non-UTF-8-able strings too."""
    pool = StringPool()
    pool.codes(texts)
    table = PreparedTable("test", "k", pool_schema(), pool.columns(),
                          decode=lambda _t, _i: None)
    n = table.axis_length("string")
    codes = data.draw(st.lists(st.integers(0, n - 1), max_size=40))
    assert table.strings(codes) == [table.string(c) for c in codes]
    assert table.strings(list(range(n))) == list(dict.fromkeys(texts))


def test_session_engines_refuse_damaged_columns() -> None:
    """OpenHands' and Gemini CLI's columns (what their vectorised re-runs index with) are
    checked before they are trusted: a log position outside its session, counts that are not
    counts, tool-call and text data mixed up."""
    from tests.engines.gemini_cli._gemini_gen import random_session as gemini_session
    from tests.engines.openhands._openhands_gen import random_session as openhands_session

    rng = random.Random(12)
    oh = get_engine("openhands")
    spec = oh.table_spec()
    assert spec is not None
    good = dict(spec.table([oh.prepare(openhands_session(rng)) for _ in range(6)]).columns)
    events = np.diff(np.append(good["prefix_start"], len(good["pre_actions"]))) - 1
    assert good["base"].size and int(good["base"].max()) <= int(events.max())
    spec.open(good)  # (the good table opens)
    for name, value in (("base", good["base"] + 10**4), ("user", good["user"] - 5),
                        ("mono_start", good["mono_start"] + 10**4),
                        ("newest_obs", good["newest_obs"] * 0 - 2),
                        ("ra", good["ra"] * 0 - 1), ("pre_agent", good["pre_agent"] * 0 - 1),
                        ("call", good["call"] * 0 - 3)):
        with pytest.raises(TableError, match=name):
            spec.open({**good, name: value})
    gem = get_engine("gemini-cli")
    g_spec = gem.table_spec()
    assert g_spec is not None
    g_good = dict(g_spec.table([gem.prepare(gemini_session(rng)) for _ in range(6)]).columns)
    text = g_good["call"] < 0
    assert text.any() and (~text).any()
    g_spec.open(g_good)
    for name, value in (("repeats", np.where(text, 3, g_good["repeats"]).astype(np.int32)),
                        ("repeats", np.where(text, 0, 0).astype(np.int32)),
                        ("content", ~text), ("turn", g_good["turn"] * 0 - 1)):
        with pytest.raises(TableError):
            g_spec.open({**g_good, name: value})
    # The analysed text and its pieces (what a content what-if walks).
    pieces = len(g_good["piece_end"])
    assert pieces > 1 and g_good["text"].size
    calls = np.flatnonzero(~text)
    local_call = calls[0] - g_good["step_start"][np.searchsorted(g_good["step_start"], calls[0],
                                                                 "right") - 1]
    for name, value in (
            ("piece_end", g_good["piece_end"] + np.int32(1)),
            ("piece_end", g_good["piece_end"][::-1].copy()),
            ("piece_end", np.zeros(pieces, dtype=np.int32)),
            ("text", g_good["text"][:-1]),
            ("piece_step", g_good["piece_step"] * 0 + np.int32(10**6)),
            ("piece_step", g_good["piece_step"][::-1].copy()),
            ("piece_step", np.full(pieces, local_call, dtype=np.int32)),
            ("piece_opens", np.zeros(pieces, dtype=np.bool_))):
        with pytest.raises(TableError):
            g_spec.open({**g_good, name: value})


def test_openclaw_2026_9_round_trips_through_its_json_table() -> None:
    """OpenClaw 2026.9's prepared data has a JSON codec (worker processes, the on-disk cache):
    every session read back from its table replays as the session itself, under every
    release line setting; the configurable line's data is never taken for it."""
    from tests.engines.openclaw._openclaw9_gen import random_session_2026_9
    from tests.engines.openclaw.test_openclaw9_properties import _random_config as random_config9

    rng = random.Random(43)
    version = OPENCLAW.versions[-1]
    sessions = [random_session_2026_9(rng, calls=rng.randint(0, 50)) for _ in range(40)]
    prepared = [OPENCLAW.prepare(s, version) for s in sessions]
    spec = OPENCLAW.table_spec(version)
    assert spec is not None and spec.key == OPENCLAW.prepare_key(version) and spec.keep_all
    table = spec.open(spec.join([dict(spec.encode(prepared[:15])),
                                 dict(spec.encode(prepared[15:]))]).columns)
    for i, (session, p) in enumerate(zip(sessions, prepared, strict=True)):
        back = table[i]
        assert OPENCLAW.encode_prepared(back) == OPENCLAW.encode_prepared(p)
        for _ in range(3):
            config = random_config9(rng)
            assert OPENCLAW.run(back, config) == OPENCLAW.replay(session, config), i
    configurable = OPENCLAW.encode_prepared(OPENCLAW.prepare(sessions[0]))
    assert type(OPENCLAW.decode_prepared(configurable)) is not type(prepared[0])


def test_openclaw_2026_9_codec_refuses_damaged_data() -> None:
    from tests.engines.openclaw._openclaw9_gen import random_session_2026_9

    rng = random.Random(44)
    version = OPENCLAW.versions[-1]
    good = None
    while good is None or len(good["turn"]) < 3:
        good = OPENCLAW.encode_prepared(OPENCLAW.prepare(random_session_2026_9(rng), version))
    n = len(good["turn"])
    damages: list[dict[str, Any]] = [
        {"release": "2026.6"}, {"turn": good["turn"] + [1]}, {"tool_code": [0] * n},
        {"detect_args": [len(good["args_hashes"]) + 1] * n}, {"kind_code": [7] * n},
        {"poll": [1] * n}, {"result_hash": [3] * n}, {"raw_name": [None] * n},
        {"messages": [[0, n + 1]]}, {"messages": [[1, n]]}, {"messages": []},
        {"ops": [len(good["messages"])]}, {"ops": [-3]}, {"session": None},
        {"unknown_code": [len(good["unknown_names"]) + 1] * n},
    ]
    for damage in damages:
        with pytest.raises(ValueError):
            OPENCLAW.decode_prepared({**good, **damage})
