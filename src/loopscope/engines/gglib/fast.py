"""The fast path: prepare a session once, re-run any configuration with table look-ups.

:func:`prepare_messages` / :func:`prepare_events` do every threshold-independent step once
(reading calls, parsing arguments, canonicalising, FNV, joining results, the session-wide
``previous`` readings, costly classification, stagnation text hashes, the loop detector's
no-refusal walk) and integer-code signatures and results hashes. :func:`run_lazy` then finds
the first refusal with a few table look-ups and builds steps only when they are read;
:func:`run_prepared` builds them at once. Observation classification depends on the pattern
list and is cached per pattern tuple, stagnation counts per ``max_stagnation_steps``.
``run_prepared(prepare_messages(m), c) == replay_messages(m, c)`` is a property test.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from typing import Any

import orjson

from loopscope.bulk import keep_shared, memoised_by_json
from loopscope.engines.base import FirstRefusal, FlaggedStep, Marker, SessionReplay, Step, new_step
from loopscope.engines.codec import CodecError, ints_at
from loopscope.engines.gglib.config import GglibConfig
from loopscope.engines.gglib.fnv import fnv1a_64, hex16
from loopscope.engines.gglib.reference import _batch_extra, _prose_extra
from loopscope.engines.gglib.upstream import (
    WINDOW_FACTOR,
    batch_class_of,
    extract_text,
    is_costly_name,
    is_observation_name,
    message_role,
    read_arguments,
    stable_repr,
)
from loopscope.jsonrules.serde_json import compact_json
from loopscope.model import (
    AssistantTurn,
    Compaction,
    OtherMessage,
    SystemMessage,
    ToolResult,
    UserMessage,
)

__all__ = ["NO_REFUSAL", "PreparedMessages", "PreparedSession", "prepare_events",
           "prepare_messages", "run_lazy", "run_prepared"]

# --------------------------------------------------------------------------------------------
# Prepared data and the fast path
#
# Why the fast path is exact (gglib's LoopDetector / StagnationDetector semantics):
#
# * A run is a maximal sequence of batch steps with one signature and no user/system message in
#   between (prose steps do not end it). Before the first refusal inside a run, the loop
#   detector's state equals that of a walk in which nothing is ever refused: ``count`` (before
#   recording), ``total`` and the recorded outcome depend only on signatures, answers and run
#   boundaries, never on thresholds. ``prepare`` records that walk once.
# * A refusal records nothing: the run's ``count`` and ``total`` keep growing by one per step, so
#   once a step of a run is refused every later step of that run is refused too, with
#   ``count = count_at_first_refusal + (total - total_at_first_refusal)``. A new run starts from
#   scratch, so a refusal never reaches past its run.
# * Stagnation counts depend only on the texts and the window (``4 × max_stagnation_steps``);
#   refusing records the text all the same. They are computed once per ``max_stagnation_steps``.
# * Hence the first refusal is the first step whose no-refusal count or total exceeds its
#   class's threshold, or whose stagnation count exceeds ``max_stagnation_steps``: per class,
#   "the first step whose count exceeds t" is a small table indexed by t, built once per
#   observation pattern list. ``run`` is a handful of table look-ups; steps are built only when
#   read (``SessionReplay.steps``), by the walk in :func:`_rows`.

NO_REFUSAL = 1 << 62
"""The step index :meth:`PreparedMessages.first_refusal_index` returns when nothing is refused."""

_OUTCOME_CHANGED = "answer_changed"
_OUTCOME_REPEATED = "answer_repeated"
_OUTCOME_NC = "not_comparable"

_COSTLY_NAMES: dict[str, bool] = {}


def _is_costly(name: str) -> bool:
    found = _COSTLY_NAMES.get(name)
    if found is None:
        if len(_COSTLY_NAMES) > 100_000:
            _COSTLY_NAMES.clear()
        found = _COSTLY_NAMES[name] = is_costly_name(name)
    return found


# (obs, costly) -> (first step with count > t for t = 0.., first step with total > t for t = 0..)
_Tables = dict[tuple[bool, bool], tuple[list[int], list[int]]]
# The runs of more than one step: per run its batch positions, the index among them of the
# first with count > t for t = 0.., and its last position; and the position of every one-step
# run (most runs: only a threshold of 0 refuses them).
_Runs = tuple[list[list[int]], list[list[int]], list[int], list[int]]


@dataclass(slots=True, eq=False)
class PreparedMessages:
    """Threshold-independent data for one message list (see the comment above).

    One entry per step, i.e. per assistant message, so a step's index is its ``turn``.
    """

    n_messages: int
    batch: list[bool]
    call: list[int]
    """Tool calls before the step: a batch step's ``call``."""
    tools: list[tuple[str, ...]]
    signature: list[str | None]
    identical: list[bool]
    not_evaluated: list[bool]
    joined: list[bool]
    """The batch's results joined (``answers_joined``)."""
    costly: list[bool]
    names_lower: list[tuple[str, ...]]
    count: list[int]
    """No-refusal walk: the run's count when the batch is checked (0 for prose)."""
    total: list[int]
    outcome: list[str | None]
    """No-refusal walk: what recording the batch's answers says."""
    run: list[int]
    """Run number of a batch step (-1 for prose)."""
    text_hash: list[str | None]
    prose_steps: list[int]
    """Prose steps with a non-empty text (the ones the stagnation detector records)."""
    prose_text: list[int]
    """Their text ids (equal ids = equal texts)."""
    prose_segment: list[int]
    """Their segment: user/system messages seen before them (the detector is cleared at each)."""
    _obs_cache: dict[tuple[str, ...], tuple[bool, ...]] = field(default_factory=dict)
    _tables: dict[tuple[str, ...], _Tables] = field(default_factory=dict)
    _stagnation: dict[int, tuple[list[int], int]] = field(default_factory=dict)
    _firsts: dict[int, FirstRefusal] = field(default_factory=dict)
    _runs: _Runs | None = None

    @property
    def n_steps(self) -> int:
        return len(self.call)

    def observation_flags(self, patterns: Sequence[str]) -> tuple[bool, ...]:
        """Per step: is it an observation batch under ``patterns`` (False for prose)."""
        key = tuple(patterns)
        flags = self._obs_cache.get(key)
        if flags is None:
            lowered = [p.lower() for p in key]
            per_name: dict[str, bool] = {}
            out: list[bool] = []
            for is_batch, names in zip(self.batch, self.names_lower, strict=True):
                if not is_batch or not lowered:
                    out.append(False)
                    continue
                ok = True
                for n in names:
                    v = per_name.get(n)
                    if v is None:
                        v = per_name[n] = is_observation_name(n, lowered)
                    if not v:
                        ok = False
                        break
                out.append(ok)
            flags = tuple(out)
            self._obs_cache[key] = flags
        return flags

    def batch_tables(self, patterns: Sequence[str]) -> _Tables:
        """Per batch class under ``patterns``: where the no-refusal count and total first
        exceed each threshold (``table[t]`` = first step with a value > t)."""
        key = tuple(patterns)
        tables = self._tables.get(key)
        if tables is None:
            obs = self.observation_flags(key)
            tables = {}
            count, total, costly = self.count, self.total, self.costly
            for k, is_batch in enumerate(self.batch):
                if not is_batch:
                    continue
                cls = (obs[k], costly[k])
                entry = tables.get(cls)
                if entry is None:
                    entry = tables[cls] = ([], [])
                by_count, by_total = entry
                c = count[k]
                while len(by_count) < c:
                    by_count.append(k)
                t = total[k]
                while len(by_total) < t:
                    by_total.append(k)
            self._tables[key] = tables
        return tables

    def runs(self) -> _Runs:
        """The runs (:data:`_Runs`), for counting refusals without a walk. Runs are contiguous
        among the batch steps: a run number is never reused, and prose steps between its batch
        steps (run -1) do not end it."""
        runs = self._runs
        if runs is None:
            positions: list[list[int]] = []
            exceeds: list[list[int]] = []
            current = -1
            pos: list[int] = []
            exceed: list[int] = []
            for k, (r, c) in enumerate(zip(self.run, self.count, strict=True)):
                if r < 0:
                    continue
                if r != current:
                    current, pos, exceed = r, [], []
                    positions.append(pos)
                    exceeds.append(exceed)
                while len(exceed) < c:
                    exceed.append(len(pos))
                pos.append(k)
            longer = [r for r, pos in enumerate(positions) if len(pos) > 1]
            runs = self._runs = (
                [positions[r] for r in longer], [exceeds[r] for r in longer],
                [positions[r][-1] for r in longer],
                [pos[0] for pos in positions if len(pos) == 1],
            )
        return runs

    def stagnation(self, max_steps: int) -> tuple[list[int], int]:
        """``(count of each recorded prose step, first step with count > max_steps)``."""
        found = self._stagnation.get(max_steps)
        if found is None:
            window = max(max_steps * WINDOW_FACTOR, 1)
            counts: list[int] = []
            first = NO_REFUSAL
            recent: deque[int] = deque()
            seen: dict[int, int] = {}
            segment = -1
            for k, tid, seg in zip(self.prose_steps, self.prose_text, self.prose_segment,
                                   strict=True):
                if seg != segment:
                    segment = seg
                    recent.clear()
                    seen.clear()
                recent.append(tid)
                seen[tid] = seen.get(tid, 0) + 1
                while len(recent) > window:
                    seen[recent.popleft()] -= 1
                c = seen[tid]
                counts.append(c)
                if c > max_steps and first == NO_REFUSAL:
                    first = k
            found = self._stagnation[max_steps] = (counts, first)
        return found

    def first_refusal_index(self, config: GglibConfig) -> int:
        """The step of the first refusal under ``config``, or :data:`NO_REFUSAL`."""
        first = NO_REFUSAL
        tables = self.batch_tables(config.observation_tools)
        if tables:
            S = config.max_repeated_batch_steps
            O = config.max_observation_steps  # noqa: E741 - the spec's name
            observation_max = O if O is not None else S
            ceiling = observation_max if observation_max > S else S
            ceiling_at = ceiling if ceiling > 0 else 0
            for (obs, costly), (by_count, by_total) in tables.items():
                eff = observation_max if obs else S
                at = eff if eff > 0 else 0
                if at < len(by_count) and by_count[at] < first:
                    first = by_count[at]
                exempt = obs and O is not None and not costly
                if not exempt and ceiling_at < len(by_total) and by_total[ceiling_at] < first:
                    first = by_total[ceiling_at]
        if self.prose_steps:
            k = self.stagnation(config.max_stagnation_steps)[1]
            if k < first:
                first = k
        return first

    def first_refusal_at(self, k: int) -> FirstRefusal | None:
        if k == NO_REFUSAL:
            return None
        found = self._firsts.get(k)
        if found is None:
            if self.batch[k]:
                found = FirstRefusal(k, self.call[k], "loop")
            else:
                found = FirstRefusal(k, None, "stagnation")
            self._firsts[k] = found
        return found


