"""Zip archives are read within bounds (issue #18): member count, inflated bytes per member and
in total, compression ratio and memory — each refusal names the file and the member."""

from __future__ import annotations

import json
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from tests.fuzz.zipbombs import (
    HEADER,
    MiB,
    write_eval_bomb,
    write_lying_sizes,
    write_many_members,
    write_sample_bomb,
)

from loopscope.formats import ImportLimits, load_file
from loopscope.formats import archive as archive_mod
from loopscope.formats.archive import ArchiveError, count_members, open_archive

SAMPLE = {"id": 1, "epoch": 1, "messages": [
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "function": "bash", "arguments": {"cmd": "ls"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a b"}]}


def _eval(path: Path, samples: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        for name, data in samples.items():
            archive.writestr(name, data)
    return path


def _padded_sample(sample_id: int, size: int) -> bytes:
    """A valid sample of about ``size`` bytes that barely compresses (random-looking text)."""
    import hashlib

    filler = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(size // 64 + 1))
    value = dict(SAMPLE, id=sample_id, metadata={"filler": filler[:size]})
    return json.dumps(value).encode()


def _errors(result) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(p.code, p.message) for p in result.problems if p.severity == "error"]


# --------------------------------------------------------------------------- the review's bomb


def test_the_reviews_bomb_is_refused_at_once_in_little_memory(tmp_path: Path) -> None:
    """0.6 MB on disk, 240 MiB of inflated JSON that parsed into 3.7 GB and took ~35 s."""
    path = write_eval_bomb(tmp_path / "bomb.eval")
    assert path.stat().st_size < 700_000
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = load_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    assert result.sessions == []
    [(code, message)] = _errors(result)
    assert code == "too_large"
    assert "samples/1_epoch_1.json" in message and "max_compression_ratio" in message
    assert all(p.source.startswith(str(path)) for p in result.problems)
    assert elapsed < 5, elapsed
    assert peak < 16 * MiB, peak


def test_a_moderate_ratio_passes_when_the_limit_is_raised(tmp_path: Path) -> None:
    path = write_eval_bomb(tmp_path / "b.eval", member_bytes=2 * MiB)
    refused = load_file(path)
    assert [c for c, _ in _errors(refused)] == ["too_large"]
    allowed = load_file(path, ImportLimits(max_compression_ratio=1000))
    assert len(allowed.sessions) == 1 and not _errors(allowed)


def test_small_members_may_compress_well(tmp_path: Path) -> None:
    """Under 1 MiB inflated, any ratio is fine: it costs nothing."""
    path = write_eval_bomb(tmp_path / "small.eval", member_bytes=900 * 1024)
    result = load_file(path)
    assert len(result.sessions) == 1 and not _errors(result)


# --------------------------------------------------------------------------- each bound


def test_member_count_is_bounded_before_zipfile_reads_the_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_many_members(tmp_path / "many.eval", 300)
    assert count_members(str(path), 10_000) == 301  # header.json too
    assert count_members(str(path), 50) == 301  # the declared count is over the limit
    lying = tmp_path / "lying.eval"  # the end record claims 1 entry: the walk counts them
    data = bytearray(path.read_bytes())
    eocd = data.rfind(b"PK\x05\x06")
    data[eocd + 8: eocd + 12] = (1).to_bytes(2, "little") * 2
    lying.write_bytes(bytes(data))
    assert count_members(str(lying), 50) == 51  # stops counting past the limit

    def no_zipfile(*args: object, **kwargs: object) -> None:
        raise AssertionError("zipfile parsed the central directory")

    monkeypatch.setattr(archive_mod.zipfile, "ZipFile", no_zipfile)
    with pytest.raises(ArchiveError) as caught:
        open_archive(str(path), ImportLimits(max_archive_members=100))
    assert caught.value.limit == "max_archive_members"
    monkeypatch.undo()
    result = load_file(path, ImportLimits(max_archive_members=100))
    assert result.sessions == []
    [(code, message)] = _errors(result)
    assert code == "too_large" and "max_archive_members" in message


def test_member_count_reads_zip64_end_records(tmp_path: Path) -> None:
    path = tmp_path / "z64.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for i in range(70_000):  # past 65,535 entries zipfile writes the zip64 end record
            archive.writestr(f"{i}", b"")
    data = path.read_bytes()
    assert b"PK\x06\x06" in data[-200:]
    assert count_members(str(path), 100_000) == 70_000


def test_member_count_with_a_prefix_before_the_archive(tmp_path: Path) -> None:
    inner = write_many_members(tmp_path / "inner.eval", 5)
    path = tmp_path / "prefixed.zip"
    path.write_bytes(b"#!/bin/sh\nexit 0\n" * 40 + inner.read_bytes())
    assert count_members(str(path), 100) == 6
    with open_archive(str(path)) as archive:
        assert len(archive.names()) == 6


def test_total_inflated_bytes_are_bounded_and_the_rest_reported(tmp_path: Path) -> None:
    samples = {f"samples/{i}_epoch_1.json": _padded_sample(i, 2 * MiB) for i in range(1, 5)}
    path = _eval(tmp_path / "big.eval", samples)
    result = load_file(path, ImportLimits(max_archive_bytes=5 * MiB))
    assert len(result.sessions) == 2
    messages = [m for _, m in _errors(result)]
    assert any("max_archive_bytes" in m and "samples/3_epoch_1.json" in m for m in messages)
    assert any("1 more sample of the archive was not read" in m
               and "samples/4_epoch_1.json" in m for m in messages)


def test_member_size_is_bounded(tmp_path: Path) -> None:
    path = _eval(tmp_path / "m.eval", {"samples/1_epoch_1.json": _padded_sample(1, 3 * MiB),
                                       "samples/2_epoch_1.json": json.dumps(SAMPLE).encode()})
    result = load_file(path, ImportLimits(max_document_bytes=2 * MiB))
    assert len(result.sessions) == 1  # the second sample is still read
    [(code, message)] = _errors(result)
    assert code == "too_large" and "samples/1_epoch_1.json" in message
    assert "max_document_bytes" in message


def test_lying_sizes_are_caught_on_the_bytes_that_come_out(tmp_path: Path) -> None:
    path = write_lying_sizes(tmp_path / "lie.eval", inflated_bytes=8 * MiB)
    with open_archive(str(path), ImportLimits(max_document_bytes=1 * MiB)) as archive:
        [info] = [i for i in archive.members() if i.filename.startswith("samples/")]
        assert info.file_size == 100
        with pytest.raises(ArchiveError) as caught:
            archive.read(info)
        assert archive.inflated <= 1 * MiB + archive_mod.CHUNK_BYTES
    assert caught.value.member == "samples/1_epoch_1.json"
    result = load_file(path)
    assert result.sessions == []
    assert any("samples/1_epoch_1.json" in m for _, m in _errors(result))


def test_memory_check_like_plain_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _eval(tmp_path / "mem.eval", {"samples/1_epoch_1.json": _padded_sample(1, MiB)})
    monkeypatch.setattr(archive_mod, "available_memory", lambda: 4 * MiB)
    result = load_file(path)
    [(code, message)] = _errors(result)
    assert code == "too_large" and "memory_factor" in message and "samples/1_epoch_1" in message


def test_damaged_member_names_the_member(tmp_path: Path) -> None:
    path = _eval(tmp_path / "d.eval", {"samples/1_epoch_1.json": _padded_sample(1, 200_000)})
    data = bytearray(path.read_bytes())
    at = data.find(b"samples/1_epoch_1.json") + len("samples/1_epoch_1.json") + 500
    data[at:at + 64] = bytes(64)  # corrupt the deflate stream
    path.write_bytes(bytes(data))
    result = load_file(path)
    assert result.sessions == []
    assert any("samples/1_epoch_1.json" in m for _, m in _errors(result))


def test_samples_are_parsed_with_the_json_document_rules(tmp_path: Path) -> None:
    """Long strings are cut to max_value_chars as in a plain JSON log."""
    sample = dict(SAMPLE, messages=[*SAMPLE["messages"], {"role": "user", "content": "x" * 5000}])
    path = _eval(tmp_path / "long.eval", {"samples/1_epoch_1.json": json.dumps(sample).encode()})
    result = load_file(path, ImportLimits(max_value_chars=1000))
    assert len(result.sessions) == 1
    assert any(p.code == "value_truncated" for p in result.problems)


def test_a_big_ordinary_archive_still_loads(tmp_path: Path) -> None:
    samples = {f"samples/{i}_epoch_1.json": _padded_sample(i, 300_000) for i in range(1, 11)}
    path = _eval(tmp_path / "ok.eval", samples)
    result = load_file(path)
    assert len(result.sessions) == 10 and not _errors(result)


def test_streamed_bomb_member_is_cut_as_it_inflates(tmp_path: Path) -> None:
    """A member stored with a data descriptor after a streamed write: limits hold while
    inflating even when checked only on the bytes produced."""
    path = tmp_path / "s.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        write_sample_bomb(archive, "samples/1_epoch_1.json", 8 * MiB)
    with open_archive(str(path), ImportLimits(max_compression_ratio=10_000,
                                              max_archive_bytes=3 * MiB)) as archive:
        [info] = archive.members()
        with pytest.raises(ArchiveError) as caught:
            for _ in archive.iter_chunks(info):
                pass
        assert caught.value.limit == "max_archive_bytes"
