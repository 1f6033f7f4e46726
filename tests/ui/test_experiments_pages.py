"""AppTest: labelling, the Compare page and the Sweep page, on a private copy of the samples.

Each test points the app at a temporary copy of ``sample_transcripts/`` (``LOOPSCOPE_SAMPLES``)
so saving labels never touches the repository's ``labels.csv``. A "restart" is a new AppTest
after every Streamlit cache is cleared: only what is in the sidecar on disk survives it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from loopscope.engines import get_engine
from loopscope.experiments.compare import compare
from loopscope.experiments.sweep import build_cells, parse_axis, run_sweep
from loopscope.formats import load_paths
from loopscope.labels import labels_for_sessions, load_labels

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "sample_transcripts"
APP = str(REPO_ROOT / "app.py")
COMPARE = "src/loopscope/ui/pages/compare.py"
SWEEP = "src/loopscope/ui/pages/sweep.py"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if not (SAMPLES / "labels.csv").is_file():
        pytest.skip("sample_transcripts/ with labels.csv not found")
    folder = tmp_path / "samples"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setenv("LOOPSCOPE_SAMPLES", str(folder))
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(folder))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield folder
    st.cache_resource.clear()
    st.cache_data.clear()


def restart() -> None:
    """What a server restart forgets: every cache (the corpus, the labels, the replays)."""
    st.cache_resource.clear()
    st.cache_data.clear()


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.message for e in at.exception]
    return at


def label_radio(at: AppTest, prefix: str) -> Any:
    radios = [r for r in at.radio if r.key and r.key.startswith(f"{prefix}.choice.")]
    assert len(radios) == 1
    return radios[0]


def turn_input(at: AppTest, prefix: str) -> Any:
    inputs = [n for n in at.number_input if n.key and n.key.startswith(f"{prefix}.turn_number.")]
    assert len(inputs) == 1
    return inputs[0]


def sidecar(folder: Path) -> dict[str, tuple[str, int | None]]:
    labels, problems = load_labels(folder / "labels.csv")
    assert not problems
    return {k: (v.label, v.from_turn) for k, v in labels.items()}


def compare_b_repeats_4(at: AppTest) -> AppTest:
    at.slider(key="compare.b.gglib.max_repeated_batch_steps").set_value(4)
    return ok(at.run())


def test_a_comparison_is_in_the_url_and_a_link_reproduces_it(corpus: Path) -> None:
    # (The browser test checks the URL the controls write; here, that a link reproduces it.)
    at = compare_b_repeats_4(open_page(COMPARE))
    shared = AppTest.from_file(APP, default_timeout=120)
    shared.query_params["compare.b.gglib.max_repeated_batch_steps"] = "4"
    ok(shared.run())
    shared.switch_page(COMPARE)
    ok(shared.run())
    assert shared.slider(key="compare.b.gglib.max_repeated_batch_steps").value == 4
    assert shared.slider(key="compare.a.gglib.max_repeated_batch_steps").value == 2
    assert [m.value for m in shared.metric] == [m.value for m in at.metric]


# --------------------------------------------------------------------------- compare


def test_compare_page_lists_what_two_replays_say(corpus: Path) -> None:
    at = compare_b_repeats_4(open_page(COMPARE))
    sessions = load_paths([str(corpus)]).sessions
    engine = get_engine("gglib")
    a = engine.resolve_config(None, []).config
    b = engine.resolve_config(None, [("max_repeated_batch_steps", "4")]).config
    expected = compare("gglib", sessions, a, b)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Gain a refusal"] == str(expected.summary["gained"])
    assert metrics["Lose a refusal"] == str(expected.summary["lost"])
    assert metrics["Refusal moves"] == str(expected.summary["moved"])
    assert metrics["Unchanged"] == str(expected.summary["same"])
    assert expected.summary["lost"] > 0
    table = at.table[-1].value  # a table whose cells wrap: A and B are read whole
    assert list(table["change"]) == [c.change for c in expected]
    assert at.selectbox(key="compare.selected").options  # the changed sessions, to label or open
    assert list(at.selectbox(key="compare.selected").value.split("/"))[-1] == Path(expected.changes[0].source).name


def test_compare_page_links_to_the_session(corpus: Path) -> None:
    at = compare_b_repeats_4(open_page(COMPARE))
    source = at.selectbox(key="compare.selected").value
    links = [el.proto for el in at.get("page_link")]
    # A page link (not st.switch_page) keeps the settings in the URL and adds the session.
    assert any(Path(source).name in unquote(link.query_string) and "session=" in link.query_string
               for link in links), links


def test_compare_use_b_in_the_sidebar(corpus: Path) -> None:
    at = compare_b_repeats_4(open_page(COMPARE))
    at.button(key="compare.b.apply").click()
    ok(at.run())
    assert at.session_state["gglib.max_repeated_batch_steps"] == 4


# --------------------------------------------------------------------------- labelling


def test_a_label_survives_a_rerun_and_a_restart(corpus: Path) -> None:
    at = compare_b_repeats_4(open_page(COMPARE))
    source = at.selectbox(key="compare.selected").value
    name = Path(source).name
    before = sidecar(corpus)[name]
    new_label = "ok" if before[0] == "loop" else "loop"

    label_radio(at, "compare.label").set_value(new_label)
    ok(at.run())
    assert sidecar(corpus)[name][0] == new_label  # saved at once
    assert label_radio(at, "compare.label").value == new_label

    ok(at.run())  # a plain rerun keeps it
    assert label_radio(at, "compare.label").value == new_label

    if new_label == "loop":
        turn_input(at, "compare.label").set_value(1)  # turn 1 as shown: index 0 stored
        ok(at.run())
        assert sidecar(corpus)[name] == ("loop", 0)

    restart()
    again = compare_b_repeats_4(open_page(COMPARE))
    again.selectbox(key="compare.selected").set_value(source)
    ok(again.run())
    assert label_radio(again, "compare.label").value == new_label
    # The other labels were kept, and the repository's own sidecar was never touched.
    assert len(sidecar(corpus)) == len(sidecar(SAMPLES))
    assert sidecar(SAMPLES)[name] == before


def test_clearing_a_label_and_the_loop_start(corpus: Path) -> None:
    at = compare_b_repeats_4(open_page(COMPARE))
    source = at.selectbox(key="compare.selected").value
    name = Path(source).name
    label_radio(at, "compare.label").set_value("loop")
    ok(at.run())
    turn_input(at, "compare.label").set_value(2)  # turn 2 as shown: index 1 stored
    ok(at.run())
    assert sidecar(corpus)[name] == ("loop", 1)
    assert turn_input(at, "compare.label").value == 2
    label_radio(at, "compare.label").set_value("unlabelled")
    ok(at.run())
    assert name not in sidecar(corpus)
    assert turn_input(at, "compare.label").disabled


def test_table_edits_are_saved(corpus: Path) -> None:
    """The table's edits (``st.data_editor`` rows) go to the sidecar, row by row."""
    from loopscope.ui import data_source, labelling

    c = data_source.load_folder(corpus, data_source.SOURCE_SAMPLES)
    sources = [s.source for s in c.sessions]
    i_ok = next(i for i, s in enumerate(sources) if sidecar(corpus).get(Path(s).name, ("",))[0] == "ok")
    i_loop = next(i for i, s in enumerate(sources) if sidecar(corpus).get(Path(s).name, ("",))[0] == "loop")
    changed = labelling.apply_table_edits(c, sources, {
        i_ok: {"label": "real loop", "loop_start_turn": 3},  # turn 3 as shown
        i_loop: {"label": ""},
        9999: {"label": "good work"},  # no such row: ignored
    })
    assert changed == 2
    saved = sidecar(corpus)
    assert saved[Path(sources[i_ok]).name] == ("loop", 2)  # stored as the 0-based index
    assert Path(sources[i_loop]).name not in saved
    assert labelling.current_labels(c)[sources[i_ok]].from_turn == 2
    assert c.labels is labelling.current_labels(c)  # every page sees the same labels
    # Unchanged rows are not rewritten.
    assert labelling.apply_table_edits(c, sources, {i_ok: {"label": "real loop"}}) == 0