_SHARED_ARGS: dict[str, tuple[str, str]] = {}
"""Argument text → (``"\\0"`` + canonical rendering, ``":"`` + its hex FNV), shared by every
session: agents repeat the same short arguments across sessions (``{"path": "src/app.py"}``,
``{"command": "git status"}``), and the rendering is a pure function of the text."""
@dataclass(slots=True)
class PreparedSession:
    """A session's identity plus its threshold-independent data: what the engine's ``prepare``
    returns, the cache stores and :mod:`.columns` lays out as a table."""

    session: str
    source: str
    format: str
    messages: PreparedMessages


_SHARED_ARGS_MAX = 50_000
_SHARED_ARGS_MAX_TEXT = 512
_SHARED_VALUES: dict[bytes, tuple[Any, tuple[str, str]]] = {}
"""The same for arguments recorded as values: their :func:`json_memo_key` → (the value, its
entry)."""


def _args_entry(canonical: str) -> tuple[str, str]:
    """``("\\0" + canonical rendering, ":" + its hex FNV)``: a call's results key and signature
    suffixes."""
    return ("\x00" + canonical, ":" + hex16(fnv1a_64(canonical)))


def _text_entry(text: str) -> tuple[str, str]:
    """:func:`_args_entry` of an argument string (memoised across sessions when short)."""
    entry = _SHARED_ARGS.get(text)
    if entry is None:
        entry = _args_entry(stable_repr(read_arguments(text)))
        if len(text) <= _SHARED_ARGS_MAX_TEXT:
            keep_shared(_SHARED_ARGS, text, entry, max_entries=_SHARED_ARGS_MAX)
    return entry


