"""JSON and JavaScript value rules shared by importers and engines.

A guard written in JavaScript or Rust sees a value the way its own runtime parses and prints
it, and loopscope must hash and compare what the guard hashes and compares. Those runtime rules
live here, apart from any engine, so that an engine never imports another engine and the
importers (``loopscope.formats``) import no engine:

* :mod:`.javascript` — JavaScript value semantics: ``stableStringify``, number formatting,
  ``String.prototype.trim``, ``JSON.parse``, truthiness;
* :mod:`.node_json` — Node's text and JSON: UTF-16 code units, Node's UTF-8 and SHA-256,
  ``JSON.stringify`` and an iterative ``JSON.parse``;
* :mod:`.serde_json` — Rust's ``serde_json``: strict parsing and its number classes.
"""
