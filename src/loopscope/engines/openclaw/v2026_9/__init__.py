"""OpenClaw 2026.9.6: fixed thresholds, batch admission and one-shot recovery.

The ``openclaw`` engine's newest version, in its own modules (the configurable releases,
2026.6.11 and 2026.7.35, live one level up and are imported where the code did not change):

* :mod:`.config` — the one-key ``loopDetection`` block, the fixed values as what-ifs, retired
  keys accepted and ignored, the per-agent overlay;
* :mod:`.hashing` — normalised tool names, outcome hashing with external-content markers,
  loop vetoes, terminal exec failures and unchanged writes;
* :mod:`.detection` — the detector (argument churn included), the batch admission with its
  projected vetoes, the warning buckets;
* :mod:`.reference` — the plain shadow-mode replay with recovery and terminal interventions;
* :mod:`.fast` — prepare once, count once per history size, select per configuration;
* :mod:`.explain` — plain-language explanations, limitations and guide examples.
"""
