"""Fuzzing every importer (issue #18): hostile variants of real recordings never raise, never
hit an importer bug, and stay within a memory bound.

Seeds are the bundled sample sessions and, when ``../shared/corpus`` is there, one file of
every corpus folder (cut down to a few dozen records so a run stays short). Each input is
loaded with its format detected, forced to the seed's format and forced to another format, so
every importer meets every kind of damage:

* byte edits and truncations (a file cut mid-record, stray brackets, bad UTF-8, BOMs, NULs);
* structural edits of the parsed JSON: a value swapped for another type, a huge string, deep
  nesting, numbers out of range (``1e400``, ``2**64``, ``NaN``, ``-0``);
* zip archives (``.eval``): bombs, lying headers, many members, damaged and cut archives.

Hypothesis runs derandomized (the same inputs every run) with fixed example counts, so the
module takes well under a minute. At the end one line reports the inputs tried, the unhandled
exceptions and the largest peak of traced memory for one input.

:func:`check_import_invariants` holds what every import must satisfy; extend it (for example
with "every tool call seen in the file is imported or reported") and every fuzzed input is
checked against it.
"""

from __future__ import annotations

import atexit
import json
import os
import random
import shutil
import tempfile
import tracemalloc
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import CORPUS, SAMPLES
from tests.fuzz.zipbombs import HEADER, MiB, write_sample_bomb

from loopscope.formats import FORMAT_IDS, ImportLimits, detect_format, load_file
from loopscope.formats.base import FileImport

# Limits small enough that every limit is reached by some input, and a run stays fast.
SMALL = ImportLimits(max_document_bytes=4 * MiB, max_line_bytes=256 * 1024,
                     max_json_depth=128, max_value_chars=100_000,
                     max_events_per_session=2_000, max_sessions_per_file=50,
                     max_archive_members=200, max_archive_bytes=6 * MiB,
                     max_compression_ratio=50)
DEFAULT = ImportLimits()

MEMORY_BOUND_FIXED = 48 * MiB
MEMORY_BOUND_PER_BYTE = 40
"""Peak traced memory of one import may be at most 48 MiB + 40 × the input's size (inflated
size for archives is bounded by the limits, not the file): the parsed JSON, the sessions and
the problems of one file, nothing that grows with what a zip claims or a string repeats."""

_SETTINGS = {"derandomize": True, "database": None, "deadline": None,
             "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much]}


# --------------------------------------------------------------------------- bookkeeping


@dataclass
class _Stats:
    inputs: int = 0
    loads: int = 0
    unhandled: int = 0
    internal_errors: int = 0
    worst_peak: int = 0
    worst_input: str = ""
    worst_size: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    """Problem codes the imports reported: which paths of the importers the inputs reached."""


STATS = _Stats()


def summary() -> str:
    """One line for the end of the run (printed by ``tests/fuzz/conftest.py``)."""
    return (f"fuzz: {STATS.inputs} inputs ({STATS.loads} imports), {STATS.unhandled} "
            f"unhandled exceptions, {STATS.internal_errors} importer bugs; worst peak traced "
            f"memory {STATS.worst_peak / MiB:.1f} MiB ({STATS.worst_input}, "
            f"{STATS.worst_size / 1024:.0f} KiB input); problem codes reached: "
            + ", ".join(f"{code} {n}" for code, n in STATS.codes.most_common()))


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    out = os.environ.get("LOOPSCOPE_FUZZ_REPORT")
    if out:
        with open(out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({**STATS.__dict__, "codes": dict(STATS.codes)}) + "\n")


def check_import_invariants(result: FileImport, path: str) -> None:
    """What every import of any input must satisfy. Extend it: every fuzzed input is checked.

    - no importer bug (``internal_error``: an exception the loader caught);
    - every problem names this file (``path`` or ``path#n``) and renders as text;
    - every session is sourced from this file and its views can be built.
    """
    bugs = [p.text() for p in result.problems if p.code == "internal_error"]
    assert not bugs, bugs
    for problem in result.problems:
        assert problem.source == path or problem.source.startswith(path + "#"), problem
        problem.text()
    for session in result.sessions:
        assert session.source == path or session.source.startswith(path + "#")
        session.counts()
        session.chat_view()
    # No call lost without a warning: calls counted in the file but neither imported nor set
    # aside on purpose are reported once, as calls_not_imported.
    lost = [p for p in result.problems if p.code == "calls_not_imported"]
    assert (result.calls_lost > 0) == bool(lost), (result.calls_lost, [p.text() for p in lost])


def import_and_check(folder: str, name: str, data: bytes, formats: list[str | None],
                     limits: ImportLimits, what: str) -> None:
    """Write ``data`` as ``name`` and import it once per entry of ``formats`` (``None`` =
    detected), measuring each import's peak of traced memory."""
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    STATS.inputs += 1
    bound = MEMORY_BOUND_FIXED + MEMORY_BOUND_PER_BYTE * len(data)
    for fmt in formats:
        STATS.loads += 1
        tracemalloc.start(1)
        try:
            result = load_file(path, limits, fmt)
            peak = tracemalloc.get_traced_memory()[1]
        except BaseException:
            STATS.unhandled += 1
            raise
        finally:
            tracemalloc.stop()
        if peak > STATS.worst_peak:
            STATS.worst_peak, STATS.worst_size = peak, len(data)
            STATS.worst_input = f"{what}, format {fmt or 'detected'}"
        STATS.codes.update({p.code for p in result.problems})
        if any(p.code == "internal_error" for p in result.problems):
            STATS.internal_errors += 1
        check_import_invariants(result, path)
        assert peak <= bound, (f"{what} (format {fmt}): peak {peak / MiB:.1f} MiB over "
                               f"{bound / MiB:.1f} MiB for {len(data)} bytes")


@pytest.fixture(scope="module")
def scratch() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="loopscope-fuzz-") as folder:
        yield folder


