"""Every command that reads a folder, with the on-disk cache against without it.

For one corpus folder, each command of the command line that reads sessions — ``replay``
(text and ``--json``) of every engine, ``sweep`` and ``compare`` (``--json`` and text) of every
engine — runs in a fresh process twice: with ``LOOPSCOPE_CACHE=off`` (every file imported) and
with a cache directory that ``loopscope prepare`` filled (the folder read back). Each process
is measured whole: wall time, CPU time (user + system, the workers it waited for included) and
peak RSS (the largest single process), from ``wait4``. The two sides alternate (off, cache;
then cache, off), and their stdout and exit code must be byte-identical: a difference stops
the benchmark.

With ``--src NAME=PATH`` (repeatable) the same runs are made for several source trees (old and
new code, alternating); each tree fills its own cache (a snapshot's name carries a digest of the
core's source: a cache written by other code is not read).

With ``--node`` (an OpenAI-chat corpus) the real OpenClaw guard replays the same folder under
node (``openclaw_node_replay.mjs``, one replay, whole process, ``$LOOPSCOPE_OPENCLAW_DIR``),
beside ``loopscope replay --engine openclaw --json`` with node's thresholds, cached and cold;
the refused sessions must agree.

Not measured, because they read no corpus folder: ``label`` (session files named one by one,
always imported), ``labels export`` (labels files only), ``engines``, ``cache``; ``prepare``
fills the cache and refuses to run with it off.

Usage::

    python benchmarks/cache_ratio.py FOLDER [--runs 2] [--only REGEX] [--node]
        [--cache-dir DIR] [--src new=src --src old=/tmp/old/src]

Prints a table (the ratio cache / off of the faster run of each side) and one line
``CACHE_RATIO {json}``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# Per engine: a small grid for ``sweep`` and two configurations for ``compare``.
SWEEP = {
    "gglib": ["--vary", "max_repeated_batch_steps=1:4"],
    "openclaw": ["--vary", "criticalThreshold=12:24:4"],
    "openhands": ["--vary", "action_observation=2:5"],
    "gemini-cli": ["--vary", "TOOL_CALL_LOOP_THRESHOLD=3:6"],
    "qwen-code": ["--vary", "TOOL_CALL_LOOP_THRESHOLD=3:6"],
}
COMPARE = {
    "gglib": ["--a", "max_repeated_batch_steps=2", "--b", "max_repeated_batch_steps=4"],
    "openclaw": ["--a", "criticalThreshold=12", "--b", "criticalThreshold=24"],
    "openhands": ["--a", "action_observation=3", "--b", "action_observation=6"],
    "gemini-cli": ["--a", "TOOL_CALL_LOOP_THRESHOLD=3", "--b", "TOOL_CALL_LOOP_THRESHOLD=8"],
    "qwen-code": ["--a", "TOOL_CALL_LOOP_THRESHOLD=3", "--b", "TOOL_CALL_LOOP_THRESHOLD=8"],
}
# What benchmarks/openclaw_node_replay.mjs replays with.
NODE_SET = ["--set", "warningThreshold=5", "--set", "criticalThreshold=8",
            "--set", "globalCircuitBreakerThreshold=12"]


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    rss_mb: float
    code: int
    stdout_sha: str
    stdout_bytes: int
    stderr_sha: str


@dataclass
class Row:
    name: str
    src: str
    off: list[Run] = field(default_factory=list)
    cache: list[Run] = field(default_factory=list)

    def best(self, side: str) -> Run:
        return min(getattr(self, side), key=lambda r: r.wall_s)

    def ratio(self) -> float:
        return self.best("cache").wall_s / self.best("off").wall_s

    def cpu_ratio(self) -> float:
        return self.best("cache").cpu_s / max(self.best("off").cpu_s, 1e-9)


def measured(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    """One process, whole: wall, CPU (its own and its reaped children's), peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n"
                         + stderr.decode(errors="replace")[-2000:])
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode,
               hashlib.sha256(stdout).hexdigest()[:16], len(stdout),
               hashlib.sha256(stderr).hexdigest()[:16])


