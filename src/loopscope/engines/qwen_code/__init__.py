"""The ``qwen-code`` engine: Qwen Code's loop guards (``LoopDetectionService`` of
``@qwen-code/qwen-code@0.24.4``), replayed in shadow mode as its core client drives them.

Modules:

* (JavaScript semantics — UTF-16 code units, Node's UTF-8, ``JSON.stringify``, ``JSON.parse``
  — come from the neutral :mod:`loopscope.jsonrules`);
* :mod:`.config` — the settings (``model.skipLoopDetection``, ``model.maxToolCallsPerTurn``,
  ``capMode``) and the what-if constants;
* :mod:`.detector` — the literal ``LoopDetectionService`` port;
* :mod:`.reference` — a session as events, and the shadow replay;
* :mod:`.fast` — prepare once, run cheaply;
* :mod:`.explain` — plain-language explanations and guide examples;
* :mod:`.engine` — ``ENGINE``, the contract object.
"""