# --------------------------------------------------------------------------- sweep


def run_page_sweep(at: AppTest) -> AppTest:
    at.selectbox(key="sweep.gglib.y.key").set_value("max_repeated_batch_steps")
    ok(at.run())
    at.selectbox(key="sweep.gglib.x.key").set_value("max_observation_steps")
    ok(at.run())
    at.number_input(key="sweep.gglib.max_repeated_batch_steps.lo").set_value(1)
    at.number_input(key="sweep.gglib.max_repeated_batch_steps.hi").set_value(4)
    at.number_input(key="sweep.gglib.max_repeated_batch_steps.step").set_value(1)
    at.number_input(key="sweep.gglib.max_observation_steps.lo").set_value(3)
    at.number_input(key="sweep.gglib.max_observation_steps.hi").set_value(15)
    at.number_input(key="sweep.gglib.max_observation_steps.step").set_value(4)
    ok(at.run())
    at.button(key="sweep.run").click()
    return ok(at.run())


def test_sweep_page_heatmaps_equal_the_core_sweep(corpus: Path) -> None:
    at = run_page_sweep(open_page(SWEEP))
    result = at.session_state["_sweep_result"]
    axes = [parse_axis("max_repeated_batch_steps=1:4"), parse_axis("max_observation_steps=3:15:4")]
    sessions = load_paths([str(corpus)]).sessions
    labels, _ = labels_for_sessions([str(corpus)])
    expected = run_sweep("gglib", sessions, build_cells("gglib", axes), labels, axes=axes, workers=1)
    assert [(dict(c.values), c.metrics) for c in result] == [
        (dict(c.values), c.metrics) for c in expected
    ]
    assert len(at.get("plotly_chart")) == 6
    assert any(c.metrics.loops_caught for c in result)


