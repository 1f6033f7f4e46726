"""The golden vectors of ``../shared/reference/gglib_vectors.json``."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from tests.engines.gglib._gglib_helpers import VECTORS, load_json

from loopscope.engines.gglib import (
    batch_results_hash,
    batch_signature,
    domain_calls,
    fnv1a_64,
    hash_result_content,
    hex16,
    stable_repr,
    tool_signature,
)

if not VECTORS.is_file():
    pytest.skip(f"gglib vectors not found at {VECTORS}", allow_module_level=True)

DATA: dict[str, Any] = load_json(VECTORS)


def test_vector_counts() -> None:
    assert len(DATA["tool_calls"]) == 79
    assert len(DATA["batch_signatures"]) == 8
    assert len(DATA["fnv1a_64_text"]) == 10
    assert len(DATA["hash_result_content"]) == 17
    assert len(DATA["batch_results_hash"]) == 13


@pytest.mark.parametrize("entry", DATA["tool_calls"], ids=lambda e: e["sig"][:60])
def test_tool_call_vector(entry: dict[str, Any]) -> None:
    [call] = domain_calls([entry["input"]])
    assert call.name == entry["name"]
    canonical = stable_repr(call.arguments)
    assert canonical == entry["canonical"]
    assert hex16(fnv1a_64(canonical)) == entry["fnv"]
    assert tool_signature(call) == entry["sig"]


@pytest.mark.parametrize("entry", DATA["batch_signatures"], ids=lambda e: e["signature"][:60])
def test_batch_signature_vector(entry: dict[str, Any]) -> None:
    assert batch_signature(domain_calls(entry["input"])) == entry["signature"]


@pytest.mark.parametrize("entry", DATA["fnv1a_64_text"], ids=lambda e: e["hex"])
def test_fnv_vector(entry: dict[str, Any]) -> None:
    assert hex16(fnv1a_64(entry["text"])) == entry["hex"]
    assert f"{int(entry.get('u64', int(entry['hex'], 16))):016x}" == entry["hex"]


def test_hash_result_content_equality_pattern() -> None:
    entries = DATA["hash_result_content"]
    hashed = [hash_result_content(e["content"]) for e in entries]
    for (a, ha), (b, hb) in itertools.combinations(zip(entries, hashed, strict=True), 2):
        assert (a["hex"] == b["hex"]) == (ha == hb), (a["content"], b["content"])
    # The pattern is not trivial: some entries collide on purpose, most differ.
    hexes = [e["hex"] for e in entries]
    assert len(set(hexes)) < len(hexes)
    for e in entries:
        assert f"{int(e['u64']):016x}" == e["hex"]


def _batch_hash(entry: dict[str, Any]) -> Any:
    calls = domain_calls(entry["calls"])
    answers = [None if a is None else hash_result_content(a) for a in entry["answers"]]
    return batch_results_hash(calls, answers)


def test_batch_results_hash_vectors() -> None:
    entries = DATA["batch_results_hash"]
    hashed = [_batch_hash(e) for e in entries]
    for e, h in zip(entries, hashed, strict=True):
        assert (e["hex"] is None) == (h is None), e
    pairs = [(e, h) for e, h in zip(entries, hashed, strict=True) if h is not None]
    for (a, ha), (b, hb) in itertools.combinations(pairs, 2):
        assert (a["hex"] == b["hex"]) == (ha == hb), (a, b)
    assert any(e["hex"] is None for e in entries)