def _value_entry(value: Any, memo: dict[bytes, tuple[Any, tuple[str, str]]]) -> tuple[str, str]:
    """:func:`_args_entry` of arguments recorded as a value, memoised in ``memo`` (the
    session's) and across sessions: rendering them took a quarter of ``prepare``."""
    return memoised_by_json(value, _value_args_entry, memo, _SHARED_VALUES,
                            max_shared_key=_SHARED_ARGS_MAX_TEXT, max_shared=_SHARED_ARGS_MAX)


def _value_args_entry(value: Any) -> tuple[str, str]:
    return _args_entry(stable_repr(value))


def _encode_answer(content: Any) -> Any:
    """An injective encoding of a tool answer, for equality only (not :func:`.upstream.hash_result_
    content`'s): a string as ``(0, text)``; another value as ``(1, orjson with sorted keys)``
    when orjson can write it, else ``(2, compact_json)``. Equal values take the same branch, and
    orjson's and ``compact_json``'s writings agree on what is equal (key order ignored;
    ``1`` ≠ ``1.0`` ≠ ``true``; non-finite numbers as ``null``)."""
    if isinstance(content, str):
        return (0, content)
    try:
        return (1, orjson.dumps(content, option=orjson.OPT_SORT_KEYS))
    except (TypeError, orjson.JSONEncodeError):
        return (2, compact_json(content))


_TEXT_BLOCK_ENDS = ('[{"text":"', '","type":"text"}]')
"""How the encoding of one text block begins and ends (:func:`_as_text_block`)."""
_TEXT_BLOCK_BYTE_ENDS = tuple(end.encode() for end in _TEXT_BLOCK_ENDS)


def _answer_key(content: Any) -> Any:
    """:func:`_encode_answer` renamed, for equality only: two answers get equal keys iff they
    get equal encodings. An answer that encodes as one text block ``[{"type": "text", "text":
    T}]`` (what Anthropic and OpenClaw results hold) is ``(3, T)``, read off without writing
    it: writing every structured answer out took a tenth of ``prepare``, and the text's hash,
    kept by ``T``, serves the OpenClaw engine's ``prepare`` again."""
    if isinstance(content, str):
        return (0, content)
    if type(content) is list and len(content) == 1:
        block = content[0]
        if type(block) is dict and len(block) == 2:
            text = block.get("text")
            kind = block.get("type")
            if type(text) is str and type(kind) is str and kind == "text":
                return (3, text)
    encoded = _encode_answer(content)
    return _as_text_block(encoded) or encoded


