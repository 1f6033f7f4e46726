"""What leaves the dashboard: verdict exports that record their settings and never a server
path, and the standalone HTML report (explanations, static timelines, settings; no network;
every recorded string escaped)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from loopscope.corpus import build_corpus
from loopscope.engines import engine_names, get_engine
from loopscope.formats import expand_paths
from loopscope.ui import export, page_helpers, report

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_transcripts"
MARK = "attacker.invalid"
HOSTILE = f'</script><script>alert(1)</script><img src="https://{MARK}/x.png">&amp;'


def _corpus(folder: Path) -> Any:
    targets, _ = expand_paths([str(folder)])
    return build_corpus([(p, not s) for p, s in targets], fingerprint="t", origin="folder",
                        root=str(folder))


@pytest.fixture(scope="module")
def samples() -> Any:
    return _corpus(SAMPLES)


def _replays(corpus: Any) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    configs = {n: get_engine(n).default_config() for n in engine_names()}
    return ({n: [get_engine(n).replay(s, configs[n]) for s in corpus.sessions] for n in configs},
            configs)


def test_the_verdict_csv_records_its_settings_counts_from_one_and_names_no_server_path(
        samples: Any) -> None:
    replays, configs = _replays(samples)
    names = {s.source: samples.display(s.source) for s in samples.sessions}
    text = export.verdict_report_csv(samples.heads, replays, {}, configs, names)
    assert str(SAMPLES) not in text and str(ROOT) not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(samples.sessions) * len(configs)
    for row in rows:
        engine = get_engine(row["engine"])
        assert json.loads(row["settings"]) == engine.settings_document(configs[row["engine"]])
        assert row["engine_version"] == engine.version_of(configs[row["engine"]])
        assert not row["source"].startswith("/")
    refused = next(r for r in rows if r["refused"] == "yes" and r["first_refusal_call"])
    session = next(i for i, s in enumerate(samples.sessions)
                   if names[s.source] == refused["source"])
    first = replays[refused["engine"]][session].first_refusal
    assert (int(refused["first_refusal_turn"]), int(refused["first_refusal_call"])) == (
        first.turn + 1, first.call + 1)
    sizes = {(names[s.source], str(len(s.calls)), str(len(s.turns))) for s in samples.sessions}
    assert {(r["source"], r["calls"], r["turns"]) for r in rows} == sizes


def test_the_verdict_jsonl_is_replays_output_with_settings_and_relative_sources(
        samples: Any) -> None:
    replays, configs = _replays(samples)
    names = {s.source: samples.display(s.source) for s in samples.sessions}
    lines = [json.loads(x) for x in export.verdict_report_jsonl(replays, configs, names).splitlines()]
    assert len(lines) == len(samples.sessions) * len(configs)
    for line in lines:
        assert not line["source"].startswith("/") and line["source"] in names.values()
        assert line["settings"] == get_engine(line["engine"]).settings_document(
            configs[line["engine"]])
        assert {"steps", "first_refusal", "session"} <= set(line)


def _hostile_session(folder: Path) -> Path:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(6):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": HOSTILE, "arguments": json.dumps({"q": HOSTILE})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": HOSTILE})
    path = folder / "hostile <b>name<i>.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    return path


def _report_for(corpus: Any) -> str:
    replays, configs = _replays(corpus)
    engines = list(configs)
    parts = [report.session_part(corpus, s, i, engines, {e: replays[e][i] for e in engines},
                                 configs, "ok", None)
             for i, s in enumerate(corpus.sessions)]
    return report.session_report_html(parts, title=f"report {HOSTILE}",
                                      settings=report.settings_part(engines, configs))


def test_the_report_escapes_every_recorded_string_and_fetches_nothing(tmp_path: Path) -> None:
    _hostile_session(tmp_path)
    corpus = _corpus(tmp_path)
    html_text = _report_for(corpus)
    assert "alert(1)</script>" not in html_text
    assert f'<img src="https://{MARK}' not in html_text
    assert "<b>name<i>" not in html_text and "&lt;b&gt;name&lt;i&gt;" in html_text
    # Scripts: plotly.js once, and one per timeline and per legend; nothing from outside.
    figures = 2 * len(corpus.sessions) * len(engine_names())
    assert html_text.count("<script") == 1 + figures
    assert not re.search(r"""<(script|img|link|iframe)[^>]*\s(src|href)\s*=\s*["']?https?:""",
                         html_text, re.IGNORECASE)
    assert "Content-Security-Policy" in html_text and "default-src 'none'" in html_text
    assert "staticPlot" in html_text


def test_the_report_explains_each_guard_with_the_settings_used(samples: Any) -> None:
    replays, configs = _replays(samples)
    engines = list(configs)
    i = next(i for i, s in enumerate(samples.sessions)
             if Path(s.source).name == "quiet_poll_refused_at_observation_ceiling.json")
    s = samples.sessions[i]
    part = report.session_part(samples, s, i, engines, {e: replays[e][i] for e in engines},
                               configs, page_helpers.label_of(samples, s.source), None)
    refused = [g for g in part.engines if "would have refused" in g.verdict]
    assert refused and refused[0].headline and "false refusal" in refused[0].meaning
    assert all(g.figure is not None and g.legend is not None for g in part.engines)
    text = report.session_report_html([part], title="t", settings=report.settings_part(engines, configs))
    for name in engines:
        for spec in get_engine(name).settings:
            assert spec.label.replace("&", "&amp;") in text
    assert report.file_name("a/b <c>.json") == "loopscope-report-a-b-c-.json.html"