def commands(folder: str, engines: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in engines:
        out[f"replay {e} --json"] = ["replay", folder, "--engine", e, "--json"]
        out[f"replay {e}"] = ["replay", folder, "--engine", e]
    for e in engines:
        out[f"sweep {e} --json"] = ["sweep", folder, "--engine", e, *SWEEP[e], "--json"]
        out[f"sweep {e}"] = ["sweep", folder, "--engine", e, *SWEEP[e]]
        out[f"compare {e} --json"] = ["compare", folder, "--engine", e, *COMPARE[e], "--json"]
        out[f"compare {e}"] = ["compare", folder, "--engine", e, *COMPARE[e]]
    return out


def environ(src: Path, cache: Path | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("LOOPSCOPE_CACHE", None)
    if cache is None:
        env["LOOPSCOPE_CACHE"] = "off"
    else:
        env["LOOPSCOPE_CACHE_DIR"] = str(cache)
    return env


_HIT = """
import sys
from loopscope.corpus import read_prepared
from loopscope.engines import get_engine
missing = [e for e in sys.argv[2:] if read_prepared(sys.argv[1], get_engine(e), None) is None]
print(" ".join(missing))
"""


def ensure_prepared(folder: str, src: Path, cache: Path, engines: list[str]) -> float | None:
    """Fill ``cache`` with ``loopscope prepare`` unless it already holds the folder for every
    engine (the prepare's wall time, or ``None`` when nothing was done)."""
    env = environ(src, cache)
    check = [sys.executable, "-c", _HIT, folder, *engines]
    missing = subprocess.run(check, env=env, capture_output=True, text=True, check=True,
                             cwd=REPO).stdout.split()
    if not missing:
        return None
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "loopscope", "prepare", folder], env=env, check=True,
                   cwd=REPO, stdout=subprocess.DEVNULL)
    took = time.perf_counter() - start
    missing = subprocess.run(check, env=env, capture_output=True, text=True, check=True,
                             cwd=REPO).stdout.split()
    if missing:
        raise SystemExit(f"after prepare, the cache still misses {missing} for {folder}")
    return took


def node_run(folder: str) -> tuple[Run, dict[str, Any]] | None:
    oracle = os.environ.get("LOOPSCOPE_OPENCLAW_DIR")
    node = shutil.which("node")
    if not oracle or not node:
        return None
    env = dict(os.environ, OPENCLAW_LOG_LEVEL="silent")
    script = REPO / "benchmarks" / "openclaw_node_replay.mjs"
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([node, str(script), oracle, folder, "1"], stdout=out,
                                stderr=subprocess.DEVNULL, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("node failed")
    figures = json.loads(text.strip().splitlines()[-1])
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, 0, "", 0,
               ""), figures


