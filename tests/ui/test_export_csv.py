"""The verdict report CSV (Export page) holds no cell a spreadsheet would run as a formula
(issue #18): session ids and sources come from recordings and file names."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from loopscope import csvsafe
from loopscope.corpus import head_of
from loopscope.engines import get_engine
from loopscope.formats import load_file
from loopscope.ui import export

HOSTILE = ['=HYPERLINK("https:"&"example.invalid","x")', "+1+cmd", "-1+cmd", "@SUM(1)"]


def test_verdict_csv_cells_are_neutral_and_readable(tmp_path: Path) -> None:
    sessions = []
    for i, name in enumerate(HOSTILE):
        body = {"messages": [{"role": "user", "content": "go"},
                             {"role": "assistant", "content": None, "tool_calls": [
                                 {"id": "c", "type": "function",
                                  "function": {"name": "run", "arguments": "{}"}}]},
                             {"role": "tool", "tool_call_id": "c", "content": "ok"}],
                "metadata": {"id": name}}
        path = tmp_path / f"{name.replace('/', '_')}.{i}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        sessions.extend(load_file(path).sessions)
    assert len(sessions) == len(HOSTILE)
    engine = get_engine("gglib")
    replays = {"gglib": [engine.replay(s, engine.default_config()) for s in sessions]}
    text = export.verdict_report_csv([head_of(s) for s in sessions], replays,
                                     {s.source: "=cmd" for s in sessions})
    rows = list(csv.reader(io.StringIO(text)))
    cells = [c for row in rows for c in row]
    assert not [c for c in cells if c.startswith(csvsafe.TRIGGERS)]
    sources = [csvsafe.restore(row[1]) for row in rows[1:]]
    assert sources == [s.source for s in sessions]  # readable: one quote in front, no more
    label = rows[0].index("label")
    assert all(row[label] == "'=cmd" for row in rows[1:])