def _as_text_block(encoded: tuple[int, Any]) -> tuple[int, str] | None:
    """``(3, T)`` when ``encoded`` is the encoding of ``[{"type": "text", "text": T}]`` (an
    answer of another type written the same: a tuple, a dict or str subclass…), else None."""
    tag, written = encoded
    head, tail = _TEXT_BLOCK_BYTE_ENDS if tag == 1 else _TEXT_BLOCK_ENDS
    if not (written.startswith(head) and written.endswith(tail)):
        return None
    value = orjson.loads(written) if tag == 1 else json.loads(written)
    if not (type(value) is list and len(value) == 1 and type(value[0]) is dict
            and type(value[0].get("text")) is str):
        return None
    block_text = value[0]["text"]
    if _encode_answer([{"type": "text", "text": block_text}]) != encoded:
        return None
    return (3, block_text)


def _join(ids: list[str], keys: list[tuple[str, str]], answers: list[tuple[str, Any]]) -> Any:
    """:func:`.upstream.turn_results_hash` with the results keys already computed. ``answers``:
    ``(tool_call_id, content)`` of the contiguous tool messages after the batch that carry a
    string id, in order. Each key is ``(name, "\\0" + canonical arguments)``: the name and the
    canonical rendering (which holds no NUL), kept apart so that a repeated rendering is hashed
    once."""
    joined: dict[str, Any] = {}
    for tcid, content in answers:
        if tcid in joined:
            return None
        joined[tcid] = (0, content) if isinstance(content, str) else _answer_key(content)
    if len(ids) > 1 and len(set(ids)) != len(ids):
        return None
    pairs = []
    for call_id, key in zip(ids, keys, strict=True):
        a = joined.get(call_id)
        if a is None:
            return None
        pairs.append((key, a))
    if len(pairs) > 1:
        pairs.sort()
    return tuple(pairs)


def _join_one(call_id: str, key: tuple[str, str], answers: list[tuple[str, Any]]) -> Any:
    """:func:`_join` of a batch of one call (the usual batch)."""
    if len(answers) == 1:  # and one answer
        tcid, content = answers[0]
        answer = (0, content) if isinstance(content, str) else _answer_key(content)
        return ((key, answer),) if tcid == call_id else None
    return _join([call_id], [key], answers)


# What a reader yields per assistant message (a step), and for a run break:
#   (calls, answers) for a batch: calls = [(id, name, raw arguments)], answers as for _join;
#   (text,) for a prose step; _BREAK for a user/system/other message.
_BREAK: tuple[Any, ...] = ()
_RUN_BREAKERS = (UserMessage, SystemMessage, OtherMessage)