def refused_in(stdout_lines: bytes) -> int:
    return sum(json.loads(line).get("refused", False) for line in stdout_lines.splitlines()
               if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--runs", type=int, default=2, help="runs of each side (default 2)")
    parser.add_argument("--only", default=None, metavar="REGEX",
                        help="only the commands whose name matches (e.g. 'replay openclaw')")
    parser.add_argument("--skip", default=None, metavar="REGEX",
                        help="leave out the commands whose name matches")
    parser.add_argument("--engines", default=None, help="comma-separated (default: all)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where each source tree's cache is filled (kept; default: a "
                             "scratch folder deleted at the end)")
    parser.add_argument("--src", action="append", default=None, metavar="NAME=PATH",
                        help="a source tree to measure (default: new=REPO/src)")
    parser.add_argument("--off-once", action="store_true",
                        help="with several --src: run the cache-off side with the first only "
                             "(when the import path is the same in all)")
    parser.add_argument("--node", action="store_true",
                        help="also the real OpenClaw under node (an OpenAI-chat corpus)")
    parser.add_argument("--node-runs", type=int, default=2)
    args = parser.parse_args()

    sys.path.insert(0, str(REPO / "src"))
    from loopscope.engines import engine_names

    engines = args.engines.split(",") if args.engines else list(engine_names())
    srcs = [(s.split("=", 1)[0], Path(s.split("=", 1)[1]).resolve())
            for s in (args.src or [f"new={REPO / 'src'}"])]
    folder = str(Path(args.folder).resolve())
    scratch = None
    if args.cache_dir is None:
        scratch = tempfile.mkdtemp(prefix="loopscope-cache-ratio-")
        args.cache_dir = Path(scratch)
    caches = {name: args.cache_dir / name for name, _ in srcs}
    figures: dict[str, Any] = {"folder": folder, "files": sum(1 for _ in Path(folder).iterdir()),
                               "runs": args.runs, "started": time.strftime("%H:%M:%S")}
    try:
        for name, src in srcs:
            took = ensure_prepared(folder, src, caches[name], engines)
            if took is not None:
                figures[f"prepare_s[{name}]"] = round(took, 2)
                print(f"prepare ({name}): {took:.1f} s", file=sys.stderr)
        todo = {k: v for k, v in commands(folder, engines).items()
                if (args.only is None or re.search(args.only, k))
                and (args.skip is None or not re.search(args.skip, k))}
        rows: list[Row] = []
        for label, cmd in todo.items():
            by_src = {name: Row(label, name) for name, _ in srcs}
            for i in range(args.runs):  # (sides and source trees alternate)
                order = ("off", "cache") if i % 2 == 0 else ("cache", "off")
                for name, src in srcs if i % 2 == 0 else srcs[::-1]:
                    for side in order:
                        if side == "off" and args.off_once and name != srcs[0][0]:
                            continue  # (the import path, measured with the first tree)
                        env = environ(src, None if side == "off" else caches[name])
                        run = measured([sys.executable, "-m", "loopscope", *cmd], env, REPO)
                        getattr(by_src[name], side).append(run)
            if args.off_once:
                for row in by_src.values():
                    row.off = by_src[srcs[0][0]].off
            first = by_src[srcs[0][0]].off[0]
            for name, row in by_src.items():
                for run in row.off + row.cache:
                    if (run.stdout_sha, run.code) != (first.stdout_sha, first.code):
                        raise SystemExit(f"{label} ({name}): outputs differ: {row}")
            for row in by_src.values():
                rows.append(row)
                print(f"{label:<28} {row.src:<5} off {_runs(row.off)}  cache {_runs(row.cache)}"
                      f"  ratio {row.ratio():.2f} (CPU {row.cpu_ratio():.2f})  "
                      f"ROW {json.dumps(_row(row))}", file=sys.stderr, flush=True)
        figures["rows"] = [_row(r) for r in rows]
        if args.node:
            figures["node"] = node_figures(folder, srcs[-1][1], caches[srcs[-1][0]],
                                           args.node_runs)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    print_table(figures)
    print("CACHE_RATIO " + json.dumps(figures, sort_keys=True))


def node_figures(folder: str, src: Path, cache: Path, runs: int) -> dict[str, Any]:
    """node's whole replay against ``replay --engine openclaw --json`` (node's thresholds),
    from the cache and cold, alternating; the refused sessions must agree."""
    cmd = [sys.executable, "-m", "loopscope", "replay", folder, "--engine", "openclaw", "--json",
           *NODE_SET]
    out: dict[str, list[Run]] = {"node": [], "cache": [], "off": []}
    figures: dict[str, Any] = {}
    for _ in range(runs):
        found = node_run(folder)
        if found is None:
            return {"node": "skipped: source /tmp/env.sh (LOOPSCOPE_OPENCLAW_DIR) and node"}
        out["node"].append(found[0])
        figures = found[1]
        for side in ("cache", "off"):
            out[side].append(measured(cmd, environ(src, None if side == "off" else cache),
                                      REPO))
    # (the refused sessions of loopscope's side, read from one run's output)
    with tempfile.TemporaryFile() as sink:
        subprocess.run(cmd, stdout=sink, env=environ(src, cache), cwd=REPO)
        sink.seek(0)
        refused = refused_in(sink.read())
    if refused != figures["refused_sessions"]:
        raise SystemExit(f"node refused {figures['refused_sessions']} sessions, loopscope "
                         f"{refused}: the two sides do not replay the same calls")
    best = {k: min(r.wall_s for r in v) for k, v in out.items()}
    return {"sessions": figures["sessions"], "calls": figures["calls"], "refused": refused,
            "node_s": [round(r.wall_s, 2) for r in out["node"]],
            "node_cpu_s": [round(r.cpu_s, 2) for r in out["node"]],
            "node_rss_mb": round(max(r.rss_mb for r in out["node"])),
            "cache_s": [round(r.wall_s, 2) for r in out["cache"]],
            "cache_cpu_s": [round(r.cpu_s, 2) for r in out["cache"]],
            "off_s": [round(r.wall_s, 2) for r in out["off"]],
            "off_cpu_s": [round(r.cpu_s, 2) for r in out["off"]],
            "cache_vs_node": round(best["cache"] / best["node"], 3),
            "cold_vs_node": round(best["off"] / best["node"], 3)}


def _row(r: Row) -> dict[str, Any]:
    return {"command": r.name, "src": r.src, "ratio": round(r.ratio(), 3),
            "cpu_ratio": round(r.cpu_ratio(), 3),
            "stderr_same": len({x.stderr_sha for x in r.off + r.cache}) == 1,
            "off": [_short(x) for x in r.off], "cache": [_short(x) for x in r.cache]}


def _runs(runs: list[Run]) -> str:
    return "/".join(f"{r.wall_s:.2f}" for r in runs) + " s"


def _short(r: Run) -> dict[str, Any]:
    d = asdict(r)
    return {"wall_s": round(d["wall_s"], 3), "cpu_s": round(d["cpu_s"], 3),
            "rss_mb": round(d["rss_mb"]), "code": d["code"], "stdout_bytes": d["stdout_bytes"]}


def print_table(f: dict[str, Any]) -> None:
    print(f"{f['folder']} ({f['files']:,} files), {f['runs']} runs a side; wall of each run, "
          "CPU of the faster, peak RSS")
    print("| command | src | off: wall (CPU) | cache: wall (CPU) | RSS off / cache | "
          "cache / off (CPU) |")
    print("|---|---|---|---|---|---|")
    for r in f["rows"]:
        off, cache = (min(r[s], key=lambda x: x["wall_s"]) for s in ("off", "cache"))
        walls = {s: " / ".join(f"{x['wall_s']:.2f}" for x in r[s]) for s in ("off", "cache")}
        print(f"| `{r['command']}` | {r['src']} | {walls['off']} s ({off['cpu_s']:.1f}) | "
              f"{walls['cache']} s ({cache['cpu_s']:.1f}) | "
              f"{off['rss_mb']} / {cache['rss_mb']} MB | "
              f"**{r['ratio']:.2f}×** ({r['cpu_ratio']:.2f}×) |")
    node = f.get("node")
    if isinstance(node, dict) and "node_s" in node:
        print(f"node: {node['sessions']:,} sessions, {node['calls']:,} calls, "
              f"{node['refused']:,} refused (both sides); node {node['node_s']} s "
              f"(CPU {node['node_cpu_s']}), replay --json cached {node['cache_s']} s, cold "
              f"{node['off_s']} s: cached / node **{node['cache_vs_node']}×**, cold / node "
              f"**{node['cold_vs_node']}×**")
    elif node:
        print(node)


if __name__ == "__main__":
    main()