# --------------------------------------------------------------------------- seeds


@dataclass(frozen=True)
class Seed:
    name: str
    format: str
    suffix: str
    data: bytes
    value: Any  # the parsed JSON document, or the list of JSONL records; None for Markdown
    jsonl: bool


def _shrink(value: Any, depth: int = 0) -> Any:
    """A smaller value of the same shape: lists cut to 25 elements, strings to 2,000 chars."""
    if isinstance(value, list):
        return [_shrink(v, depth + 1) for v in value[:25]]
    if isinstance(value, dict):
        return {k: _shrink(v, depth + 1) for k, v in value.items()}
    if isinstance(value, str) and len(value) > 2000:
        return value[:2000]
    return value


def _seed(path: Path) -> Seed | None:
    fmt = detect_format(path).format
    if fmt is None:
        return None
    raw = path.read_bytes()
    suffix = path.suffix or ".json"
    if suffix == ".md":
        return Seed(path.name, fmt, suffix, raw[:32 * 1024], None, False)
    if suffix == ".txt":  # a console exporter's dump: JSON objects one after another
        text, decoder, objects, i = raw.decode(), json.JSONDecoder(), [], 0
        while i < len(text):
            if text[i] == "{":
                obj, i = decoder.raw_decode(text, i)
                objects.append(obj)
            else:
                i = text.find("\n", i) + 1 or len(text)
        return Seed(path.name, fmt, suffix, raw, _shrink(objects), False)
    try:
        value = json.loads(raw)
    except ValueError:
        lines = [line for line in raw.splitlines() if line.strip()][:40]
        records = [_shrink(json.loads(line)) for line in lines]
        data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
        return Seed(path.name, fmt, suffix, data, records, True)
    value = _shrink(value)
    return Seed(path.name, fmt, suffix, json.dumps(value).encode(), value, False)


def _seeds_from(paths: list[Path]) -> list[Seed]:
    seeds = [_seed(p) for p in paths]
    return [s for s in seeds if s is not None and detect_format(_tmp_write(s)).format == s.format]


_TMP = tempfile.mkdtemp(prefix="loopscope-fuzz-seeds-")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


def _tmp_write(seed: Seed) -> str:
    path = os.path.join(_TMP, "seed" + seed.suffix)
    with open(path, "wb") as handle:
        handle.write(seed.data)
    return path


def _corpus_paths() -> list[Path]:
    """The smallest corpus file of each format (and of each folder): every format, a short
    run."""
    if not CORPUS.is_dir():
        return []
    chosen: dict[tuple[str, str | None], Path] = {}
    for path in sorted(CORPUS.glob("*/*"), key=lambda p: (p.stat().st_size, p.name)):
        if path.is_file():
            chosen.setdefault((path.parent.name, detect_format(path).format), path)
    return [p for (_, fmt), p in sorted(chosen.items(), key=lambda kv: str(kv[1]))
            if fmt is not None]


FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"
AGENT_STORE_FILES = (sorted(FIXTURES.glob("cline_task/*/*.json"))
                     + sorted(FIXTURES.glob("opencode/*.md")))
SAMPLE_SEEDS = _seeds_from(sorted(
    [p for p in SAMPLES.iterdir() if p.suffix in (".json", ".jsonl")]
    # the trace-store fixtures: formats no sample or corpus file is in
    + [p for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl", ".txt")]
    # and the Markdown chat logs, one file per shape their writers used
    + [p for p in FIXTURES.iterdir() if p.name.startswith(("specstory_", "aider_"))]
    # Cline / Roo Code task folders and opencode transcripts (kept in subfolders)
    + AGENT_STORE_FILES))
CORPUS_SEEDS = _seeds_from(_corpus_paths())


def _needs_corpus() -> None:
    if not CORPUS_SEEDS:
        pytest.skip(f"../shared/corpus not found at {CORPUS}")


def test_the_seeds_cover_every_format() -> None:
    formats = {s.format for s in SAMPLE_SEEDS + CORPUS_SEEDS}
    expected = set(FORMAT_IDS) if CORPUS_SEEDS else {"openai_chat", "claude_code",
                                                      "codex_rollout", "openai_responses",
                                                      "anthropic_messages"}
    assert expected <= formats, sorted(set(FORMAT_IDS) - formats)


# --------------------------------------------------------------------------- byte-level damage

_SNIPPETS = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"\n", b"\r\n", b"\\", b"null", b"-0",
             b"1e400", b"NaN", b"\x00", b"\xff\xfe", b"\xc3", b"\xef\xbb\xbf", b"\\ud800",
             b"\xe2\x80\xa8", b"[[[[[[[[", b'"role"', b'"tool_calls"', b'"content"',
             b'"type"', b"18446744073709551616", b"```", b"\n## ", b"PK\x03\x04"]


def _byte_damage(seed: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    data = bytearray(seed)
    for kind, position, which in edits:
        payload = _SNIPPETS[which % len(_SNIPPETS)]
        i = position % (len(data) + 1)
        if kind == 0:
            data[i:i] = payload
        elif kind == 1:
            del data[i:i + 1 + which % 64]
        elif kind == 2:
            data[i:i + len(payload)] = payload
        else:
            data = data[:i]  # truncation
    return bytes(data)


_EDITS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1 << 20), st.integers(0, 1000)),
                  min_size=1, max_size=6)


def _other_format(seed_format: str, pick: int) -> str:
    others = [f for f in FORMAT_IDS if f != seed_format]
    return others[pick % len(others)]


@settings(max_examples=250, **_SETTINGS)
@given(index=st.integers(0, 10_000), edits=_EDITS, pick=st.integers(0, 100))
def test_sample_files_with_damaged_bytes(scratch: str, index: int,
                                         edits: list[tuple[int, int, int]], pick: int) -> None:
    seed = SAMPLE_SEEDS[index % len(SAMPLE_SEEDS)]
    data = _byte_damage(seed.data, edits)
    import_and_check(scratch, "b" + seed.suffix, data,
                     [None, seed.format, _other_format(seed.format, pick)], SMALL,
                     f"bytes of {seed.name}")


@settings(max_examples=250, **_SETTINGS)
@given(index=st.integers(0, 10_000), edits=_EDITS, pick=st.integers(0, 100))
def test_corpus_files_with_damaged_bytes(scratch: str, index: int,
                                         edits: list[tuple[int, int, int]], pick: int) -> None:
    _needs_corpus()
    seed = CORPUS_SEEDS[index % len(CORPUS_SEEDS)]
    data = _byte_damage(seed.data, edits)
    import_and_check(scratch, "c" + seed.suffix, data,
                     [None, seed.format, _other_format(seed.format, pick)], SMALL,
                     f"bytes of {seed.name}")


_MARKDOWN_LOGS = ("cursor_specstory", "aider_history")
# Pieces of the Markdown chat logs' own syntax, so that damage reaches their parsers' branches
# (an unclosed region or fence, a heading in a bubble, an outcome without its block…).
_CHAT_LOG_SNIPPETS = [b"\n---\n", b"_**User**_\n", b"\n_**Assistant**_\n", b"_****_",
                      b'<tool-use data-tool-type="shell" data-tool-name="x">', b"</tool-use>",
                      b"<details>", b"<summary>Tool use: **x** \xe2\x80\xa2 ", b"</summary>",
                      b"<think>", b"\nRead file: ", b"\n### Rule: r\n", b"```bash\n", b"```\n",
                      b"\n#### ", b"\n> ", b"> Applied edit to a.py  \n", b"> Running x  \n",
                      b"<<<<<<< SEARCH\n", b"=======\n", b">>>>>>> REPLACE\n",
                      b"\n# aider chat started at 2025-01-01 00:00:00\n", b"\r", b"\x00"]


