"""Data in: folder confinement, upload storage, the corpus cache, and config documents."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

from loopscope import config_io
from loopscope.engines import ConfigError, get_engine
from loopscope.ui import data_source, gc_policy, settings, state

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_transcripts"


def test_confine_accepts_paths_inside_the_roots(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert data_source.confine(str(tmp_path / "a"), [tmp_path]) == (tmp_path / "a").resolve()


@pytest.mark.parametrize("text", ["/etc", "/", "..", "../../etc/passwd", "~", ""])
def test_confine_refuses_paths_outside_the_roots(tmp_path: Path, text: str) -> None:
    with pytest.raises(data_source.PathNotAllowed):
        data_source.confine(text, [tmp_path / "root"])


def test_confine_refuses_dot_dot_and_symlink_escapes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(data_source.PathNotAllowed):
        data_source.confine(str(root / ".." / "outside"), [root])
    with pytest.raises(data_source.PathNotAllowed):
        data_source.confine(str(root / "link"), [root])


def test_confine_does_not_reveal_whether_an_outside_path_exists(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(data_source.PathNotAllowed) as a:
        data_source.confine(str(tmp_path), [root])
    with pytest.raises(data_source.PathNotAllowed) as b:
        data_source.confine(str(tmp_path / "does-not-exist"), [root])
    assert str(a.value) == str(b.value)


def test_allowed_roots_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", f"{tmp_path}{os.pathsep}{tmp_path / 'x'}")
    assert data_source.allowed_roots() == [tmp_path.resolve(), (tmp_path / "x").resolve()]
    monkeypatch.delenv("LOOPSCOPE_ALLOWED_ROOTS")
    assert Path.cwd().resolve() in data_source.allowed_roots()


def test_a_scan_skips_files_whose_real_path_leaves_the_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text('{"messages": []}')
    (root / "ok.json").write_text('{"messages": []}')
    (root / "escape.json").symlink_to(secret)
    (root / "sub").mkdir()
    (root / "sub" / "deep_escape.json").symlink_to(secret)
    (root / "sub" / "alias.json").symlink_to(root / "ok.json")  # stays inside: kept
    (root / "outside_dir").symlink_to(tmp_path, target_is_directory=True)  # never followed
    files, ignored = data_source.scan_files(root, [root])
    assert sorted(Path(p).relative_to(root).as_posix() for p, _ in files) == ["ok.json", "sub/alias.json"]
    assert ignored >= 2


def test_uploads_are_stored_under_generated_names_in_the_folder(tmp_path: Path) -> None:
    hostile = "../../../etc/passwd\n\u202e.json"
    stored = data_source.store_upload(b'{"messages": []}', hostile, str(tmp_path))
    p = Path(stored.path)
    assert p.parent == tmp_path
    assert p.name.startswith("upload-") and p.suffix == ".json"
    assert p.read_bytes() == b'{"messages": []}'
    assert stored.original_name == hostile
    again = data_source.store_upload(b'{"messages": []}', "other.json", str(tmp_path))
    assert again.path == stored.path  # content-addressed: the same bytes, the same file
    assert data_source.safe_extension("x.exe") == ".json"
    assert data_source.safe_extension("a.JSONL") == ".jsonl"


def test_a_corpus_is_built_with_prepared_sessions_and_labels() -> None:
    targets, _ignored = data_source.scan_files(SAMPLES, [SAMPLES.resolve()])
    corpus = data_source.build_corpus([(p, not scanned) for p, scanned in targets], fingerprint="t",
                               origin="samples", root=str(SAMPLES))
    assert len(corpus.sessions) >= 10
    for name in state.engines():
        assert len(corpus.prepared(get_engine(name))) == len(corpus.sessions)
    assert corpus.labels  # samples ship labelled
    src = next(s.source for s in corpus.sessions if s.source.endswith("write_loop_refused_at_third_batch.json"))
    assert corpus.display(src) == "write_loop_refused_at_third_batch.json"


def test_the_fingerprint_changes_when_a_file_changes(tmp_path: Path) -> None:
    f = tmp_path / "a.json"
    f.write_text("{}")
    before = data_source.fingerprint_files([f])
    f.write_text('{"x": 1}')
    os.utime(f, ns=(1, 1))
    assert data_source.fingerprint_files([f]) != before


def test_problems_are_sorted_errors_first() -> None:
    from loopscope.model import Problem

    ps = [Problem("b", 1, None, "info", "i", "m"), Problem("a", 2, None, "error", "e", "m"),
          Problem("a", 1, None, "warning", "w", "m")]
    assert [p.severity for p in data_source.problems_sorted(ps)] == ["error", "warning", "info"]


# --------------------------------------------------------------------------- loading config files


def test_an_openclaw_config_with_agents_sets_the_openclaw_controls_only() -> None:
    doc = {
        "tools": {"loopDetection": {"warningThreshold": 8}},
        "agents": {"list": [{"id": "safe-runner", "tools": {"loopDetection": {
            "enabled": True, "warningThreshold": 8, "criticalThreshold": 16}}}]},
    }
    assert config_io.engines_addressed(doc) == ["openclaw"]
    values, notes = settings.document_values(doc, "safe-runner")
    assert values["openclaw.warningThreshold"] == 8
    assert values["openclaw.criticalThreshold"] == 16
    assert not any(k.startswith("gglib.") for k in values)
    values, notes = settings.document_values(doc, None)
    assert values["openclaw.criticalThreshold"] == 20
    assert any("leaves the rolling detectors off" in n for n in notes)


def test_a_loopscope_document_sets_both_engines_with_notices() -> None:
    doc = {"gglib": {"max_observation_steps": None, "max_stagnation_steps": 0,
                     "observation_tools": ["read_file", ""]},
           "openclaw": {"tools": {"loopDetection": {"enabled": True, "warningThreshold": 6,
                                                    "criticalThreshold": 4}}}}
    values, notes = settings.document_values(doc)
    assert values["gglib.max_observation_steps"] == state.OFF
    assert values["gglib.max_stagnation_steps"] == 1  # clamped, and said so
    assert state.patterns_from_text(values["gglib.observation_tools"]) == ("read_file", "")
    assert values["openclaw.criticalThreshold"] == 7
    text = " ".join(notes)
    assert "max_stagnation_steps" in text
    assert "OpenClaw would refuse to load this config" in text


def test_a_document_for_neither_engine_is_refused() -> None:
    with pytest.raises(ConfigError):
        settings.document_values({"hello": 1})


def test_patterns_text_round_trip() -> None:
    pats = ("read_file", "", "a,b")
    assert state.patterns_from_text(state.patterns_to_text(pats)) == pats


def test_an_edited_labels_file_is_reread_without_reimporting_the_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    folder = tmp_path / "samples"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    first = data_source.load_folder(folder, "folder")
    name = "write_loop_refused_at_third_batch.json"
    source = next(s.source for s in first.sessions if s.source.endswith(name))
    assert first.labels[source].label == "loop"
    labels_csv = folder / "labels.csv"
    labels_csv.write_text(labels_csv.read_text().replace(f"{name},loop,2", f"{name},ok,"))
    os.utime(labels_csv, ns=(10**18, 10**18))
    second = data_source.load_folder(folder, "folder")
    assert second is first, "a label change must not re-import and re-prepare the corpus"
    assert second.labels[source].label == "ok"


def test_a_folder_is_rescanned_only_after_a_few_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slider moves rerun the script: the folder's scan and fingerprint are reused for
    ``_SCAN_TTL_SECONDS``, and a file added to it shows up once they expire."""
    import shutil

    folder = tmp_path / "samples"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    clock = [1000.0]
    monkeypatch.setattr(data_source.time, "monotonic", lambda: clock[0])
    first = data_source.load_folder(folder, "folder")
    shutil.copy(SAMPLES / "write_loop_refused_at_third_batch.json", folder / "added_copy.json")
    clock[0] += data_source._SCAN_TTL_SECONDS - 1
    assert data_source.load_folder(folder, "folder") is first
    clock[0] += 2
    later = data_source.load_folder(folder, "folder")
    assert later is not first
    assert len(later.sessions) == len(first.sessions) + 1