def _message_items(messages: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
    """The steps of an OpenAI-chat message list: the calls of each assistant message, its reply
    text, and the results joined from the tool messages right after it."""
    n = len(messages)
    i = 0
    while i < n:
        m = messages[i]
        i += 1
        role = message_role(m)
        if role == "tool":
            continue
        if role != "assistant":
            yield _BREAK
            continue
        assert isinstance(m, dict)
        tool_calls = m.get("tool_calls")
        if isinstance(tool_calls, list) and tool_calls:
            calls: list[tuple[str, str, Any]] = []
            for element in tool_calls:
                call_id = ""
                name = ""
                raw: Any = None
                if isinstance(element, dict):
                    i_ = element.get("id")
                    if isinstance(i_, str):
                        call_id = i_
                    f = element.get("function")
                    if isinstance(f, dict):
                        nm = f.get("name")
                        if isinstance(nm, str):
                            name = nm
                        raw = f.get("arguments")
                calls.append((call_id, name, raw))
            # The tool messages right after: the batch's answers (the walk resumes after them).
            answers: list[tuple[str, Any]] = []
            while i < n:
                t = messages[i]
                if not isinstance(t, dict) or t.get("role") != "tool":
                    break
                i += 1
                tcid = t.get("tool_call_id")
                if isinstance(tcid, str):
                    answers.append((tcid, t.get("content")))
            yield (calls, answers)
        else:
            yield (extract_text(m.get("content")),)


def _event_items(events: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
    """The steps of a normalized session's events: exactly :func:`_message_items` of its chat
    view (``Session.chat_view``) without building the view's dicts.

    User, system and other messages break runs; a compaction is no message at all (it neither
    breaks a run nor ends a batch's answers); each tool result is a tool message carrying its
    call id when it has one; free-text arguments are the JSON string of the text.
    """
    n = len(events)
    i = 0
    while i < n:
        e = events[i]
        i += 1
        if isinstance(e, AssistantTurn):
            if e.tool_calls:
                calls: list[tuple[str, str, Any]] = []
                for c in e.tool_calls:
                    raw = c.raw_arguments
                    if c.arguments_kind == "free_text":
                        raw = orjson.dumps(raw).decode()
                    call_id = c.id
                    name = c.name
                    calls.append((call_id if isinstance(call_id, str) else "",
                                  name if isinstance(name, str) else "", raw))
                # The results right after: the batch's answers (the walk resumes after them;
                # a compaction among them is no message).
                answers: list[tuple[str, Any]] = []
                while i < n:
                    t = events[i]
                    if isinstance(t, ToolResult):
                        call_id = t.call_id
                        if isinstance(call_id, str):
                            answers.append((call_id, t.content))
                    elif not isinstance(t, Compaction):
                        break
                    i += 1
                yield (calls, answers)
            else:
                yield (e.text if isinstance(e.text, str) else extract_text(e.text),)
        elif isinstance(e, _RUN_BREAKERS):
            yield _BREAK


def prepare_messages(messages: Sequence[Any]) -> PreparedMessages:
    """Everything threshold-independent about an OpenAI-chat message list, computed once."""
    if not isinstance(messages, list | tuple):
        messages = list(messages)
    return _prepare(_message_items(messages), len(messages))


def prepare_events(events: Sequence[Any]) -> PreparedMessages:
    """:func:`prepare_messages` of a normalized session's chat view, from its events."""
    n_messages = len(events) - sum(map(isinstance, events, repeat(Compaction)))
    return _prepare(_event_items(events), n_messages)


def _name_facts(name: str) -> tuple[tuple[str], tuple[str], bool]:
    """A one-call batch's tool names, lower-cased names and costliness (kept per name in a
    session: a session calls few tools, and each step holds these tuples)."""
    return (name,), (name.lower(),), _is_costly(name)


def _prepare(items: Iterator[tuple[Any, ...]], n_messages: int) -> PreparedMessages:
    sig_ids: dict[str, int] = {}
    signatures: list[str] = []  # by id: each step keeps the first copy of its signature
    facts_of: dict[str, tuple[tuple[str], tuple[str], bool]] = {}
    results_ids: dict[Any, int] = {}
    text_ids: dict[int, int] = {}
    # raw arguments string -> (results key suffix "\0" + canonical rendering, signature suffix)
    arg_cache: dict[str, tuple[str, str]] = {}
    value_cache: dict[bytes, tuple[Any, tuple[str, str]]] = {}

    def entry_of(raw: Any) -> tuple[str, str]:
        """A call's :func:`_args_entry`, memoised (per session, and across sessions)."""
        if isinstance(raw, str):
            entry = arg_cache.get(raw)
            if entry is None:
                entry = arg_cache[raw] = _text_entry(raw)
            return entry
        return _value_entry(raw, value_cache)

    previous: dict[int, int] = {}
    # One row per step, in the column order of PreparedMessages (a tuple a step costs a fraction
    # of fourteen appends); transposed at the end.
    rows: list[tuple[Any, ...]] = []
    prose_steps: list[int] = []
    prose_text: list[int] = []
    prose_segment: list[int] = []
    segment = 0
    next_call = 0
    # The no-refusal walk of the loop detector.
    run_sig = -1
    run_no = -1
    run_count = 0
    run_total = 0
    run_last = -1
    for item in items:
        if not item:  # _BREAK
            segment += 1
            run_sig = -1
            continue
        if len(item) == 2:
            calls, answers = item
            if len(calls) == 1:  # the usual batch
                call_id, name, raw = calls[0]
                entry = entry_of(raw)
                facts = facts_of.get(name)
                if facts is None:
                    facts = facts_of[name] = _name_facts(name)
                tools: tuple[str, ...]
                lowered: tuple[str, ...]
                tools, lowered, is_costly = facts
                sig = name + entry[1]
                results = _join_one(call_id, (name, entry[0]), answers)
            else:
                ids: list[str] = []
                keys: list[tuple[str, str]] = []
                sigs: list[str] = []
                for call_id, name, raw in calls:
                    entry = entry_of(raw)
                    ids.append(call_id)
                    keys.append((name, entry[0]))
                    sigs.append(name + entry[1])
                tools = tuple([name for _, name, _ in calls])
                sig = "|".join(sorted(sigs))
                results = _join(ids, keys, answers)
                is_costly = any(_is_costly(nm) for nm in tools)
                lowered = tuple(dict.fromkeys(nm.lower() for nm in tools))
            sid = sig_ids.get(sig)
            if sid is None:
                sid = sig_ids[sig] = len(sig_ids)
                signatures.append(sig)
            else:
                sig = signatures[sid]
            if results is None:
                rid = -1
            else:
                rid = results_ids.get(results, -1)
                if rid == -1:
                    rid = results_ids[results] = len(results_ids)
            seen = previous.get(sid, -2)
            previous[sid] = rid
            # no-refusal walk
            if sid == run_sig:
                run_count += 1
                run_total += 1
            else:
                run_sig = sid
                run_no += 1
                run_count = 1
                run_total = 1
                run_last = -1
            count = run_count
            if run_last != -1 and rid != -1:
                if run_last != rid:
                    run_count = 1
                    outcome = _OUTCOME_CHANGED
                else:
                    outcome = _OUTCOME_REPEATED
            else:
                outcome = _OUTCOME_NC
            run_last = rid
            rows.append((
                True, next_call, tools, sig, seen >= 0 and rid != -1 and seen == rid,
                seen != -2 and (seen == -1 or rid == -1), rid != -1, is_costly, lowered, count,
                run_total, outcome, run_no, None,
            ))
            next_call += len(calls)
        else:
            text = item[0]
            text_hash = None
            if text:
                h = fnv1a_64(text)
                tid = text_ids.get(h)
                if tid is None:
                    tid = text_ids[h] = len(text_ids)
                text_hash = hex16(h)
                prose_steps.append(len(rows))
                prose_text.append(tid)
                prose_segment.append(segment)
            rows.append((False, next_call, (), None, False, False, False, False, (), 0, 0, None,
                         -1, text_hash))
    (batch, calls_before, tools_of, signature, identical, not_evaluated, joined, costly,
     names_lower, count_of, total, outcome_of, run, text_hash_of) = (
        [list(column) for column in zip(*rows, strict=True)] if rows
        else [[] for _ in range(14)])
    return PreparedMessages(
        n_messages, batch, calls_before, tools_of, signature, identical, not_evaluated, joined,
        costly, names_lower, count_of, total, outcome_of, run, text_hash_of, prose_steps,
        prose_text, prose_segment,
    )


_make_step = new_step

# A row of the walk: (step, refused, count, effective_max, ceiling, batch_class, rule_or_outcome)
# for a batch step; (step, refused, count or None, None, None, None, None) for a prose step.
_Row = tuple[int, bool, "int | None", "int | None", "int | None", "str | None", "str | None"]


@lru_cache(maxsize=64)
def _classes(config: GglibConfig) -> dict[tuple[bool, bool], tuple[int, int | None, str]]:
    """Per class (observation, costly): effective_max, ceiling (None when exempt), class name.

    Cached: every session of a corpus asks for the same configuration's (read only)."""
    S = config.max_repeated_batch_steps
    O = config.max_observation_steps  # noqa: E741 - the spec's name
    observation_max = O if O is not None else S
    ceiling_value = max(observation_max, S)
    classes: dict[tuple[bool, bool], tuple[int, int | None, str]] = {}
    for obs in (False, True):
        for costly in (False, True):
            exempt = obs and O is not None and not costly
            classes[(obs, costly)] = (
                observation_max if obs else S,
                None if exempt else ceiling_value,
                batch_class_of(obs, costly),
            )
    return classes


@lru_cache(maxsize=64)
def _lone_steps_may_refuse(config: GglibConfig) -> bool:
    """Whether a threshold is 0: only then is a run's first step (count 1, total 1) refused."""
    return any(eff < 1 or (ceil is not None and ceil < 1)
               for eff, ceil, _ in _classes(config).values())


def _rows(p: PreparedMessages, config: GglibConfig) -> list[_Row]:
    """Every step's varying values under ``config`` (the walk described above)."""
    classes = _classes(config)
    obs = p.observation_flags(config.observation_tools)
    M = config.max_stagnation_steps
    stag_counts = p.stagnation(M)[0] if p.prose_steps else []
    prose_steps = p.prose_steps
    n_prose = len(prose_steps)
    pi = 0
    count, total, outcome, run, costly = p.count, p.total, p.outcome, p.run, p.costly
    current_run = -1
    base: int | None = None
    rows: list[_Row] = []
    append = rows.append
    for k, is_batch in enumerate(p.batch):
        if is_batch:
            eff, ceil, cls = classes[(obs[k], costly[k])]
            if run[k] != current_run:
                current_run = run[k]
                base = None
            t = total[k]
            if base is None:
                c = count[k]
                if c > eff or (ceil is not None and t > ceil):
                    base = c - t
            if base is not None:
                c = base + t
                append((k, True, c, eff, ceil, cls, "strike" if c > eff else "ceiling"))
            else:
                append((k, False, count[k], eff, ceil, cls, outcome[k]))
        elif pi < n_prose and prose_steps[pi] == k:
            c = stag_counts[pi]
            pi += 1
            append((k, c > M, c, None, None, None, None))
        else:
            append((k, False, None, None, None, None, None))
    return rows


def _row_extra(p: PreparedMessages, row: _Row, M: int) -> dict[str, Any]:
    """The gglib fields (``STEP_FIELDS``) of one row of :func:`_rows`, for the Step and the JSON
    paths."""
    k, refused, _c, eff, ceil, cls, note = row
    if cls is None:
        return _prose_extra(M, p.text_hash[k])
    t = p.total[k]
    assert eff is not None
    return _batch_extra(
        total=t, effective_max=eff, ceiling=ceil, batch_class=cls,
        rule=note if refused else None, outcome=None if refused else note,
        rescued=False if refused else t > eff, identical=p.identical[k],
        not_evaluated=p.not_evaluated[k], answers_joined=p.joined[k],
    )


def _step_of(p: PreparedMessages, row: _Row, after: bool, M: int) -> Step:
    k, refused, c, _eff, _ceil, cls, _note = row
    if cls is None:
        return _make_step(k, None, (), None, "refuse" if refused else "pass",
                          "stagnation" if refused else None, c, after, _row_extra(p, row, M))
    return _make_step(k, p.call[k], p.tools[k], p.signature[k], "refuse" if refused else "pass",
                      "loop" if refused else None, c, after, _row_extra(p, row, M))


class _Detail:
    """The steps of one prepared session under one configuration, built on demand."""

    __slots__ = ("config", "first", "prepared")

    def __init__(self, prepared: PreparedMessages, config: GglibConfig, first: int) -> None:
        self.prepared = prepared
        self.config = config
        self.first = first

    def steps(self) -> tuple[Step, ...]:
        p, first = self.prepared, self.first
        M = self.config.max_stagnation_steps
        return tuple(_step_of(p, row, row[0] > first, M) for row in _rows(p, self.config))

    def flagged(self) -> tuple[FlaggedStep, ...]:
        p, first = self.prepared, self.first
        if first == NO_REFUSAL:
            return ()
        M = self.config.max_stagnation_steps
        calls = p.call
        return tuple(
            FlaggedStep(row[0], calls[row[0]], _step_of(p, row, row[0] > first, M))
            for row in _rows(p, self.config) if row[1]
        )

    def markers(self) -> tuple[Marker, ...]:
        """The refused steps in brief: the walk of :func:`_rows`, over batch steps only until
        a run refuses, and without building any step."""
        p, first, config = self.prepared, self.first, self.config
        if first == NO_REFUSAL:  # gglib never warns: no refusal, no marker
            return ()
        out: list[Marker] = []
        classes = _classes(config)
        obs = p.observation_flags(config.observation_tools)
        count, total, run, costly, call = p.count, p.total, p.run, p.costly, p.call
        current_run = -1
        base: int | None = None
        eff, ceil = 0, None
        for k in range(first, len(count)):
            r = run[k]
            if r < 0:
                continue
            if r != current_run:
                current_run = r
                base = None
                eff, ceil, _ = classes[(obs[k], costly[k])]
            if base is None:
                c = count[k]
                t = total[k]
                if c > eff or (ceil is not None and t > ceil):
                    base = c - t
                else:
                    continue
            out.append(Marker(k, k, call[k], call[k], "refuse", "loop", base + total[k]))
        if p.prose_steps:
            M = config.max_stagnation_steps
            counts = p.stagnation(M)[0]
            prose = [Marker(k, k, None, call[k], "refuse", "stagnation", c)
                     for k, c in zip(p.prose_steps, counts, strict=True) if c > M]
            if prose:
                out = sorted(out + prose)
        return tuple(out)

    def verdict_counts(self) -> tuple[int, int]:
        """``(refusals, 0)``: :meth:`markers` counted, not built. Once a run refuses, every
        later step of that run is refused too (see the comment above :class:`PreparedMessages`),
        so a run's refusals are its steps from the first whose count or total exceeds its
        class's threshold: two look-ups per run (:meth:`PreparedMessages.runs`)."""
        p, first, config = self.prepared, self.first, self.config
        if first == NO_REFUSAL:
            return 0, 0
        classes = _classes(config)
        obs = p.observation_flags(config.observation_tools)
        costly = p.costly
        positions, exceeds, last, lone = p.runs()
        refusals = 0
        # Runs ending before the first refusal refuse nothing.
        for r in range(bisect_left(last, first), len(positions)):
            pos = positions[r]
            # One signature, hence one set of tool names and one class, per run.
            eff, ceil, _ = classes[(obs[pos[0]], costly[pos[0]])]
            exceed = exceeds[r]
            at = exceed[eff] if eff < len(exceed) else len(pos)
            if ceil is not None and ceil < at:  # the step at index ceil has total ceil + 1
                at = ceil
            refusals += len(pos) - at
        if _lone_steps_may_refuse(config):
            for k in lone[bisect_left(lone, first):]:  # count 1, total 1
                eff, ceil, _ = classes[(obs[k], costly[k])]
                refusals += eff < 1 or (ceil is not None and ceil < 1)
        if p.prose_steps:
            M = config.max_stagnation_steps
            refusals += sum(map(M.__lt__, p.stagnation(M)[0]))
        return refusals, 0

    def step_json(self) -> list[dict[str, Any]]:
        p, first = self.prepared, self.first
        M = self.config.max_stagnation_steps
        call, tools, signature = p.call, p.tools, p.signature
        out: list[dict[str, Any]] = []
        append = out.append
        for row in _rows(p, self.config):
            k, refused, c, _eff, _ceil, cls, _note = row
            prose = cls is None
            append({
                "turn": k,
                "call": None if prose else call[k],
                "tools": [] if prose else list(tools[k]),
                "signature": None if prose else signature[k],
                "verdict": "refuse" if refused else "pass",
                "detector": ("stagnation" if prose else "loop") if refused else None,
                "count": c,
                "after_divergence": k > first,
                **_row_extra(p, row, M),
            })
        return out


def run_lazy(
    prepared: PreparedMessages, config: GglibConfig, *, session: str = "", source: str = "",
    format: str = "openai_chat", engine: str = "gglib",
) -> SessionReplay:
    """The fast path: first refusal by table look-ups, steps built only when read."""
    first = prepared.first_refusal_index(config)
    return SessionReplay.lazy(session, source, format, engine, prepared.first_refusal_at(first),
                              False, _Detail(prepared, config, first))


def run_prepared(
    prepared: PreparedMessages, config: GglibConfig
) -> tuple[tuple[Step, ...], FirstRefusal | None]:
    """``(steps, first_refusal)`` over prepared data; equal to :func:`replay_messages`."""
    first = prepared.first_refusal_index(config)
    return _Detail(prepared, config, first).steps(), prepared.first_refusal_at(first)


# --------------------------------------------------------------------------------------------
# Prepared data as plain JSON columns (the on-disk cache's entry of one file); a whole corpus
# as arrays is the columns module's.

CODEC_VERSION = 1
"""Bumped whenever :func:`encode` writes something :func:`decode` of an older loopscope would
read differently (the cache key carries it)."""

_OUTCOMES = (None, _OUTCOME_CHANGED, _OUTCOME_REPEATED, _OUTCOME_NC)


def encode(p: PreparedMessages) -> dict[str, Any]:
    """``p`` as JSON-ready columns; :func:`decode` gives it back (a property test)."""
    tool_sets: dict[tuple[str, ...], int] = {}
    name_sets: dict[tuple[str, ...], int] = {}
    sigs: dict[str, int] = {}
    for tools, names in zip(p.tools, p.names_lower, strict=True):
        tool_sets.setdefault(tools, len(tool_sets))
        name_sets.setdefault(names, len(name_sets))
    for sig in p.signature:
        if sig is not None:
            sigs.setdefault(sig, len(sigs))
    return {
        "n_messages": p.n_messages,
        "batch": [int(b) for b in p.batch], "call": p.call,
        "tool_sets": [list(t) for t in tool_sets], "tools": [tool_sets[t] for t in p.tools],
        "name_sets": [list(t) for t in name_sets],
        "names": [name_sets[t] for t in p.names_lower],
        "signatures": list(sigs),
        "signature": [-1 if s is None else sigs[s] for s in p.signature],
        "identical": [int(b) for b in p.identical],
        "not_evaluated": [int(b) for b in p.not_evaluated],
        "joined": [int(b) for b in p.joined], "costly": [int(b) for b in p.costly],
        "count": p.count, "total": p.total, "outcome": [_OUTCOMES.index(o) for o in p.outcome],
        "run": p.run, "text_hash": p.text_hash, "prose_steps": p.prose_steps,
        "prose_text": p.prose_text, "prose_segment": p.prose_segment,
        # Stagnation counts of every window already worked out (the default one, by ingest).
        "stagnation": {str(m): [counts, first] for m, (counts, first) in p._stagnation.items()},
    }


def _str_lists(doc: dict[str, Any], key: str) -> list[tuple[str, ...]]:
    value = doc.get(key)
    if type(value) is not list or any(
            type(v) is not list or any(type(x) is not str for x in v) for v in value):
        raise CodecError(f"{key}: expected lists of strings")
    return [tuple(v) for v in value]


def decode(doc: Any) -> PreparedMessages:
    """The :class:`PreparedMessages` that :func:`encode` wrote; :class:`CodecError` for
    anything else (a damaged or foreign cache entry is never trusted)."""
    if type(doc) is not dict:
        raise CodecError("expected an object")
    n_messages = doc.get("n_messages")
    if type(n_messages) is not int or n_messages < 0:
        raise CodecError("n_messages: expected a count")
    batch = ints_at(doc, "batch", None, 0, 1)
    n = len(batch)
    tool_sets, name_sets = _str_lists(doc, "tool_sets"), _str_lists(doc, "name_sets")
    signatures = doc.get("signatures")
    if type(signatures) is not list or any(type(s) is not str for s in signatures):
        raise CodecError("signatures: expected a list of strings")
    text_hash = doc.get("text_hash")
    if type(text_hash) is not list or len(text_hash) != n or any(
            h is not None and type(h) is not str for h in text_hash):
        raise CodecError("text_hash: expected strings or nulls")
    prose_steps = ints_at(doc, "prose_steps", None, 0, max(n - 1, 0))
    m = len(prose_steps)
    windows = doc.get("stagnation", {})
    if type(windows) is not dict:
        raise CodecError("stagnation: expected an object")
    stagnation: dict[int, tuple[list[int], int]] = {}
    for size, value in windows.items():
        if not size.isdigit() or type(value) is not list or len(value) != 2:
            raise CodecError("stagnation: expected counts by window")
        counts = ints_at({"c": value[0]}, "c", m, 1, None)
        first = value[1]
        if type(first) is not int or not (first == NO_REFUSAL or 0 <= first < n):
            raise CodecError("stagnation: first step out of range")
        stagnation[int(size)] = (counts, first)
    prepared = PreparedMessages(
        n_messages, [b == 1 for b in batch], ints_at(doc, "call", n, 0, None),
        [tool_sets[k] for k in ints_at(doc, "tools", n, 0, len(tool_sets) - 1)],
        [None if k < 0 else signatures[k]
         for k in ints_at(doc, "signature", n, -1, len(signatures) - 1)],
        [b == 1 for b in ints_at(doc, "identical", n, 0, 1)],
        [b == 1 for b in ints_at(doc, "not_evaluated", n, 0, 1)],
        [b == 1 for b in ints_at(doc, "joined", n, 0, 1)],
        [b == 1 for b in ints_at(doc, "costly", n, 0, 1)],
        [name_sets[k] for k in ints_at(doc, "names", n, 0, len(name_sets) - 1)],
        ints_at(doc, "count", n, 0, None), ints_at(doc, "total", n, 0, None),
        [_OUTCOMES[k] for k in ints_at(doc, "outcome", n, 0, len(_OUTCOMES) - 1)],
        ints_at(doc, "run", n, -1, None), text_hash, prose_steps,
        ints_at(doc, "prose_text", m, 0, None), ints_at(doc, "prose_segment", m, 0, None),
    )
    prepared._stagnation.update(stagnation)
    return prepared

