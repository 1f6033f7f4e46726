"""The public parity sets (``../shared/reference/parity/``: sessions, configurations and the
real code's outputs) through the dashboard's path: each set prepared into a table as the
on-disk cache holds it, one batch run (``run_many``) per configuration; every session's first
refusal and its refusal and warning counts are the real implementation's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopscope.engines import get_engine
from loopscope.formats import load_paths

SETS = {"gglib": ("gglib", None), "openclaw": ("openclaw", None),
        "openclaw-2026.7.35": ("openclaw", "2026.7.35"),
        "openclaw-2026.9.6": ("openclaw", "2026.9.6"),
        "gemini-cli": ("gemini-cli", None), "openhands": ("openhands", None),
        "qwen-code": ("qwen-code", None)}
IN_REPOSITORY = {"qwen-code": Path(__file__).parents[1] / "data" / "parity" / "qwen-code"}
"""Sets kept in this repository (``tests/data/parity``) rather than the shared reference."""


def _pairs(config: dict[str, Any]) -> list[tuple[str, str]]:
    return [(key, value) for key, _, value in (p.partition("=") for p in config.get("set", []))]


@pytest.mark.parametrize("name", sorted(SETS))
def test_batch_runs_over_a_table_equal_the_real_code(name: str,
                                                     request: pytest.FixtureRequest) -> None:
    folder = IN_REPOSITORY.get(name) or request.getfixturevalue("reference_dir") / "parity" / name
    if not folder.is_dir():
        pytest.skip(f"parity set not found at {folder}")
    engine, version = SETS[name]
    eng = get_engine(engine)
    sessions = load_paths([str(folder / "sessions")]).sessions
    spec = eng.table_spec(version)
    assert spec is not None
    table = spec.open(dict(spec.encode([eng.prepare(s, version) for s in sessions])))
    by_name = {Path(s.source).name: i for i, s in enumerate(sessions)}
    compared = refused = 0
    for config_doc in json.loads((folder / "configs.json").read_text())["configs"]:
        config = eng.resolve_config(None, _pairs(config_doc), version=version).config
        columns = eng.run_many(table, config)
        for line in (folder / "expected" / f"{config_doc['name']}.jsonl").read_text().splitlines():
            want = json.loads(line)
            i = by_name[Path(want["source"]).name]
            first = columns.first_refusal(i)
            expected = want["first_refusal"]
            assert (None if first is None else (first.turn, first.call, first.detector)) == (
                None if expected is None else (expected["turn"], expected["call"],
                                               expected["detector"])), (config_doc["name"], i)
            verdicts = [step.get("verdict") for step in want["steps"]]
            assert int(columns.refusal_counts[i]) == verdicts.count("refuse")
            assert int(columns.warning_counts[i]) == verdicts.count("warn")
            compared += 1
            refused += expected is not None
    assert compared >= 80 and refused  # (the set is there, and refuses something)
