"""Rules that more than one engine ports, kept apart from every engine.

An engine never imports another engine (``tests/test_architecture.py``), so a rule two guards
really share (because one upstream is a fork of the other) lives here, named for what it is:

* :mod:`.streamed_turn` — a recorded assistant turn as the stream Gemini CLI and its fork Qwen
  Code feed their loop detectors (text pieces, ``fnCall.args || {}``, prompt starts).
"""