@settings(max_examples=250, **_SETTINGS)
@given(index=st.integers(0, 10_000),
       edits=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1 << 20),
                                st.integers(0, 1000)), min_size=1, max_size=8),
       pick=st.integers(0, 100))
def test_markdown_chat_logs_with_damaged_bytes(scratch: str, index: int,
                                               edits: list[tuple[int, int, int]],
                                               pick: int) -> None:
    """SpecStory and Aider logs (fixtures, and the corpus files when present) cut, spliced and
    overwritten with pieces of their own syntax."""
    seeds = [s for s in SAMPLE_SEEDS + CORPUS_SEEDS if s.format in _MARKDOWN_LOGS]
    seed = seeds[index % len(seeds)]
    data = bytearray(seed.data)
    for kind, position, which in edits:
        payload = _CHAT_LOG_SNIPPETS[which % len(_CHAT_LOG_SNIPPETS)]
        i = position % (len(data) + 1)
        if kind == 0:
            data[i:i] = payload
        elif kind == 1:
            del data[i:i + 1 + which % 200]
        elif kind == 2:
            data[i:i + len(payload)] = payload
        else:
            data = data[:i]
    import_and_check(scratch, "m.md", bytes(data),
                     [None, seed.format, _MARKDOWN_LOGS[pick % 2]], SMALL,
                     f"markdown bytes of {seed.name}")


def test_the_markdown_seeds_cover_both_logs() -> None:
    assert {s.format for s in SAMPLE_SEEDS} >= set(_MARKDOWN_LOGS)


AGENT_STORE_SEEDS = [s for s in SAMPLE_SEEDS if s.format in (
    "cline_task", "opencode_session", "opencode_markdown")]


@settings(max_examples=150, **_SETTINGS)
@given(index=st.integers(0, 10_000), edits=_EDITS, pick=st.integers(0, 100),
       beside=st.booleans())
def test_agent_task_files_with_damaged_bytes(scratch: str, index: int,
                                             edits: list[tuple[int, int, int]], pick: int,
                                             beside: bool) -> None:
    """The Cline / Roo Code and opencode fixtures, damaged; a UI messages file also next to a
    damaged API history (its sibling is read to decide which file holds the task)."""
    seed = AGENT_STORE_SEEDS[index % len(AGENT_STORE_SEEDS)]
    data = _byte_damage(seed.data, edits)
    folder = os.path.join(scratch, "task")
    os.makedirs(folder, exist_ok=True)
    sibling = os.path.join(folder, "api_conversation_history.json")
    if beside:  # the API history of the fixture task, damaged alike
        history = (FIXTURES / "cline_task" / "task_both" / "api_conversation_history.json")
        with open(sibling, "wb") as handle:
            handle.write(_byte_damage(history.read_bytes(), edits[:1]))
    elif os.path.exists(sibling):
        os.remove(sibling)
    import_and_check(folder, "ui_messages" + seed.suffix, data,
                     [None, seed.format, _other_format(seed.format, pick)], SMALL,
                     f"bytes of {seed.name}")


@settings(max_examples=100, **_SETTINGS)
@given(index=st.integers(0, 10_000), changes=st.lists(
    st.tuples(st.lists(st.integers(0, 1000), min_size=0, max_size=8), st.integers(0, 4),
              st.integers(0, 40)), min_size=1, max_size=3))
def test_agent_task_files_with_swapped_values(scratch: str, index: int,
                                              changes: list[tuple[list[int], int, int]]) -> None:
    seeds = [s for s in AGENT_STORE_SEEDS if s.value is not None]
    seed = seeds[index % len(seeds)]
    import_and_check(scratch, "t" + seed.suffix, _structural(seed, changes),
                     [None, seed.format], SMALL, f"values of {seed.name}")


@pytest.fixture(scope="module")
def opencode_db(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from tests.formats.test_opencode import _write_db

    path = tmp_path_factory.mktemp("opencode-db") / "opencode.db"
    _write_db(path, second_session=True, bad_part=True)
    return path.read_bytes()


@settings(max_examples=80, **{**_SETTINGS, "suppress_health_check": [
    *_SETTINGS["suppress_health_check"], HealthCheck.function_scoped_fixture]})
@given(edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.binary(min_size=1, max_size=64),
                                st.booleans()), min_size=1, max_size=4))