def test_a_large_folder_is_rescanned_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From ``_BACKGROUND_RESCAN_FROM`` files, an expired scan is served once more while a
    thread scans again; the next load sees the change."""
    import shutil

    folder = tmp_path / "samples"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setattr(data_source, "_BACKGROUND_RESCAN_FROM", 1)
    # (A collector of its own: the app's remembers the runs of earlier tests, and the clock
    # below is frozen.)
    monkeypatch.setattr(gc_policy, "_collector", gc_policy.IdleCollector(0.01))
    clock = [5000.0]
    monkeypatch.setattr(data_source.time, "monotonic", lambda: clock[0])
    first = data_source.load_folder(folder, "folder")
    shutil.copy(SAMPLES / "write_loop_refused_at_third_batch.json", folder / "added_copy.json")
    clock[0] += data_source._SCAN_TTL_SECONDS + 1
    assert data_source.load_folder(folder, "folder") is first  # served while the thread scans
    for thread in [t for t in threading.enumerate() if t.name == "loopscope-rescan"]:
        thread.join(10)
    later = data_source.load_folder(folder, "folder")
    assert later is not first and len(later.sessions) == len(first.sessions) + 1


def test_a_background_rescan_waits_until_the_app_is_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rescan of a large folder is most of a second of Python at 100,000 files: started
    beside a slider move (the run that found the scan expired), it took the interpreter from
    that move. It waits for the run to end and the app to be idle, as the idle work does."""
    import shutil
    import time

    folder = tmp_path / "samples"
    shutil.copytree(SAMPLES, folder)
    monkeypatch.setenv("LOOPSCOPE_ALLOWED_ROOTS", str(tmp_path))
    monkeypatch.setattr(data_source, "_BACKGROUND_RESCAN_FROM", 1)
    collector = gc_policy.IdleCollector(0.2)
    monkeypatch.setattr(gc_policy, "_collector", collector)
    scans: list[float] = []
    scan = data_source.scan_files
    monkeypatch.setattr(data_source, "scan_files",
                        lambda *a: scans.append(time.monotonic()) or scan(*a))
    first = data_source.load_folder(folder, "folder")
    assert len(scans) == 1
    monkeypatch.setattr(data_source, "_SCAN_TTL_SECONDS", 0.0)
    begun, release = threading.Event(), threading.Event()

    def run() -> None:  # the script run of the slider move
        collector.before_run()
        begun.set()
        assert data_source.load_folder(folder, "folder") is first  # the scan expired
        release.wait(5)
        collector.after_run()

    thread = threading.Thread(target=run)
    thread.start()
    assert begun.wait(5)
    time.sleep(0.3)
    assert len(scans) == 1  # not while the run is under way
    release.set()
    thread.join(5)
    ended = collector._last_run_ended
    for rescan in [t for t in threading.enumerate() if t.name == "loopscope-rescan"]:
        rescan.join(10)
    assert len(scans) == 2 and scans[1] - ended >= 0.2  # once idle for the idle delay


