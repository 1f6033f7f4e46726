"""The ``gemini-cli`` engine: Gemini CLI's loop detector (``LoopDetectionService`` of
``@google/gemini-cli-core@0.61.0``), replayed in shadow mode.

Two of Gemini CLI's three detectors are replayed exactly: the tool-call loop (a cycle of 1–5
identical calls repeated 5 times in a row within one prompt) and the content loop (the same
50-unit window of reply text seen 10 times close together). The third, an LLM check, needs a
live model and is not replayed.

The engine package shape (README, "An engine"):

* :mod:`.config` — the one Gemini CLI setting (``enabled`` / ``model.disableLoopDetection``)
  and the what-if constants;
* :mod:`.upstream` — the literal ``LoopDetectionService`` port;
* :mod:`.events` — a session as the detector's event stream;
* :mod:`.reference` — the plain reference replay;
* :mod:`.fast` — prepare once (owns ``PreparedSession``), run cheaply;
* :mod:`.columns` — a corpus as columns, re-run in vectorised passes;
* :mod:`.explain` — plain-language explanations and guide examples;
* :mod:`.engine` — ``ENGINE``, the contract object.

JavaScript semantics (UTF-16 code units, Node's UTF-8, ``JSON.stringify``, ``JSON.parse``) come
from the neutral :mod:`loopscope.jsonrules.node_json`; what Gemini CLI shares with its fork Qwen
Code, from :mod:`loopscope.engines._shared`.
"""
