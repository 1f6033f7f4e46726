"""OpenClaw 2026.9.6: fixed thresholds, batch admission and one-shot recovery.

A sibling of :mod:`..v2026_6`; code both releases run unchanged is imported from
:mod:`..shared`, never from the sibling.

* :mod:`.config` — the one-key ``loopDetection`` block, the fixed values as what-ifs, retired
  keys accepted and ignored, the per-agent overlay;
* :mod:`.hashing` — normalised tool names, outcome hashing with external-content markers,
  loop vetoes, terminal exec failures and unchanged writes;
* :mod:`.upstream` — the detector (argument churn included), the batch admission with its
  projected vetoes, the warning buckets;
* :mod:`.session` — the calls of one assistant message grouped, intervention texts read;
* :mod:`.reference` — the plain shadow-mode replay with recovery and terminal interventions;
* :mod:`.fast` — the prepared type: prepare once, count once per history size, select per
  configuration;
* :mod:`.columns` — why there is no column table (sessions run one by one);
* :mod:`.explain` — plain-language explanations, limitations and guide examples;
* :mod:`.release` — the release object the engine calls.
"""