def test_opencode_databases_with_damaged_pages(scratch: str, opencode_db: bytes,
                                               edits: list[tuple[int, bytes, bool]]) -> None:
    """opencode.db (SQLite) with overwritten or cut pages: read or refused, never a raise."""
    data = bytearray(opencode_db)
    for position, payload, cut in edits:
        at = position % len(data)
        if cut:
            del data[at:]
            if not data:
                break
        else:
            data[at:at + len(payload)] = payload
    import_and_check(scratch, "opencode.db", bytes(data), [None, "opencode_session"], SMALL,
                     "a damaged opencode.db")


# --------------------------------------------------------------------------- structural damage

_RAW = "\u0000raw:"  # a string standing for a literal written into the JSON text as is
_OUT_OF_RANGE = ["1e400", "-1e400", "1e-400", "18446744073709551616", "-9223372036854775809",
                 "NaN", "Infinity", "-Infinity", "-0", "-0.0", "1" * 400]


def _replacement(kind: int, size: int, node: Any) -> Any:
    if kind == 0:  # another type
        return [None, True, False, 0, -1, 1.5, "", "x", [], {}, [node], {"value": node}][size % 12]
    if kind == 1:  # a huge string (past max_value_chars of SMALL)
        return "A" * (100_001 + size * 4096)
    if kind == 2:  # deep nesting, as arrays or objects
        depth = 100 + size * 40
        value: Any = node if not isinstance(node, list | dict) else 0
        for i in range(depth):
            value = [value] if i % 2 else {"a": value}
        return value
    if kind == 3:  # a number out of range (written raw)
        return _RAW + _OUT_OF_RANGE[size % len(_OUT_OF_RANGE)]
    if isinstance(node, dict):  # an object turned into the list of its values
        return list(node.values())
    return {str(i): v for i, v in enumerate(node)} if isinstance(node, list) else None


def _edit(value: Any, route: list[int], kind: int, size: int) -> Any:
    """``value`` with the node reached by following ``route`` replaced."""
    if not route or not isinstance(value, list | dict) or not value:
        return _replacement(kind, size, value)
    step, rest = route[0], route[1:]
    if isinstance(value, list):
        i = step % len(value)
        return [*value[:i], _edit(value[i], rest, kind, size), *value[i + 1:]]
    key = list(value)[step % len(value)]
    return {**value, key: _edit(value[key], rest, kind, size)}


def _dump(value: Any, jsonl: bool) -> bytes:
    marker = '"' + json.dumps(_RAW)[1:-1]  # how json.dumps writes the stand-in's start

    def text(v: Any) -> str:
        out = json.dumps(v)
        while marker in out:  # the raw literal replaces its quoted stand-in
            start = out.index(marker)
            end = out.index('"', start + 1)
            literal = json.loads(out[start:end + 1])[len(_RAW):]
            out = out[:start] + literal + out[end + 1:]
        return out

    if jsonl and isinstance(value, list):
        return "".join(text(v) + "\n" for v in value).encode()
    return text(value).encode()


_ROUTES = st.lists(st.integers(0, 1000), min_size=0, max_size=8)
_KINDS = st.lists(st.tuples(_ROUTES, st.integers(0, 4), st.integers(0, 40)), min_size=1,
                  max_size=3)


def _structural(seed: Seed, changes: list[tuple[list[int], int, int]]) -> bytes:
    value = seed.value
    for route, kind, size in changes:
        value = _edit(value, route, kind, size)
    return _dump(value, seed.jsonl)


@settings(max_examples=200, **_SETTINGS)
@given(index=st.integers(0, 10_000), changes=_KINDS, pick=st.integers(0, 100))
def test_sample_files_with_swapped_values(scratch: str, index: int,
                                          changes: list[tuple[list[int], int, int]],
                                          pick: int) -> None:
    seeds = [s for s in SAMPLE_SEEDS if s.value is not None]
    seed = seeds[index % len(seeds)]
    import_and_check(scratch, "s" + seed.suffix, _structural(seed, changes),
                     [None, seed.format, _other_format(seed.format, pick)], SMALL,
                     f"values of {seed.name}")


