"""The ``qwen-code`` engine: Qwen Code's loop guards (``LoopDetectionService`` of
``@qwen-code/qwen-code@0.24.4``), replayed in shadow mode as its core client drives them.

The engine package shape (README, "An engine"):

* :mod:`.config` — the settings (``model.skipLoopDetection``, ``model.maxToolCallsPerTurn``,
  ``capMode``) and the what-if constants;
* :mod:`.upstream` — the literal ``LoopDetectionService`` port;
* :mod:`.events` — a session as the events Qwen Code's client feeds the service;
* :mod:`.reference` — the shadow replay of those events;
* :mod:`.fast` — prepare once (owns ``PreparedSession`` and its JSON codec), run cheaply;
* :mod:`.columns` — the table of a corpus (step columns beside each session's JSON) and the vectorised re-run;
* :mod:`.explain` — plain-language explanations and guide examples;
* :mod:`.engine` — ``ENGINE``, the contract object.

JavaScript semantics (UTF-16 code units, Node's UTF-8, ``JSON.stringify``, ``JSON.parse``) come
from the neutral :mod:`loopscope.jsonrules`; what Qwen Code shares with Gemini CLI, which it
forked, from :mod:`loopscope.engines._shared`.
"""