def test_applying_a_sweep_cell_changes_the_settings_and_the_metrics(corpus: Path) -> None:
    at = run_page_sweep(open_page(SWEEP))
    result = at.session_state["_sweep_result"]
    best = result.best()
    at.button(key="sweep.apply_best").click()
    ok(at.run())
    assert at.session_state["gglib.max_repeated_batch_steps"] == best.values["max_repeated_batch_steps"]
    assert at.session_state["gglib.max_observation_steps"] == best.values["max_observation_steps"]
    assert any("Applied" in s.value for s in at.success)
    panel = at.dataframe[0].value  # the metrics panel comes first
    row = panel[panel["Metric"] == "Good sessions refused"].iloc[0]
    assert row["gglib"] == str(best.metrics.false_refusals)

    # Any other cell, picked from the list.
    worst = max(range(len(result)), key=lambda i: result.cells[i].metrics.loops_missed)
    at.selectbox(key="sweep.pick").set_value(worst)
    ok(at.run())
    at.button(key="sweep.apply").click()
    ok(at.run())
    assert at.session_state["gglib.max_repeated_batch_steps"] == result.cells[worst].values["max_repeated_batch_steps"]


def test_clicking_a_heatmap_tile_names_its_cell(corpus: Path) -> None:
    from loopscope.ui.pages import sweep as page

    at = run_page_sweep(open_page(SWEEP))
    result = at.session_state["_sweep_result"]
    fig = page.heatmap(result, "false_refusals", "Good sessions refused", True)
    tiles = fig.data[0]
    for i, cell in enumerate(result):
        point = {"x": tiles.x[i], "y": tiles.y[i], "customdata": list(tiles.customdata[i])}
        assert page._point_values(result, point) == dict(cell.values)
        assert page.cell_settings(result, cell.values) == {
            f"gglib.{k}": v for k, v in cell.values.items()
        }
    # Without customdata, x/y still identify the cell.
    assert page._point_values(result, {"x": "7", "y": "2"}) == {
        "max_repeated_batch_steps": 2, "max_observation_steps": 7,
    }


def test_the_sweep_page_says_when_labels_changed(corpus: Path) -> None:
    at = run_page_sweep(open_page(SWEEP))
    assert not any("labels changed" in w.value for w in at.warning)
    (corpus / "labels.csv").write_text("source,label,from_turn\n")
    ok(at.run())
    assert any("labels changed" in w.value for w in at.warning)
    panel = at.dataframe[0].value  # the metrics panel comes first
    assert panel[panel["Metric"] == "Loops caught"].iloc[0]["gglib"] == "0"