@settings(max_examples=200, **_SETTINGS)
@given(index=st.integers(0, 10_000), changes=_KINDS, pick=st.integers(0, 100))
def test_corpus_files_with_swapped_values(scratch: str, index: int,
                                          changes: list[tuple[list[int], int, int]],
                                          pick: int) -> None:
    _needs_corpus()
    seeds = [s for s in CORPUS_SEEDS if s.value is not None]
    seed = seeds[index % len(seeds)]
    import_and_check(scratch, "v" + seed.suffix, _structural(seed, changes),
                     [None, seed.format, _other_format(seed.format, pick)], SMALL,
                     f"values of {seed.name}")


@settings(max_examples=40, **_SETTINGS)
@given(index=st.integers(0, 10_000), changes=_KINDS)
def test_default_limits_on_swapped_values(scratch: str, index: int,
                                          changes: list[tuple[list[int], int, int]]) -> None:
    """The shipped limits, not only the small ones (huge strings stay under 8M chars here)."""
    seeds = [s for s in SAMPLE_SEEDS + CORPUS_SEEDS if s.value is not None]
    seed = seeds[index % len(seeds)]
    import_and_check(scratch, "d" + seed.suffix, _structural(seed, changes), [None], DEFAULT,
                     f"values of {seed.name} (default limits)")


def test_the_raw_literals_reach_the_file() -> None:
    """The structural edits do write out-of-range numbers as numbers, not as strings."""
    seed = Seed("x", "openai_chat", ".json", b"", {"a": [1, 2]}, False)
    assert _structural(seed, [([0, 1], 3, 0)]) == b'{"a": [1, 1e400]}'


# --------------------------------------------------------------------------- zip archives


def _inspect_sample(i: int) -> bytes:
    return json.dumps({"id": i, "epoch": 1, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c", "function": "bash", "arguments": {"cmd": "ls"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"}]}).encode()


_MEMBER = st.tuples(st.integers(0, 5), st.integers(0, 1 << 16))


@settings(max_examples=60, **_SETTINGS)
@given(members=st.lists(_MEMBER, max_size=12), cut=st.integers(0, 1 << 20),
       damage=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=4),
       many=st.integers(0, 300))
def test_eval_archives(scratch: str, members: list[tuple[int, int]], cut: int,
                       damage: list[tuple[int, int]], many: int) -> None:
    path = os.path.join(scratch, "build.eval")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        for n, (kind, size) in enumerate(members):
            name = f"samples/{n}_epoch_1.json"
            if kind == 0:
                archive.writestr(name, _inspect_sample(n))
            elif kind == 1:  # a bomb: 400:1, past the ratio and total limits
                write_sample_bomb(archive, name, 2 * MiB + size * 64, n)
            elif kind == 2:
                archive.writestr(name, random.Random(size).randbytes(size % 4096))
            elif kind == 3:
                archive.writestr(name, _inspect_sample(n)[: size % 200])  # cut JSON
            elif kind == 4:
                archive.writestr(name, json.dumps([[[[[[["deep"]]]]]]] * (size % 50)))
            else:
                archive.writestr(f"samples/{n}/", b"")  # a folder entry
        for n in range(many):
            archive.writestr(f"samples/x{n}.json", b"{}")
    data = bytearray(Path(path).read_bytes())
    for at, byte in damage:
        data[at % len(data)] = byte
    if cut % 3 == 0:
        data = data[: max(4, cut % len(data))]  # an archive cut short
    import_and_check(scratch, "f.eval", bytes(data), [None, "inspect_eval"], SMALL,
                     f"zip with {len(members)} members and {many} empty ones")


def test_the_reviews_bomb_at_default_limits(scratch: str, tmp_path: Path) -> None:
    from tests.fuzz.zipbombs import write_eval_bomb

    path = write_eval_bomb(tmp_path / "bomb.eval")
    import_and_check(scratch, "bomb.eval", path.read_bytes(), [None], DEFAULT,
                     "the review's 0.6 MB .eval bomb")


# --------------------------------------------------------------------------- random bytes


@settings(max_examples=150, **_SETTINGS)
@given(data=st.binary(max_size=4000),
       suffix=st.sampled_from([".json", ".jsonl", ".md", ".eval", ".traj"]),
       fmt=st.sampled_from([None, *FORMAT_IDS]))
def test_random_bytes(scratch: str, data: bytes, suffix: str, fmt: str | None) -> None:
    import_and_check(scratch, "r" + suffix, data, [fmt], SMALL, "random bytes")
