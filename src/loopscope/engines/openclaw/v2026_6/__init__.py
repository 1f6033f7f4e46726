"""OpenClaw 2026.6.11 and 2026.7.35: the configurable ``tools.loopDetection`` detector.

Both versions ship the same loop code. A sibling of :mod:`..v2026_9`; code both releases run
unchanged is imported from :mod:`..shared`, never from the sibling.

* :mod:`.config` — resolution, schema validation, agent overlays, loopscope's config layers;
* :mod:`.upstream` — the literal detector (``detect``/``record``/``outcome``), its messages;
* :mod:`.hashing` — resultHash of this release;
* :mod:`.reference` — the plain reference replay;
* :mod:`.fast` — the prepared type: hash once, count once per window size, select per
  configuration;
* :mod:`.columns` — a corpus as one table, and the vectorised corpus pass;
* :mod:`.explain` — plain-language explanations, limitations, guide examples;
* :mod:`.release` — the release object the engine calls.
"""
