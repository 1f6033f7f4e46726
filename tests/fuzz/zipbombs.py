"""Generators of hostile zip archives (inspect ``.eval`` logs) for the archive and fuzz tests.

Nothing here is committed as a binary: every archive is written on demand, streaming, so even
the full-size bomb of the security review (0.6 MB on disk, 600 MB inflated) costs a few
seconds and no memory to build.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

MiB = 1024 * 1024

HEADER = {"version": 2, "status": "success", "eval": {"task": "bomb", "model": "m"}}

# One small message, repeated: deflate shrinks a run of it about 400:1, and orjson turns every
# 30 bytes of it into a new dict, so the parsed value is many times the inflated text.
_MESSAGE = b'{"role":"user","content":"x"},'
_CHUNK = _MESSAGE * (MiB // len(_MESSAGE))


def write_sample_bomb(archive: zipfile.ZipFile, name: str, inflated_bytes: int,
                      sample_id: int = 1) -> None:
    """Add ``name``: a valid inspect sample whose ``messages`` inflate to ``inflated_bytes``."""
    # A name (not a ZipInfo) makes the member take the archive's compression and level.
    with archive.open(name, "w", force_zip64=inflated_bytes > 1 << 31) as out:
        out.write(b'{"id":%d,"epoch":1,"messages":[' % sample_id)
        left = max(inflated_bytes - 64, 0)
        while left > 0:
            piece = _CHUNK[: min(left, len(_CHUNK))]
            piece = piece[: len(piece) - len(piece) % len(_MESSAGE)]
            if not piece:
                break
            out.write(piece)
            left -= len(piece)
        out.write(b'{"role":"user","content":"end"}]}')


def write_eval_bomb(path: str | Path, *, members: int = 1, member_bytes: int = 240 * MiB) -> Path:
    """A ``.eval`` log whose ``members`` samples each inflate to ``member_bytes``.

    With the defaults: 0.6 MB on disk, 240 MiB inflated (deflate codes this 30-byte period at
    about 400:1), under the old per-member limit of 256 MiB: the review's bomb.
    """
    path = Path(path)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        for i in range(members):
            write_sample_bomb(archive, f"samples/{i + 1}_epoch_1.json", member_bytes, i + 1)
    return path


def write_many_members(path: str | Path, members: int) -> Path:
    """A ``.eval`` with ``members`` tiny (empty-object) samples: a member-count bomb."""
    path = Path(path)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        for i in range(members):
            archive.writestr(f"samples/{i}.json", b"{}")
    return path


def write_lying_sizes(path: str | Path, inflated_bytes: int = 8 * MiB) -> Path:
    """A ``.eval`` whose sample's central-directory entry claims 100 bytes inflated while the
    data inflates to ``inflated_bytes``: limits must count what comes out, not the header."""
    path = Path(path)
    write_eval_bomb(path, members=1, member_bytes=inflated_bytes)
    data = bytearray(path.read_bytes())
    name = b"samples/1_epoch_1.json"
    central = data.rfind(b"PK\x01\x02" + b"\x00" * 0, 0)  # last central entry is the sample's
    while central != -1 and data[central + 46: central + 46 + len(name)] != name:
        central = data.rfind(b"PK\x01\x02", 0, central)
    assert central != -1, "sample entry not found"
    data[central + 24: central + 28] = (100).to_bytes(4, "little")  # uncompressed size
    local = data.find(b"PK\x03\x04" + bytes(0), 0)
    while local != -1 and data[local + 30: local + 30 + len(name)] != name:
        local = data.find(b"PK\x03\x04", local + 4)
    assert local != -1, "sample local header not found"
    data[local + 22: local + 26] = (100).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path
