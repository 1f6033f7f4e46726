"""What OpenClaw's releases share, in one place both release packages import.

A release package (:mod:`..v2026_6`, :mod:`..v2026_9`) never imports its sibling: upstream code
that did not change between releases is ported once, here, so that a fix to it reaches every
release and a difference between releases is always visible as two modules.

* :mod:`.upstream` — the detector ids, history records, verdicts, messages and walks that
  2026.9.6 kept from 2026.6.11;
* :mod:`.hashing` — argsHash, error formatting, unknown-tool names and the send/exec helpers
  both outcome hashes build on;
* :mod:`.guard` — the post-compaction guard (unchanged between releases), also over a fast
  path's coded calls;
* :mod:`.verdicts` — a verdict's message and warning key from a fast path's counts;
* :mod:`.session` — how a recorded session becomes the engine's inputs (runs, compactions,
  calls with their paired outcomes);
* :mod:`.config` — agent ids, ``--set`` parsing of the configurable keys, JSON5 export;
* :mod:`.explain` — the limitations every release's replay has, and the explainer base;
* :mod:`.release` — what a release package provides to the one ``openclaw`` engine.
"""
