"""The snapshot's format against Arrow's: what reading a kept corpus back costs in each.

    python benchmarks/snapshot_format.py SNAPSHOT.npz [--runs 5]

``SNAPSHOT.npz`` is a snapshot of the on-disk cache (``loopscope cache info`` says where;
``loopscope prepare FOLDER`` makes one). Its arrays are written again, in a scratch folder, as
Arrow IPC files (one per array, uncompressed: what Arrow memory-maps) and as Parquet files
(Arrow's default compression, and none), and each form is read back whole, in this process,
``--runs`` times (the page cache is warm after the first: a reopen reads a snapshot the
machine wrote or read before), beside the snapshot itself read by ``numpy.load`` and by
loopscope's reader (:class:`loopscope.cache.KeptCorpus`). "Checked" adds a CRC-32 of every array's bytes, as the
snapshot's reader does for each member (zip's own check), so the forms are compared doing the
same work. The byte pools the dashboard reads piece by piece (``crc.*`` beside them) are read
whole here too. Prints a table and one ``SNAPSHOT_FORMAT {...}`` JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np


def read_npz(path: Path) -> dict[str, Any]:
    """Every array, as the snapshot's reader reads a member (``numpy.load`` of the zip: zip
    checks each member's CRC-32 as it reads it)."""
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def read_kept(path: Path, names: list[str]) -> dict[str, Any]:
    """The arrays ``names`` as the dashboard reads them back (:class:`loopscope.cache.KeptCorpus`:
    one ``pread`` and one CRC-32 a member)."""
    from loopscope import cache

    archive = np.load(path, allow_pickle=False)
    try:
        return cache.KeptCorpus(path.stem, archive, {}).read(names)
    finally:
        archive.close()


def read_npz_names(path: Path, names: list[str]) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in names}


def write_arrow(arrays: dict[str, Any], folder: Path) -> None:
    import pyarrow as pa

    folder.mkdir(parents=True, exist_ok=True)
    for name, value in arrays.items():
        # (Arrow packs booleans into bits: kept as bytes, as a port of the snapshot would.)
        table = pa.table({"v": pa.array(value.view(np.uint8) if value.dtype == bool else value)})
        with pa.OSFile(str(folder / f"{name}.arrow"), "wb") as sink, \
                pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)


def read_arrow(folder: Path, checked: bool) -> dict[str, Any]:
    import pyarrow as pa

    out = {}
    for path in sorted(folder.glob("*.arrow")):
        with pa.memory_map(str(path), "r") as source:
            column = pa.ipc.open_file(source).read_all().column(0)
            value = column.to_numpy() if column.num_chunks != 1 else \
                column.chunk(0).to_numpy(zero_copy_only=True)
            # Touch every byte (memory-mapped data is read when used), checked or not.
            out[path.stem] = zlib.crc32(value.data.cast("B")) if checked else \
                np.bitwise_xor.reduce(value.view(np.uint8)) if value.size else 0
    return out


def write_parquet(arrays: dict[str, Any], folder: Path, compression: str | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for name, value in arrays.items():
        pq.write_table(pa.table({"v": pa.array(value)}), str(folder / f"{name}.parquet"),
                       compression=compression or "none")


def read_parquet(folder: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    return {path.stem: pq.read_table(str(path)).column(0).to_numpy()
            for path in sorted(folder.glob("*.parquet"))}


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size
                                                         for p in path.iterdir())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    arrays = read_npz(args.snapshot)
    scratch = Path(tempfile.mkdtemp(prefix="loopscope-format-"))
    try:
        write_arrow(arrays, scratch / "arrow")
        write_parquet(arrays, scratch / "parquet", "snappy")
        write_parquet(arrays, scratch / "parquet-none", None)
        for name, value in read_parquet(scratch / "parquet").items():  # the same arrays back
            assert np.array_equal(value, arrays[name]), name
        forms = {
            "npz (the snapshot; zip checks CRC-32)": (args.snapshot, lambda: read_npz(args.snapshot)),
            "Arrow IPC, memory-mapped, checked": (scratch / "arrow",
                                                  lambda: read_arrow(scratch / "arrow", True)),
            "Arrow IPC, memory-mapped, unchecked": (scratch / "arrow",
                                                    lambda: read_arrow(scratch / "arrow", False)),
            "Parquet (snappy)": (scratch / "parquet", lambda: read_parquet(scratch / "parquet")),
            "Parquet (no compression)": (scratch / "parquet-none",
                                         lambda: read_parquet(scratch / "parquet-none")),
        }
        results = {}
        for title, (where, read) in forms.items():
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                read()
                times.append(time.perf_counter() - started)
            results[title] = {"bytes": _size(where), "median_s": statistics.median(times),
                              "runs_s": [round(t, 3) for t in times]}
        # What a reopen reads whole (not the pools it reads piecewise as they are used): the
        # snapshot's own reader against numpy.load's.
        whole = sorted(n for n in arrays if not n.startswith("crc.") and "crc." + n not in arrays)
        for title, read in {
                "npz by numpy.load (zip checks CRC-32), what a reopen reads whole":
                    lambda: read_npz_names(args.snapshot, whole),
                "npz by loopscope's reader (one read and one CRC-32 a member), the same":
                    lambda: read_kept(args.snapshot, whole)}.items():
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                read()
                times.append(time.perf_counter() - started)
            results[title] = {"bytes": sum(arrays[n].nbytes for n in whole),
                              "median_s": statistics.median(times),
                              "runs_s": [round(t, 3) for t in times]}
        base = results["npz (the snapshot; zip checks CRC-32)"]["median_s"]
        print(f"{len(arrays)} arrays, {sum(a.nbytes for a in arrays.values()) / 1e6:,.0f} MB")
        print("| form | on disk | read all, median | ratio |")
        print("|---|---|---|---|")
        for title, r in results.items():
            print(f"| {title} | {r['bytes'] / 1e6:,.0f} MB | {r['median_s']:.2f} s | "
                  f"{r['median_s'] / base:.2f}x |")
        print("SNAPSHOT_FORMAT " + json.dumps(results))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        os.sync()


if __name__ == "__main__":
    main()