def test_a_sweep_link_runs_the_same_sweep(corpus: Path) -> None:
    at = run_page_sweep(open_page(SWEEP))
    ran = at.session_state["_sweep_result"]
    shared = AppTest.from_file(APP, default_timeout=120)
    for key, value in {
        "sweep.engine": "gglib", "sweep.gglib.y.key": "max_repeated_batch_steps",
        "sweep.gglib.x.key": "max_observation_steps",
        "sweep.gglib.max_repeated_batch_steps.lo": "1", "sweep.gglib.max_repeated_batch_steps.hi": "4",
        "sweep.gglib.max_observation_steps.lo": "3", "sweep.gglib.max_observation_steps.hi": "15",
        "sweep.gglib.max_observation_steps.step": "4", "sweep": "run",
    }.items():
        shared.query_params[key] = value
    ok(shared.run())
    shared.switch_page(SWEEP)
    ok(shared.run())
    again = shared.session_state["_sweep_result"]  # no click: the link ran it
    assert [(dict(c.values), c.metrics) for c in again] == [(dict(c.values), c.metrics) for c in ran]
    assert len(shared.get("plotly_chart")) == 6
    best = " ".join(m.value for m in shared.markdown if "Best by the labels" in m.value)
    assert "fewest wrong outcomes on labelled sessions" in best


# --------------------------------------------------------------------------- upgrade impact

UPGRADE = "src/loopscope/ui/pages/upgrade.py"