def test_a_scan_and_a_fingerprint_give_way_every_so_many_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between files, a scan gives way (a no-op unless it is idle work): a background rescan
    of a large folder then never holds the interpreter for long."""
    from loopscope import background

    for n in range(7):
        (tmp_path / f"s{n}.json").write_text("{}")
    monkeypatch.setattr(background, "GIVE_WAY_EVERY", 2)
    calls: list[str] = []
    monkeypatch.setattr(background, "_hook", lambda: calls.append("way"))
    found, _ignored = data_source.scan_files(tmp_path, [tmp_path])
    assert len(found) == 7 and len(calls) == 3
    data_source.fingerprint_files([p for p, _ in found])
    assert len(calls) == 3 + 3


def test_display_names_are_computed_once_per_source() -> None:
    corpus = data_source.Corpus(fingerprint="t", origin="folder", root="/data", report=None,  # type: ignore[arg-type]
                         sessions=[])
    shown = corpus.display("/data/sub/a\x1b.json#2")
    assert shown == corpus.display("/data/sub/a\x1b.json#2")
    assert "\x1b" not in shown and shown.startswith("sub/a") and shown.endswith("#2")
    assert corpus._displayed == {"/data/sub/a\x1b.json#2": shown}


def _samples_corpus() -> data_source.Corpus:
    targets, _ignored = data_source.scan_files(SAMPLES, [SAMPLES.resolve()])
    return data_source.build_corpus([(p, not scanned) for p, scanned in targets], fingerprint="t",
                             origin="samples", root=str(SAMPLES))


@pytest.mark.parametrize("by", ["refusals", "label", "length", "name"])
@pytest.mark.parametrize("engines", [["gglib"], ["openclaw"], ["gglib", "openclaw"]])
def test_the_overview_builds_rows_only_for_the_sessions_it_shows(by: str, engines: list[str]) -> None:
    from loopscope.ui import charts, page_helpers

    corpus = _samples_corpus()
    results = {e: state.run_all(e, corpus, state.resolve(e, state.default_values()).config)
               for e in engines}
    every_row = charts.sort_rows(page_helpers.overview_rows(corpus, results), by, engines)
    order = page_helpers.overview_order(corpus, results, by)
    assert page_helpers.overview_rows(corpus, results, order[:5]) == every_row[:5]
    assert page_helpers.overview_rows(corpus, results, order) == every_row
    if by == "refusals":  # the samples refuse in both engines: the refused come first
        assert every_row[0].replays[engines[0]].refused


def test_import_problem_counts_are_the_reports() -> None:
    corpus = _samples_corpus()
    severities = [p.severity for p in corpus.report.problems]
    assert corpus.import_problem_counts == (severities.count("error"), severities.count("warning"))
