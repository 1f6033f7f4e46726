"""The fast path: hash once, count once per ``historySize``, select per configuration.

In shadow mode every call is recorded and its own outcome attached right after it, so the
history before call ``i`` is simply the calls ``max(0, i - historySize) .. i - 1``, and the
run-scoped history is the part of that window inside ``i``'s run (runs are contiguous). Every
count the detector uses (the no-progress streak, the recent count, the unknown-tool streak,
the ping-pong count) therefore depends only on the session and ``historySize``, and a call's verdict
never depends on the verdicts before it:

* :func:`prepare` hashes each call once (argsHash, resultHash, unknown-tool name, poll flag, run)
  and integer-codes the hashes (a result hash of the usual kinds is coded by what it hashes, and
  written out only when a step shows it);
* :meth:`PreparedSession.counters` computes, once per ``historySize``, the no-progress streak,
  the recent count, the unknown-tool streak and the ping-pong count/evidence of every call with
  incremental walks (no re-hashing, no re-stringifying), and each call's largest count;
* :func:`run` evaluates the detectors' precedence (``detectToolCallLoop``'s order: unknown
  tool, breaker, poll, ping-pong, generic) only for the calls whose largest count reaches the
  lowest threshold (plus the guard's aborts), and only until the first refusal and the first
  warn step are known: that is all a sweep or an overview needs. The steps themselves
  (messages, warning keys, the warning de-duplication, every pass step) and the markers are
  built only when read (:attr:`SessionReplay.steps`, :attr:`SessionReplay.markers`).

``run(prepare(s), c) == replay(s, c)`` is a property test, for every field of every step.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any, Final, TypeVar

import orjson

from loopscope.bulk import keep_shared, memoised_by_json
from loopscope.engines.base import (
    FirstRefusal,
    FlaggedStep,
    Marker,
    SessionReplay,
    Step,
    new_step,
)
from loopscope.engines.codec import CodecError, ints_at, require_strings, strs_at
from loopscope.engines.openclaw.shared.guard import COMPACTION_OP, USER_OP, coded_guard_aborts
from loopscope.engines.openclaw.shared.hashing import (
    extract_unknown_tool_name,
    is_known_poll_call,
    is_loop_veto,
    is_mapping,
)
from loopscope.engines.openclaw.shared.session import BLOCK_MARKERS, ENGINE_NAME, OPENCLAW_FORMAT
from loopscope.engines.openclaw.shared.upstream import guard_message
from loopscope.engines.openclaw.shared.verdicts import (
    positions_reaching,
    verdict_message,
    verdict_warning_key,
)
from loopscope.engines.openclaw.v2026_6 import upstream as rules
from loopscope.engines.openclaw.v2026_6.config import OpenClawConfig
from loopscope.engines.openclaw.v2026_6.hashing import hash_tool_outcome
from loopscope.formats.openclaw_session import tool_result_text
from loopscope.jsonrules.javascript import UNDEFINED, digest, fast_json_parse, js_trim
from loopscope.model import AssistantTurn, Compaction, Session, ToolResult, UserMessage

PREPARE_KEY: Final = "configurable"
"""The key of this prepared data: 2026.6.11 and 2026.7.35 share it (same loop code)."""

_T = TypeVar("_T")
_NO_ABORTS: dict[int, int] = {}

# Tools whose outcome hash may look at params or details beyond ``{details, text}``
# (``hashToolOutcome``: exec, process poll/log, message sends).
_SPECIAL_OUTCOME_TOOLS = frozenset({"exec", "process", "message", "sessions_send"})
_TEXT_RESULT_HEAD = b'{"details":{},"text":'
_COMMON_PREFIX_AB = "session execution blocked "
"""How the first two of the ``BLOCK_MARKERS`` begin (a test checks): one search rules out both."""
_EMPTY_OBJECT_DIGEST = digest({})


@dataclass(frozen=True, slots=True)
class Counters:
    """Per-call counts of the detector for one ``historySize`` (lists indexed by call
    position)."""

    no_progress: list[int]
    latest_result: list[int]
    """Result code of the newest hashed same-args record in the window (0 = none)."""
    recent: list[int]
    unknown_streak: list[int]
    unknown_name: list[int]
    ping_pong: list[int]
    ping_pong_evidence: list[bool]
    ping_pong_last: list[int]
    """Position of the newest record (the paired side) when ``ping_pong`` > 0, else -1."""
    peak: list[int]
    """The largest of the four counts: below the lowest threshold, the call passes."""
    keys: dict[tuple[int, str, str], str] = field(default_factory=dict)
    """Memo of warning keys (they depend on the window, not on thresholds)."""

    def reaching(self, floor: int) -> list[int]:
        return positions_reaching(self.peak, floor)


@dataclass(eq=False)
class PreparedSession:
    """A session hashed for the OpenClaw engine; threshold-independent."""

    session: str
    source: str
    format: str
    turn: list[int]
    call: list[int]
    """The call's index among all calls of the session (the step's ``call``)."""
    tool_name: list[str]
    run: list[int]
    """``k`` of the run id ``run-<k>``."""
    recorded_block: list[bool]
    args_hash: list[str]
    result_hash: Sequence[str | None]
    """By call: its result hash (see :class:`ResultHashes`)."""
    unknown_tool: list[str | None]
    args_code: list[int]
    result_code: list[int]
    """0 = no hash."""
    unknown_code: list[int]
    """0 = no unknown-tool name."""
    tool_code: list[int]
    tool_empty: list[bool]
    poll: list[bool]
    run_start: list[int]
    ops: list[int]
    """Run starts, compactions and calls in transcript order (only kept when the session has a
    compaction; without one the guard never acts)."""
    unknown_names: list[str] = field(default_factory=list)
    result_hashes: Sequence[str] = field(default_factory=list)
    """By result code - 1 (see :class:`ResultHashes`)."""
    run_ids: list[str] = field(default_factory=list)
    _counters: dict[int, Counters] = field(default_factory=dict, repr=False)
    _guard: dict[int, dict[int, int]] = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.args_hash)

    def counters(self, history_size: int) -> Counters:
        found = self._counters.get(history_size)
        if found is None:
            found = self._counters[history_size] = _compute_counters(self, history_size)
        return found

    def guard_aborts(self, window_size: int) -> dict[int, int]:
        """Call position → identical-observation count, for every guard abort (guard on)."""
        found = self._guard.get(window_size)
        if found is None:
            found = self._guard[window_size] = _compute_guard(self, window_size)
        return found


_SHARED_PARAMS: dict[str, tuple[Any, str]] = {}
"""JSON argument text → (params, sha256 of their stableStringify), shared by every session
(agents repeat short arguments across sessions; both are pure functions of the text). The
params are only ever read."""
_SHARED_PARAMS_MAX = 50_000
_SHARED_PARAMS_MAX_TEXT = 512
_SHARED_VALUE_DIGESTS: dict[bytes, tuple[Any, str]] = {}
"""The same for arguments recorded as values: their :func:`json_memo_key` → (the value, its
digest)."""


def _parsed_params(text: str) -> tuple[Any, str]:
    """``(params, digest(params))`` of an argument text (memoised across sessions when short)."""
    entry = _SHARED_PARAMS.get(text)
    if entry is None:
        ok, value = fast_json_parse(text)
        value = value if ok else text
        entry = (value, digest(value))
        if len(text) <= _SHARED_PARAMS_MAX_TEXT:
            keep_shared(_SHARED_PARAMS, text, entry, max_entries=_SHARED_PARAMS_MAX)
    return entry


def _value_digest(value: Any, memo: dict[bytes, tuple[Any, str]]) -> str:
    """``digest(value)`` of arguments recorded as a value, memoised in ``memo`` (the
    session's) and across sessions: hashing them took a quarter of ``prepare``."""
    return memoised_by_json(value, digest, memo, _SHARED_VALUE_DIGESTS,
                            max_shared_key=_SHARED_PARAMS_MAX_TEXT, max_shared=_SHARED_PARAMS_MAX)


def _digest_text_result(text: str) -> str:
    """``digest({"details": {}, "text": text})``: the outcome hash of a plain text result."""
    try:
        body = orjson.dumps(text)  # = JSON.stringify(text) for every string without a surrogate
    except TypeError:
        return digest({"details": {}, "text": text})
    return sha256(_TEXT_RESULT_HEAD + body + b"}").hexdigest()


# ``hash_tool_outcome`` of a ``process`` poll/log with empty details hashes these objects, with
# ``status`` undefined and the other fields null; written here in stableStringify's key order.
_POLL_HEAD = (b'{"action":"poll","aggregated":null,"exitCode":null,"exitSignal":null,'
              b'"status":undefined,"text":')
_LOG_HEAD = b'{"action":"log","exitCode":null,"exitSignal":null,"status":undefined,"text":'
_LOG_TAIL = b',"totalChars":null,"totalLines":null,"truncated":null}'


def _process_poll_outcome(params: Any, text: str) -> Outcome | None:
    """The outcome hash (:data:`Outcome`) of a ``process`` call whose result has empty details
    (as ``hashToolOutcome`` does) when the call polls or reads a log; ``None`` when it hashes as a
    plain text result
    (:func:`_digest_text_result`)."""
    action = params.get("action") if is_mapping(params) else None
    if type(action) is str and action in ("poll", "log"):
        return _hashed_later(_digest_poll_text, action, text)
    if action == "poll" or action == "log":  # a str subclass: take no chances
        return hash_tool_outcome("process", params, {"content": [{"type": "text", "text": text}],
                                                     "details": {}}, UNDEFINED)[0] or ""
    return None


def _digest_poll_text(action: str, text: str) -> str:
    """:func:`_digest_process_poll` of a ``poll`` or ``log`` action."""
    try:
        body = orjson.dumps(text)
    except TypeError:  # a surrogate: let the reference path write it
        return hash_tool_outcome("process", {"action": action},
                                 {"content": [{"type": "text", "text": text}], "details": {}},
                                 UNDEFINED)[0] or ""
    if action == "poll":
        return sha256(_POLL_HEAD + body + b"}").hexdigest()
    return sha256(_LOG_HEAD + body + _LOG_TAIL).hexdigest()


def _error_hash(text: str) -> str:
    """The outcome hash of an error result."""
    return "error:" + _digest_error(text)


Outcome = str | tuple[Any, ...]
"""An outcome hash during ``prepare``: written out, or the function and arguments that write
it (:func:`_hashed_later`)."""


def _hashed_later(write: Callable[..., str], *text: str) -> Outcome:
    """``write(*text)``, a hash written when first read (:class:`ResultHashes`). Equal
    arguments, equal hashes; different arguments, different preimages of the hash function
    (each writer puts its own fields around the text), hence different hashes: the arguments
    stand for the hash until then. (No writer gives an empty hash, which would be none.)"""
    return (write, *text)


def _digest_trimmed_text(source: str) -> str:
    return _digest_text_result(js_trim(source))


def _digest_trimmed_poll(action: str, source: str) -> str:
    return _digest_poll_text(action, js_trim(source))


_OVER_SOURCE: dict[Callable[..., str], Callable[..., str]] = {
    _digest_text_result: _digest_trimmed_text, _digest_poll_text: _digest_trimmed_poll}


def _kept(outcome: Outcome, source: str) -> Outcome:
    """What a session keeps of a new outcome hash until it is read. A hash to write over a
    trimmed copy of the session's result text (``js_trim(source)``, the last argument) is
    kept over the text itself: the copy would stay in memory, hashes only leave it."""
    if type(outcome) is tuple and outcome[-1] is not source:
        return (_OVER_SOURCE[outcome[0]], *outcome[1:-1], source)
    return outcome


class _ListLike(Sequence[_T]):
    """A read-only sequence that indexes, slices, compares and prints like the list it stands
    for (so the prepared data reads, and dumps, as before)."""

    __slots__ = ()

    def _item(self, index: int) -> _T:
        raise NotImplementedError

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self)))]
        return self._item(index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


class ResultHashes(_ListLike[str]):
    """A session's result hashes, each written out the first time it is read.

    A replay compares result codes only (equal hashes, equal codes); the hashes themselves
    show in steps and warning keys, which are built when read. Hashing every distinct result
    text cost a tenth of ``prepare``.
    """

    __slots__ = ("_items",)

    def __init__(self, items: list[Outcome]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def _item(self, index: int) -> str:
        item = self._items[index]
        if isinstance(item, tuple):
            item = self._items[index] = _written(item)
        return item


class HashesByCall(_ListLike[str | None]):
    """``PreparedSession.result_hash``: each call's result hash (``None`` for code 0), read
    through :class:`ResultHashes`."""

    __slots__ = ("_codes", "_hashes")

    def __init__(self, codes: list[int], hashes: Sequence[str]) -> None:
        self._codes = codes
        self._hashes = hashes

    def __len__(self) -> int:
        return len(self._codes)

    def _item(self, index: int) -> str | None:
        code = self._codes[index]
        return self._hashes[code - 1] if code else None


def _written(outcome: Outcome) -> str:
    """An outcome hash written out."""
    return outcome[0](*outcome[1:]) if isinstance(outcome, tuple) else outcome


def _numbered_by_text(items: list[Outcome], codes: list[int]) -> tuple[list[str], list[int]]:
    """Every hash written out and the codes renumbered by hash text, in call order: what
    ``prepare`` assigns when it writes each hash at once. Needed when a session holds a hash
    written at once by the reference path (a special tool's outcome), which may equal one
    written later for another kind of result (both hashing the same object)."""
    written = [_written(item) for item in items]
    by_text: dict[str, int] = {}
    hashes: list[str] = []
    renumbered = []
    for code in codes:
        if code:
            text = written[code - 1]
            code = by_text.get(text, 0)
            if not code:
                hashes.append(text)
                code = by_text[text] = len(hashes)
        renumbered.append(code)
    return hashes, renumbered


def _digest_error(text: str) -> str:
    """``digest(text)`` of an error string."""
    try:
        return sha256(orjson.dumps(text)).hexdigest()
    except TypeError:
        return digest(text)


def _has_block_marker(text: str) -> bool:
    """Whether ``text.lower()`` holds one of the ``BLOCK_MARKERS`` (:func:`replay.
    _paired_result`'s test)."""
    lowered = text.lower()
    marker_a, marker_b, marker_c = BLOCK_MARKERS
    # (the first two markers begin alike: one search rules out both)
    return ((_COMMON_PREFIX_AB in lowered and (marker_a in lowered or marker_b in lowered))
            or marker_c in lowered)


def _paired(call: Any, turn_index: int, events: tuple[Any, ...],
            results_by_id: dict[str, list[int]]) -> ToolResult | None:
    """:func:`replay._paired_result`: a result paired by structure, else the first result after
    the call's turn carrying its id."""
    if call.result is not None:
        paired = events[call.result]
        if isinstance(paired, ToolResult) and paired.paired_by == "structure":
            return paired
    call_id = call.id
    if call_id is None:
        return None
    candidates = results_by_id.get(call_id)
    if not candidates:
        return None
    at = bisect_right(candidates, turn_index)
    if at >= len(candidates):
        return None
    found = events[candidates[at]]
    return found if isinstance(found, ToolResult) else None


def prepare(session: Session) -> PreparedSession:
    """Hash every call once and collect the threshold-independent facts.

    The same values as :func:`replay.session_ops` followed by ``hash_tool_call`` and
    ``hash_tool_outcome`` on each call, computed without building the intermediate objects:
    params are parsed and hashed once per distinct argument text, and a plain text result
    is hashed from its JSON string directly, when first read (:class:`ResultHashes`).
    """
    events = session.events
    results_by_id: dict[str, list[int]] = {}
    for event in events:
        if isinstance(event, ToolResult):
            call_id = event.call_id
            if call_id is not None:
                found = results_by_id.get(call_id)
                if found is None:
                    results_by_id[call_id] = [event.index]
                else:
                    found.append(event.index)
    openclaw = session.format == OPENCLAW_FORMAT
    # raw JSON argument text -> (params, sha256 hex of stableStringify(params))
    parsed: dict[str, tuple[Any, str]] = {}
    value_digests: dict[bytes, tuple[Any, str]] = {}
    # Loops repeat their answers (about half the results of a session, in a typical corpus).
    # Searching a result for the block markers and hashing a text result cost as much as
    # everything else together, and both are pure functions of the text: done once per text.
    blocked_texts: dict[str, bool] = {}
    args_codes: dict[str, int] = {}
    first_args_hashes: list[str] = []  # by args code - 1
    result_codes: dict[Outcome, int] = {}
    unknown_codes: dict[str, int] = {}
    tool_codes: dict[str, int] = {}
    result_hashes: list[Outcome] = []
    written_at_once = False  # a hash of the reference path (see _numbered_by_text)
    unknown_names: list[str] = []
    # One row per call, in the column order below (one tuple a call costs a fraction of
    # sixteen appends); transposed at the end.
    rows: list[tuple[Any, ...]] = []
    ops: list[int] = []
    has_compaction = False
    current_run_start = 0
    run = 0
    run_id = "run-0"
    for event in events:
        if isinstance(event, AssistantTurn):
            tool_calls = event.tool_calls
            if not tool_calls:
                continue
            for c in tool_calls:
                name = c.name
                raw = c.raw_arguments
                if raw is None:
                    params: Any = {}
                    params_digest = _EMPTY_OBJECT_DIGEST
                elif type(raw) is str and c.arguments_kind == "json_text":
                    entry = parsed.get(raw)
                    if entry is None:
                        entry = parsed[raw] = _parsed_params(raw)
                    params, params_digest = entry
                else:
                    params = raw
                    params_digest = _value_digest(raw, value_digests)
                ops.append(len(rows))
                h = name + ":" + params_digest
                args_code = args_codes.get(h)
                if args_code is None:
                    args_code = args_codes[h] = len(args_codes) + 1
                    first_args_hashes.append(h)
                else:
                    h = first_args_hashes[args_code - 1]  # (each call keeps the first copy)
                paired = _paired(c, event.index, events, results_by_id)
                blocked = False
                outcome_hash: Outcome | None = None
                unknown: str | None = None
                if paired is not None:
                    text = paired.text
                    found_block = blocked_texts.get(text)
                    if found_block is None:
                        found_block = blocked_texts[text] = _has_block_marker(text)
                    blocked = found_block
                    plain: str | None = None  # the text of a plain text result, hashed below
                    source = text  # the result's text that ``plain`` is trimmed from
                    if paired.is_error:
                        outcome_hash = _hashed_later(_error_hash, text)
                        unknown = extract_unknown_tool_name(text)
                    else:
                        # Another agent's result is its text with no details.
                        details: Any = {}
                        if openclaw:
                            raw_details = paired.details
                            details = raw_details if is_mapping(raw_details) else {}
                            blocked = blocked or is_loop_veto(details)
                        if details or (name in _SPECIAL_OUTCOME_TOOLS and name != "process"):
                            content = (paired.content if openclaw
                                       else [{"type": "text", "text": text}])
                            outcome_hash, unknown = hash_tool_outcome(
                                name, params, {"content": content, "details": details}, UNDEFINED)
                            written_at_once = True
                        else:
                            if openclaw:
                                source = _content_source(paired.content)
                            plain = js_trim(source)
                            if name == "process":
                                outcome_hash = _process_poll_outcome(params, plain)
                                if outcome_hash is not None:
                                    plain = None
                    if plain is not None:
                        outcome_hash = _hashed_later(_digest_text_result, plain)
                if outcome_hash:
                    result_code = result_codes.get(outcome_hash)
                    if result_code is None:
                        result_hashes.append(_kept(outcome_hash, source))
                        result_code = result_codes[outcome_hash] = len(result_hashes)
                    unknown_code = 0
                    if unknown is not None:
                        unknown_code = unknown_codes.get(unknown, 0)
                        if not unknown_code:
                            unknown_names.append(unknown)
                            unknown_code = unknown_codes[unknown] = len(unknown_names)
                else:
                    unknown = None
                    result_code = unknown_code = 0
                tool_code = tool_codes.get(name)
                if tool_code is None:
                    tool_code = tool_codes[name] = len(tool_codes) + 1
                rows.append((
                    event.turn, c.index, name, run, blocked, h, unknown, args_code,
                    result_code, unknown_code, tool_code, name == "",
                    name == "command_status" or (
                        name == "process" and is_known_poll_call(name, params)),
                    current_run_start, run_id,
                ))
        elif isinstance(event, UserMessage):
            run += 1
            run_id = f"run-{run}"
            current_run_start = len(rows)
            ops.append(USER_OP)
        elif isinstance(event, Compaction):
            has_compaction = True
            ops.append(COMPACTION_OP)
    (turn, call_index, tool_name, run_of, recorded_block, args_hash, unknown_tool,
     args_code_of, result_code_of, unknown_code_of, tool_code_of, tool_empty, poll, run_start,
     run_ids) = ([list(column) for column in zip(*rows, strict=True)] if rows
                 else [[] for _ in range(15)])
    hashes: Sequence[str]
    if written_at_once and len(result_hashes) > 1:
        hashes, result_code_of = _numbered_by_text(result_hashes, result_code_of)
    else:
        hashes = ResultHashes(result_hashes)
    result_hash = HashesByCall(result_code_of, hashes)
    return PreparedSession(
        session=session.id, source=session.source, format=session.format, turn=turn,
        call=call_index, tool_name=tool_name, run=run_of, recorded_block=recorded_block,
        args_hash=args_hash, result_hash=result_hash, unknown_tool=unknown_tool,
        args_code=args_code_of, result_code=result_code_of, unknown_code=unknown_code_of,
        tool_code=tool_code_of, tool_empty=tool_empty, poll=poll, run_start=run_start,
        ops=ops if has_compaction else [], unknown_names=unknown_names,
        result_hashes=hashes, run_ids=run_ids,
    )


def _content_source(content: Any) -> str:
    """``extractTextContent`` of a recorded content value (:func:`hashing.result_text`) before
    it is trimmed: the importer's result text, for a list (anything else holds no text)."""
    return tool_result_text(content) if isinstance(content, list) else ""


def _compute_counters(p: PreparedSession, history_size: int) -> Counters:
    n = p.n
    args, res, unk, tool = p.args_code, p.result_code, p.unknown_code, p.tool_code
    run_start, tool_empty = p.run_start, p.tool_empty
    no_progress = [0] * n
    latest = [0] * n
    recent = [0] * n
    unknown_streak = [0] * n
    unknown_name = [0] * n
    ping = [0] * n
    evidence = [False] * n
    ping_last = [-1] * n
    # Incremental structures.
    hashed_positions: dict[int, list[int]] = {}  # args code -> positions with a result hash
    equal_run: dict[int, int] = {}  # args code -> equal-hash run length at its newest hashed
    window_counts: dict[int, int] = {}
    evict = 0
    current_run = -1
    unknown_run = [0] * n  # same tool + same unknown name run length ending at j
    alternation = [0] * n  # strict two-signature alternation length ending at j
    stable = [0] * n  # hashed suffix with equal hashes two apart, ending at j
    for i in range(n):
        a = args[i]
        start = run_start[i]
        lo = i - history_size
        if lo < start:
            lo = start
        # recent count: a sliding window of args codes over the run-scoped history
        if start != current_run:
            current_run = start
            window_counts.clear()
            evict = start
        else:
            previous = args[i - 1]
            window_counts[previous] = window_counts.get(previous, 0) + 1
        while evict < lo:
            gone = args[evict]
            window_counts[gone] -= 1
            evict += 1
        recent[i] = window_counts.get(a, 0)
        # no-progress streak
        positions = hashed_positions.get(a)
        if positions:
            in_window = len(positions) - bisect_left(positions, lo)
            if in_window > 0:
                run_length = equal_run[a]
                no_progress[i] = run_length if run_length < in_window else in_window
                latest[i] = res[positions[-1]]
        j = i - 1
        if j >= lo:
            # unknown-tool streak
            if tool[j] == tool[i] and unk[j]:
                span = j - lo + 1
                u = unknown_run[j]
                unknown_streak[i] = u if u < span else span
                unknown_name[i] = unk[j]
            # ping-pong
            span = j - lo + 1
            tail = alternation[j]
            if tail > span:
                tail = span
            if tail >= 2 and a == args[j - 1] and not tool_empty[j - 1]:
                ping[i] = tail + 1
                evidence[i] = stable[j] >= tail
                ping_last[i] = j
        # extend the per-position structures with call i
        r = res[i]
        if r:
            if positions:
                equal_run[a] = equal_run[a] + 1 if res[positions[-1]] == r else 1
                positions.append(i)
            else:
                hashed_positions[a] = [i]
                equal_run[a] = 1
        if unk[i]:
            unknown_run[i] = (unknown_run[i - 1] + 1 if i and unk[i - 1] == unk[i]
                              and tool[i - 1] == tool[i] else 1)
        if i == 0 or args[i - 1] == a:
            alternation[i] = 1
        elif i >= 2 and args[i - 2] == a and alternation[i - 1] >= 2:
            alternation[i] = alternation[i - 1] + 1
        else:
            alternation[i] = 2
        if not r:
            stable[i] = 0
        elif i == 0 or stable[i - 1] == 0:
            stable[i] = 1
        elif stable[i - 1] == 1:
            stable[i] = 2
        else:
            stable[i] = stable[i - 1] + 1 if res[i - 2] == r else 2
    peak = [max(a, b, c, d) for a, b, c, d in zip(no_progress, recent, unknown_streak, ping,
                                                  strict=True)]
    return Counters(no_progress, latest, recent, unknown_streak, unknown_name, ping, evidence,
                    ping_last, peak)


def _compute_guard(p: PreparedSession, window_size: int) -> dict[int, int]:
    return coded_guard_aborts(p.ops, p.args_code, p.result_code, window_size)


# A verdict: (call position, level or None, detector or None, count, guard abort count or None)
_Verdict = tuple[int, str | None, str | None, int, int | None]


def _evaluate(p: PreparedSession, config: OpenClawConfig, ctr: Counters | None,
              aborts: dict[int, int], complete: bool) -> tuple[list[_Verdict], int, bool, bool]:
    """The detectors' precedence (``detectToolCallLoop``'s order) over the calls that can be
    flagged.

    Returns ``(verdicts, first refusal position or -1, any warn step, verdicts complete)``.
    Unless ``complete``, stops as soon as the first refusal and a warn step are both known
    (all a sweep or an overview needs); the steps then re-evaluate in full.
    """
    r = config.resolved
    detection = ctr is not None
    warning, critical = r.warning_threshold, r.critical_threshold
    breaker, unknown = r.global_circuit_breaker_threshold, r.unknown_tool_threshold
    if ctr is not None:
        indices = ctr.reaching(warning if warning < unknown else unknown)
        if aborts:
            indices = sorted(set(indices).union(aborts))
        np_counts, recent, unk_counts = ctr.no_progress, ctr.recent, ctr.unknown_streak
        pings, evidence = ctr.ping_pong, ctr.ping_pong_evidence
    else:
        indices = sorted(aborts)
    poll = p.poll
    poll_on, ping_on, generic_on = (r.known_poll_no_progress_on, r.ping_pong_on,
                                    r.generic_repeat_on)
    verdicts: list[_Verdict] = []
    first = -1
    warned = False
    for i in indices:
        level = detector = None
        count = 0
        if detection:
            streak = np_counts[i]
            is_poll = poll[i]
            if unk_counts[i] >= unknown:
                level, detector, count = "critical", rules.UNKNOWN_TOOL_REPEAT, unk_counts[i]
            elif streak >= breaker:
                level, detector, count = "critical", rules.GLOBAL_CIRCUIT_BREAKER, streak
            elif is_poll and poll_on and streak >= critical:
                level, detector, count = "critical", rules.KNOWN_POLL_NO_PROGRESS, streak
            elif is_poll and poll_on and streak >= warning:
                level, detector, count = "warning", rules.KNOWN_POLL_NO_PROGRESS, streak
            elif ping_on and pings[i] >= critical and evidence[i]:
                level, detector, count = "critical", rules.PING_PONG, pings[i]
            elif ping_on and pings[i] >= warning:
                level, detector, count = "warning", rules.PING_PONG, pings[i]
            elif not is_poll and generic_on and streak >= critical:
                level, detector, count = "critical", rules.GENERIC_REPEAT, streak
            elif not is_poll and generic_on and recent[i] >= warning:
                level, detector, count = "warning", rules.GENERIC_REPEAT, recent[i]
        abort = aborts.get(i) if aborts else None
        if detector is None and abort is None:
            continue
        verdicts.append((i, level, detector, count, abort))
        if level == "critical" or abort is not None:
            if first < 0:
                first = i
                if warned and not complete:
                    return verdicts, first, warned, False
        elif not warned:
            warned = True
            if first >= 0 and not complete:
                return verdicts, first, warned, False
    return verdicts, first, warned, True


def run(p: PreparedSession, config: OpenClawConfig) -> SessionReplay:
    """Replay prepared data under ``config``: a selection over cached counts.

    Only calls whose largest count reaches the lowest threshold, and the guard's aborts, are
    evaluated, and only until the first refusal and the first warning are known; every other
    call passes. The steps are built when read.
    """
    r = config.resolved
    aborts = p.guard_aborts(r.guard_window_size) if r.guard_enabled and p.ops else _NO_ABORTS
    if not r.detection_on:
        if not aborts:
            return SessionReplay.lazy(p.session, p.source, p.format, ENGINE_NAME, None, False,
                                      _Detail(p, config, None, _NO_ABORTS, [], -1))
        ctr = None
    else:
        ctr = p.counters(r.history_size)
    verdicts, first, warned, complete = _evaluate(p, config, ctr, aborts, False)
    first_refusal = None
    if first >= 0:
        v = verdicts[-1] if verdicts[-1][0] == first else next(v for v in verdicts
                                                              if v[0] == first)
        detector = v[2] if v[1] == "critical" else rules.POST_COMPACTION_GUARD
        assert detector is not None
        first_refusal = FirstRefusal(p.turn[first], p.call[first], detector)
    return SessionReplay.lazy(p.session, p.source, p.format, ENGINE_NAME, first_refusal, warned,
                              _Detail(p, config, ctr, aborts, verdicts if complete else None,
                                      first))


class _Detail:
    """The steps of one prepared session under one configuration, built when read."""

    __slots__ = ("aborts", "config", "counters", "first", "prepared", "verdicts")

    def __init__(self, prepared: PreparedSession, config: OpenClawConfig,
                 counters: Counters | None, aborts: dict[int, int],
                 verdicts: list[_Verdict] | None, first: int) -> None:
        self.prepared = prepared
        self.config = config
        self.counters = counters
        self.aborts = aborts
        self.verdicts = verdicts
        """Every verdict, or None when ``run`` stopped early."""
        self.first = first

    def _all_verdicts(self) -> list[_Verdict]:
        """Every verdict: evaluated to the end once, if ``run`` stopped early."""
        verdicts = self.verdicts
        if verdicts is None:
            verdicts = self.verdicts = _evaluate(self.prepared, self.config, self.counters,
                                                 self.aborts, True)[0]
        return verdicts

    def _flagged_steps(self) -> list[tuple[int, Step]]:
        """``(position, step)`` of every warn/refuse step, warning de-duplication included."""
        p, ctr, first = self.prepared, self.counters, self.first
        window = self.config.resolved.guard_window_size
        verdicts = self._all_verdicts()
        deduper: rules.WarningDeduper | None = None
        out: list[tuple[int, Step]] = []
        for i, level, detector, count, abort in verdicts:
            emitted: bool | None = None
            if level == "warning":
                # Logged (and de-duplicated) before the call runs, even if the guard then aborts.
                if deduper is None:
                    deduper = rules.WarningDeduper()
                assert detector is not None and ctr is not None
                emitted = deduper.should_emit(_warning_key(p, ctr, i, detector, "warning"),
                                              detector, p.tool_name[i], count, p.run_ids[i])
            out.append((i, _detector_step(p, ctr, i, level, detector, count, abort, emitted,
                                          i > first >= 0, window)))
        return out

    def steps(self) -> tuple[Step, ...]:
        p, first = self.prepared, self.first
        flagged = dict(self._flagged_steps())
        out: list[Step] = []
        append = out.append
        turn, call, tool_name, args_hash = p.turn, p.call, p.tool_name, p.args_hash
        for i in range(p.n):
            step = flagged.get(i)
            if step is None:
                step = new_step(turn[i], call[i], (tool_name[i],), args_hash[i], "pass", None, None,
                                i > first >= 0, _pass_extra(p, i))
            append(step)
        return tuple(out)

    def flagged(self) -> tuple[FlaggedStep, ...]:
        call = self.prepared.call
        return tuple(FlaggedStep(i, call[i], step) for i, step in self._flagged_steps())

    def markers(self) -> tuple[Marker, ...]:
        p = self.prepared
        verdicts = self._all_verdicts()
        turn, call = p.turn, p.call
        out: list[Marker] = []
        for i, level, detector, count, abort in verdicts:
            if level == "critical":
                assert detector is not None
                out.append(Marker(i, turn[i], call[i], call[i], "refuse", detector, count))
            elif abort is not None:
                out.append(Marker(i, turn[i], call[i], call[i], "refuse",
                                  rules.POST_COMPACTION_GUARD, abort))
            else:
                assert detector is not None
                out.append(Marker(i, turn[i], call[i], call[i], "warn", detector, count))
        return tuple(out)

    def verdict_counts(self) -> tuple[int, int]:
        """``(refusals, warnings)``: :meth:`markers` counted, not built."""
        verdicts = self._all_verdicts()
        refusals = sum(1 for _i, level, _d, _c, abort in verdicts
                       if level == "critical" or abort is not None)
        return refusals, len(verdicts) - refusals

    def step_json(self) -> list[dict[str, Any]]:
        p, first = self.prepared, self.first
        flagged = dict(self._flagged_steps())
        out: list[dict[str, Any]] = []
        append = out.append
        turn, call, tool_name, args_hash = p.turn, p.call, p.tool_name, p.args_hash
        for i in range(p.n):
            step = flagged.get(i)
            if step is not None:
                append(step.to_json())
                continue
            append({
                "turn": turn[i],
                "call": call[i],
                "tools": [tool_name[i]],
                "signature": args_hash[i],
                "verdict": "pass",
                "detector": None,
                "count": None,
                "after_divergence": i > first >= 0,
                **_pass_extra(p, i),
            })
        return out


def _pass_extra(p: PreparedSession, i: int) -> dict[str, Any]:
    """The OpenClaw fields (``STEP_FIELDS``) of a pass step, shared by the Step and the JSON
    paths."""
    return _extra(p, i, None, None, None, None, False, None)


def _extra(p: PreparedSession, i: int, level: str | None, message: str | None,
           warning_key: str | None, paired_tool: str | None, guard_abort: bool,
           warning_emitted: bool | None) -> dict[str, Any]:
    """The OpenClaw fields (``STEP_FIELDS``) of call ``i``'s step."""
    return {
        "level": level,
        "message": message,
        "warning_key": warning_key,
        "paired_tool": paired_tool,
        "args_hash": p.args_hash[i],
        "result_hash": p.result_hash[i],
        "run_id": p.run_ids[i],
        "guard_abort": guard_abort,
        "unknown_tool": p.unknown_tool[i],
        "warning_emitted": warning_emitted,
        "recorded_block": p.recorded_block[i],
    }


def _warning_key(p: PreparedSession, ctr: Counters, i: int, detector: str, level: str) -> str:
    memo = (i, detector, level)
    found = ctr.keys.get(memo)
    if found is None:
        found = ctr.keys[memo] = _compute_warning_key(p, ctr, i, detector, level)
    return found


def _compute_warning_key(p: PreparedSession, ctr: Counters, i: int, detector: str,
                         level: str) -> str:
    code = ctr.unknown_name[i]
    return verdict_warning_key(
        detector, level, p.tool_name[i], p.args_hash[i],
        unknown_name=p.unknown_names[code - 1] if code else None,
        paired_args_hash=p.args_hash[ctr.ping_pong_last[i]],
        latest_code=ctr.latest_result[i], result_hashes=p.result_hashes)


def _message(p: PreparedSession, ctr: Counters, i: int, detector: str, level: str,
             count: int) -> str:
    code = ctr.unknown_name[i]
    return verdict_message(detector, level == "critical", p.tool_name[i], count,
                           p.unknown_names[code - 1] if code else None,
                           breaker=rules.breaker_message,
                           generic_critical=rules.generic_critical_message)


def _step(p: PreparedSession, i: int, verdict: str, detector: str | None, count: int | None,
          diverged: bool, level: str | None, message: str | None, warning_key: str | None,
          paired_tool: str | None, guard_abort: bool, warning_emitted: bool | None) -> Step:
    """The step of call ``i`` with every field (as :func:`reference.make_step` builds it)."""
    return new_step(p.turn[i], p.call[i], (p.tool_name[i],), p.args_hash[i], verdict, detector,
                    count, diverged, _extra(p, i, level, message, warning_key, paired_tool,
                                            guard_abort, warning_emitted))


def _detector_step(p: PreparedSession, ctr: Counters | None, i: int, level: str | None,
                   detector: str | None, count: int, abort: int | None,
                   emitted: bool | None, diverged: bool, window_size: int) -> Step:
    if detector is not None and level == "critical":
        assert ctr is not None
        return _step(p, i, "refuse", detector, count, diverged, "critical",
                     _message(p, ctr, i, detector, level, count),
                     _warning_key(p, ctr, i, detector, level),
                     p.tool_name[ctr.ping_pong_last[i]] if detector == rules.PING_PONG else None,
                     abort is not None, None)
    if abort is not None:
        return _step(p, i, "refuse", rules.POST_COMPACTION_GUARD, abort, diverged, "critical",
                     guard_message(p.tool_name[i], abort, window_size), None, None, True, None)
    assert detector is not None and level is not None and ctr is not None
    return _step(p, i, "warn", detector, count, diverged, "warning",
                 _message(p, ctr, i, detector, level, count),
                 _warning_key(p, ctr, i, detector, level),
                 p.tool_name[ctr.ping_pong_last[i]] if detector == rules.PING_PONG else None,
                 False, emitted)


# --------------------------------------------------------------------------------------------
# Prepared data as plain JSON columns (the on-disk cache's entry of one file); a whole corpus
# as arrays is the columns module's.

CODEC_VERSION = 1
"""Bumped whenever :func:`encode` writes something :func:`decode` of an older loopscope would
read differently (the cache key carries it)."""


def code_tables(p: PreparedSession) -> tuple[list[str], list[str], list[str]]:
    """What ``p``'s integer codes stand for, in code order (codes count from 1): each tool
    name, each argument hash and each result hash — what a writer keeps of a session instead
    of its per-call texts (:func:`encode`, the corpus table)."""
    tools: dict[int, str] = {}
    for code, name in zip(p.tool_code, p.tool_name, strict=True):
        tools.setdefault(code, name)
    first_args: dict[int, str] = {}
    for code, h in zip(p.args_code, p.args_hash, strict=True):
        first_args.setdefault(code, h)
    return ([tools[k] for k in range(1, len(tools) + 1)],
            [first_args[k] for k in range(1, len(first_args) + 1)],
            [p.result_hashes[k] for k in range(len(p.result_hashes))])


def encode(p: PreparedSession) -> dict[str, Any]:
    """``p`` as JSON-ready columns; :func:`decode` gives it back (a property test). Every
    result hash is written out (the session's texts are not kept)."""
    tools, args, hashes = code_tables(p)
    return {
        "session": p.session, "source": p.source, "format": p.format,
        "turn": p.turn, "call": p.call, "run": p.run,
        "blocked": [int(b) for b in p.recorded_block], "poll": [int(b) for b in p.poll],
        "tools": tools, "tool_code": p.tool_code, "args": args,
        "args_code": p.args_code, "result_code": p.result_code, "result_hashes": hashes,
        "unknown_names": p.unknown_names, "unknown_code": p.unknown_code,
        "run_start": p.run_start, "ops": p.ops,
        # The counts of every window already worked out (the default one, by ingest), so
        # that a cached start need not count again.
        "counters": {str(h): _encode_counters(c) for h, c in p._counters.items()},
    }


_COUNTER_FIELDS = ("no_progress", "latest_result", "recent", "unknown_streak", "unknown_name",
                   "ping_pong", "ping_pong_evidence", "ping_pong_last", "peak")


def _encode_counters(c: Counters) -> dict[str, list[int]]:
    return {name: [int(v) for v in getattr(c, name)] if name == "ping_pong_evidence"
            else getattr(c, name) for name in _COUNTER_FIELDS}


def _decode_counters(doc: Any, n: int, n_results: int, n_unknown: int) -> Counters:
    if type(doc) is not dict:
        raise CodecError("counters: expected an object")
    columns = {name: ints_at(doc, name, n, -1, None) for name in _COUNTER_FIELDS}
    if columns["ping_pong_last"] and max(columns["ping_pong_last"]) >= n:
        raise CodecError("counters: ping_pong_last out of range")
    if columns["latest_result"] and max(columns["latest_result"]) > n_results:
        raise CodecError("counters: latest_result out of range")
    if columns["unknown_name"] and max(columns["unknown_name"]) > n_unknown:
        raise CodecError("counters: unknown_name out of range")
    return Counters(columns["no_progress"], columns["latest_result"], columns["recent"],
                    columns["unknown_streak"], columns["unknown_name"], columns["ping_pong"],
                    [v == 1 for v in columns["ping_pong_evidence"]], columns["ping_pong_last"],
                    columns["peak"])


def decode(doc: Any) -> PreparedSession:
    """The :class:`PreparedSession` that :func:`encode` wrote; :class:`CodecError` for
    anything else (a damaged or foreign cache entry is never trusted)."""
    require_strings(doc, ("session", "source", "format"))
    tools, args = strs_at(doc, "tools"), strs_at(doc, "args")
    hashes, unknown_names = strs_at(doc, "result_hashes"), strs_at(doc, "unknown_names")
    tool_code = ints_at(doc, "tool_code", None, 1, len(tools))
    n = len(tool_code)
    turn = ints_at(doc, "turn", n, 0, None)
    call = ints_at(doc, "call", n, 0, None)
    run_of = ints_at(doc, "run", n, 0, None)
    blocked = ints_at(doc, "blocked", n, 0, 1)
    poll = ints_at(doc, "poll", n, 0, 1)
    args_code = ints_at(doc, "args_code", n, 1, len(args))
    result_code = ints_at(doc, "result_code", n, 0, len(hashes))
    unknown_code = ints_at(doc, "unknown_code", n, 0, len(unknown_names))
    run_start = ints_at(doc, "run_start", n, 0, n)
    ops = ints_at(doc, "ops", None, COMPACTION_OP, max(n - 1, 0))
    for i, start in enumerate(run_start):
        if start > i:
            raise CodecError("run_start: a run starts after its call")
    tool_name = [tools[k - 1] for k in tool_code]
    windows = doc.get("counters", {})
    if type(windows) is not dict:
        raise CodecError("counters: expected an object")
    counters = {}
    for size, value in windows.items():
        if not size.isdigit():
            raise CodecError("counters: a window size is a number")
        counters[int(size)] = _decode_counters(value, n, len(hashes), len(unknown_names))
    return PreparedSession(
        session=doc["session"], source=doc["source"], format=doc["format"], turn=turn,
        call=call, tool_name=tool_name, run=run_of, recorded_block=[b == 1 for b in blocked],
        args_hash=[args[k - 1] for k in args_code],
        result_hash=HashesByCall(result_code, hashes),
        unknown_tool=[unknown_names[k - 1] if k else None for k in unknown_code],
        args_code=args_code, result_code=result_code, unknown_code=unknown_code,
        tool_code=tool_code, tool_empty=[name == "" for name in tool_name],
        poll=[b == 1 for b in poll], run_start=run_start, ops=ops,
        unknown_names=unknown_names, result_hashes=hashes, run_ids=[f"run-{r}" for r in run_of],
        _counters=counters,
    )


_DETECTOR_CODES = (rules.UNKNOWN_TOOL_REPEAT, rules.GLOBAL_CIRCUIT_BREAKER,
                   rules.KNOWN_POLL_NO_PROGRESS, rules.PING_PONG, rules.GENERIC_REPEAT)


def _position_of(p: PreparedSession, first: FirstRefusal) -> int:
    """The call position of a first refusal (calls are numbered in order)."""
    return p.call.index(first.call) if first.call is not None else 0


DETECTORS = (*_DETECTOR_CODES, rules.POST_COMPACTION_GUARD)
"""Detector names by the codes of :func:`.columns.run_columns`."""