def _upgrade(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    ok(at.run())
    at.switch_page(UPGRADE)
    return ok(at.run())


def test_the_upgrade_page_says_what_moving_to_another_release_changes(corpus: Path) -> None:
    from loopscope.engines import get_engine
    from loopscope.experiments.upgrade import release_note, settings_move, upgrade_impact
    from loopscope.labels import labels_for_sessions

    engine = get_engine("openclaw")
    old, new = engine.versions[0], engine.versions[-1]
    tuned = {"warningThreshold": 3, "criticalThreshold": 5, "globalCircuitBreakerThreshold": 7}
    at = _upgrade({"upgrade.b": new, **{f"openclaw.{k}": str(v) for k, v in tuned.items()}})
    sessions = load_paths([str(corpus)]).sessions
    labels, _ = labels_for_sessions([str(corpus)])
    config_a = engine.config(tuned, old).config
    a = [engine.replay(s, config_a).first_refusal for s in sessions]
    b_values = {k: v for k, v in tuned.items()
                if k in {s.name for s in engine.settings_for(new)}}
    config_b = engine.config(b_values, new).config
    b = [engine.replay(s, config_b).first_refusal for s in sessions]
    impact = upgrade_impact(a, b, [getattr(labels.get(s.source), "label", None) for s in sessions])
    move = settings_move(engine.settings_for(old), engine.values(config_a),
                         engine.settings_for(new), engine.values(config_b))
    paragraph = at.code[0].value
    assert paragraph == release_note(impact, "OpenClaw", old, new, move)
    # the cause first: the configured thresholds the new release ignores, and its fixed ones
    assert paragraph.startswith(
        f"OpenClaw {new} ignores warningThreshold = 3, criticalThreshold = 5 and "
        "globalCircuitBreakerThreshold = 7 and uses fixed values instead (WARNING_THRESHOLD = "
        "10, CRITICAL_THRESHOLD = 20 and GLOBAL_CIRCUIT_BREAKER_THRESHOLD = 30); of the 10 "
        f"settings of {old} only enabled still applies. Moving OpenClaw from {old} to {new} "
        "changes ")
    metrics = {m.label: int(m.value) for m in at.metric}
    assert metrics["No longer refused"] == len(impact.no_longer_refused)
    assert metrics["Newly refused"] == len(impact.newly_refused)
    # the settings box says in words what still applies in B, not "reads 1 of the 10"
    (box,) = [re.sub(r"\\(.)", r"\1", e.label) for e in at.expander
              if e.label.startswith("Settings")]
    assert box == f"Settings: of the 10 settings of {old}, only enabled still applies in {new}"
    # the sessions that change: every one, in words, under headings that name the releases
    (table,) = at.table
    frame = table.value.rename(columns=lambda c: re.sub(r"\\(.)", r"\1", c)).map(
        lambda c: re.sub(r"\\(.)", r"\1", c))
    assert list(frame.columns) == ["session", "what changes", f"under {old} (A)",
                                   f"under {new} (B)", "label"]
    assert len(frame) == len(impact.changed) > 0
    names = list(frame["session"])
    for column in (f"under {old} (A)", f"under {new} (B)"):
        assert all(c == "not refused" or re.fullmatch(r"call \d+ \(turn \d+\)", c)
                   for c in frame[column]), list(frame[column])
    assert at.selectbox(key="upgrade.open").options == names
    # the CLI prints the same paragraph
    from click.testing import CliRunner

    from loopscope.cli import main
    args = ["compare", str(corpus), "--engine", "openclaw", "--a-version", old,
            "--b-version", new, *[x for k, v in tuned.items() for x in ("--set", f"{k}={v}")]]
    out = CliRunner().invoke(main, args).stdout
    assert paragraph in out.splitlines()


def test_an_upgrade_that_changes_nothing_says_so(corpus: Path) -> None:
    at = _upgrade({"upgrade.b": "2026.7.35"})
    assert "changes nothing for these" in at.code[0].value
    assert any("at the same point under" in s.value for s in at.success)


def test_heatmap_tiles_are_a_heatmap_under_small_click_targets(corpus: Path) -> None:
    from loopscope.ui.pages import sweep as page

    at = run_page_sweep(open_page(SWEEP))
    result = at.session_state["_sweep_result"]
    current = dict(result.cells[5].values)
    fig = page.heatmap(result, "loops_missed", "Loops missed", True, current)
    targets, tiles = fig.data[0], fig.data[1]
    assert tiles.type == "heatmap" and targets.type == "scatter"
    assert list(tiles.z) == [float(c.metrics.loops_missed) for c in result]
    assert (list(tiles.x), list(tiles.y)) == (list(targets.x), list(targets.y))
    assert targets.marker.size <= 8 and fig.layout.hoverdistance == -1
    (outline,) = fig.layout.shapes
    xa, ya = result.axes[1], result.axes[0]
    col, row = list(xa.values).index(current[xa.key]), list(ya.values).index(current[ya.key])
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (col - 0.5, col + 0.5,
                                                                row - 0.5, row + 0.5)


def test_the_pages_read_sizes_from_the_heads_not_every_session(
        corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above a few thousand sessions a corpus keeps no session in memory: walking
    ``corpus.sessions`` reads every file again (~40 s at 20,000). The sweep (its run and its
    label table and metrics), compare (its metrics) and export pages read each session's
    identity and size from the heads instead (the verdict CSV takes heads: mypy holds it to
    that); opening one session stays allowed."""
    from loopscope.corpus import CorpusSessions

    made: list[int] = []
    walked: list[str] = []
    original_init = CorpusSessions.__init__

    def init(self: Any, *args: Any) -> None:
        made.append(1)
        original_init(self, *args)

    def walk(self: Any) -> Any:
        walked.append("all sessions")
        raise AssertionError("a page walked every session of the corpus")

    monkeypatch.setattr(CorpusSessions, "__init__", init)
    monkeypatch.setattr(CorpusSessions, "__iter__", walk)
    at = run_page_sweep(open_page(SWEEP))
    assert made, "the samples were not loaded as a corpus that re-reads its files"
    assert at.session_state["_sweep_result"] is not None
    ok(compare_b_repeats_4(open_page(COMPARE)))
    ok(open_page("src/loopscope/ui/pages/export.py"))
    assert walked == []


def test_the_label_editor_shows_an_empty_cell_not_none(corpus: Path) -> None:
    """An unlabelled session's loop start (a missing value) is an empty cell: the grid writes
    "None" in a missing cell unless the editor is given a placeholder."""
    at = open_page(SWEEP)
    (editor,) = [d for d in at.get("dataframe") if d.proto.editing_mode]
    assert editor.proto.HasField("placeholder") and editor.proto.placeholder == ""
    assert editor.value["loop_start_turn"].isna().any()  # (there are empty cells to show)


@pytest.mark.parametrize(("page", "title"), [
    (COMPARE, "Compare two configurations"),
    (SWEEP, "Labels, metrics and sweeps"),
    (UPGRADE, "Upgrade impact"),
])
def test_with_no_session_a_page_says_so_under_its_title(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: str, title: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("LOOPSCOPE_SAMPLES", str(empty))
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(empty))
    restart()
    try:
        at = open_page(page)
        assert [t.value for t in at.title] == [title]
        assert [i.value for i in at.main.info] == ["No sessions are loaded."]
        assert not [c for c in at.segmented_control if c.key and c.key.endswith(".engine")]
    finally:
        restart()
