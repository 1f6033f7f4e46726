"""The fast path: everything threshold-independent once per session, a cheap run per config.

In shadow mode ``clearDetection()`` follows every detection, so the two detectors never block
each other: the tool-call verdicts depend only on each prompt's sequence of call keys, and the
content verdicts only on the text between resets (a prompt start, a tool call, a structural
piece). They share only the running count of detections within a prompt. Hence:

* :func:`prepare` builds the steps, keys every call (SHA-256 of ``name:JSON.stringify(args)``),
  and for each call the largest number of back-to-back repetitions of a 1–5-call cycle that ends
  at it (``repeats``). The tool-call check fires at a call exactly when ``repeats`` reaches
  ``TOOL_CALL_LOOP_THRESHOLD``: it compares the last ``k × threshold`` keys, and the history it
  keeps (``5 × threshold``) is never shorter than that. Calls are kept sorted by ``repeats`` so
  a run finds the firing ones by bisection.
* It also cuts the text into pieces, runs the structure checks and the code-fence toggling
  once, and joins the analysed pieces into *stretches* (text between two resets) in UTF-16 code
  units. Per window size, every window of a stretch gets two integer ids: one for its hash (a
  lone surrogate half at a window edge hashes as U+FFFD, so different windows can share a hash)
  and one for its exact text.
* :func:`run` replays the window walk of every stretch in absolute positions (the history
  truncation becomes a moving lower bound; stored positions below it are dropped when next
  read), once per ``(CONTENT_CHUNK_SIZE, CONTENT_LOOP_THRESHOLD, MAX_HISTORY_LENGTH)`` and
  remembered, then numbers the detections of both detectors per prompt. Steps are built only
  when read.

``run(prepare(s), c) == replay(s, c)`` is a property test, for every field of every step.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, TypeVar

from loopscope.bulk import keep_shared, memoised_by_json
from loopscope.engines.base import FirstRefusal, FlaggedStep, Marker, SessionReplay, Step, new_step
from loopscope.engines.codec import CodecError, int_list, require_strings
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.events import args_of, call_name, split_pieces
from loopscope.engines.gemini_cli.reference import (
    CONTENT_KIND,
    ENGINE_NAME,
    TOOL_CALL_KIND,
    intervention,
)
from loopscope.engines.gemini_cli.upstream import (
    CONTENT_LOOP,
    DETAIL_CONTEXT,
    MAX_CYCLE,
    TOOL_CALL_LOOP,
    structure,
    tool_call_detail_text,
)
from loopscope.jsonrules.node_json import (
    from_units,
    has_surrogates,
    js_trim,
    json_stringify,
    node_sha256,
    to_units,
)
from loopscope.model import AssistantTurn, Session, UserMessage

__all__ = ["ContentHit", "PreparedSession", "Stretch", "prepare", "recall", "remember", "run"]


_GEMINI_CONSTANTS: Final = GeminiConfig().content_constants
_REMEMBERED_WALKS: Final = 8
"""Content walks kept per prepared session, and content flags per corpus (a slider over a
what-if makes a new walk per value; each holds a count per reply, or a byte per step)."""
_W = TypeVar("_W")


def remembered_walk(memo: dict[tuple[int, int, int], _W], key: tuple[int, int, int],
                    walk: Callable[[], _W]) -> _W:
    """``memo[key]``, walked on first use. A content walk under other constants is a pass over
    all the text again, and a what-if slider comes back to values it left: the last
    :data:`_REMEMBERED_WALKS` walks are kept, those under Gemini CLI's own constants always
    (the oldest other walk goes first)."""
    found = memo.get(key)
    if found is None:
        found = memo[key] = walk()
        if len(memo) > _REMEMBERED_WALKS:
            del memo[next(k for k in memo if k != _GEMINI_CONSTANTS)]
    return found


@dataclass(slots=True)
class Stretch:
    """Analysed text between two resets of the content tracking, in UTF-16 code units."""

    text: str
    ends: list[int] = field(default_factory=list)
    """Where each piece's text ends in :attr:`text`."""
    positions: list[int] = field(default_factory=list)
    """The step each piece belongs to."""


class ContentHit(NamedTuple):
    """One content detection."""

    position: int
    """The step."""
    detail: str
    stretch: int
    """Index of the stretch in :attr:`PreparedSession.stretches`."""
    recent: tuple[int, ...]
    """The window's last ``CONTENT_LOOP_THRESHOLD`` starts in the stretch; the last one is the
    window that fired."""


@dataclass(slots=True)
class ContentRun:
    """The content verdicts under one ``(chunk size, threshold, history length)``."""

    detections: list[ContentHit]
    """Every content detection, in event order."""
    occurrences: dict[int, int]
    """Step position → the most occurrences of one window recorded while its pieces were
    analysed (for the session chart)."""


@dataclass(slots=True)
class PreparedSession:
    """One session's threshold-independent data."""

    session: str
    source: str
    format: str
    turn: list[int]
    call: list[int | None]
    tools: list[tuple[str, ...]]
    signature: list[str | None]
    prompt: list[int]
    pieces: list[int | None]
    """Pieces sent, for content steps (``None`` for tool-call steps)."""
    call_text: dict[int, tuple[str, str]]
    """Step position → ``(name, JSON.stringify(args))`` of a tool-call step (what its key
    hashes and its detail shows)."""
    repeats: dict[int, int]
    """Step position → back-to-back repetitions of the best 1–5-call cycle ending there."""
    by_repeats: list[int]
    """Tool-call step positions, most repeats first."""
    neg_repeats: list[int]
    """``-repeats`` of :attr:`by_repeats`, ascending (for bisection)."""
    stretches: list[Stretch]
    _content: dict[tuple[int, int, int], ContentRun] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.turn)

    def content_run(self, chunk: int, threshold: int, history: int) -> ContentRun:
        """The content walk under these constants, remembered (Gemini CLI's own and the last
        few what-ifs)."""
        return remembered_walk(self._content, (chunk, threshold, history),
                               lambda: _content_run(self, chunk, threshold, history))


# --------------------------------------------------------------------------- prepare


def prepare(session: Session) -> PreparedSession:
    turn: list[int] = []
    call: list[int | None] = []
    tools: list[tuple[str, ...]] = []
    signature: list[str | None] = []
    prompts: list[int] = []
    pieces: list[int | None] = []
    call_text: dict[int, tuple[str, str]] = {}
    repeats: dict[int, int] = {}
    stretches: list[Stretch] = []

    prompt = 0
    printed: dict[bytes, tuple[Any, _Printed]] = {}  # this session's calls, printed
    printed_texts: dict[tuple[str, str, str], _Printed] = {}  # the same, arguments as text
    names: dict[str, str] = {}  # recorded tool name -> call_name
    # The current prompt's call keys, as small integers, after MAX_CYCLE fillers equal to no
    # key (so that ``keys[-k]`` is always there).
    keys: list[int] = [-1] * MAX_CYCLE
    key_ids: dict[str, int] = {}
    # r1..r5: how many keys in a row, ending at the newest, equal the key 1..5 places before
    # them (the walk over cycle lengths unrolled: it runs for every call).
    r1 = r2 = r3 = r4 = r5 = 0
    in_code_block = False
    open_stretch: Stretch | None = None
    parts: list[str] = []

    def close_stretch() -> None:
        nonlocal open_stretch
        if open_stretch is not None:
            open_stretch.text = "".join(parts)
            stretches.append(open_stretch)
            open_stretch = None
            parts.clear()

    # The events of :func:`.events.session_items` (the reference's), read off the session
    # without building an item per step.
    for event in session.events:
        if isinstance(event, UserMessage):  # a prompt starts
            prompt += 1
            close_stretch()
            keys = [-1] * MAX_CYCLE
            r1 = r2 = r3 = r4 = r5 = 0
            continue
        if not isinstance(event, AssistantTurn):
            continue
        tool_calls = event.tool_calls
        event_turn = event.turn
        if event.text or not tool_calls:  # the content step
            position = len(turn)
            prompts.append(prompt)
            turn.append(event_turn)
            call.append(None)
            tools.append(())
            signature.append(None)
            event_pieces = split_pieces(event.text)
            pieces.append(len(event_pieces))
            for piece in event_pieces:
                units = to_units(piece)
                found = structure(units)
                if found.resets:
                    close_stretch()
                was_in_code_block = in_code_block
                if found.fences % 2 == 1:
                    in_code_block = not in_code_block
                if was_in_code_block or in_code_block or found.divider:
                    continue
                if open_stretch is None:
                    open_stretch = Stretch("")
                parts.append(units)
                length = (open_stretch.ends[-1] if open_stretch.ends else 0) + len(units)
                open_stretch.ends.append(length)
                open_stretch.positions.append(position)
        for recorded in tool_calls:
            position = len(turn)
            prompts.append(prompt)
            if open_stretch is not None:  # (checked here: most calls follow a call)
                close_stretch()  # a tool call resets the content tracking
            name = names.get(recorded.name)
            if name is None:
                name = names[recorded.name] = call_name(recorded)
            raw = recorded.raw_arguments
            kind = recorded.arguments_kind
            if type(raw) is str:
                # (a text is its own memo key: no JSON to write, no deep comparison)
                text_key = (name, kind, raw)
                entry = printed_texts.get(text_key)
                if entry is None:
                    entry = _SHARED_PRINTED_TEXTS.get(text_key)
                    if entry is None:
                        entry = _printed_key(text_key)
                        if len(raw) <= _SHARED_PRINTED_MAX_KEY:
                            keep_shared(_SHARED_PRINTED_TEXTS, text_key, entry,
                                        max_entries=_SHARED_PRINTED_MAX)
                    printed_texts[text_key] = entry
            else:
                entry = memoised_by_json(
                    (name, kind, raw), _printed_key, printed, _SHARED_PRINTED,
                    max_shared_key=_SHARED_PRINTED_MAX_KEY, max_shared=_SHARED_PRINTED_MAX)
            text_pair, key, step_signature, step_tools = entry
            turn.append(event_turn)
            call.append(recorded.index)
            tools.append(step_tools)
            signature.append(step_signature)
            pieces.append(None)
            call_text[position] = text_pair
            code = key_ids.get(key)
            if code is None:
                code = key_ids[key] = len(key_ids)
            r1 = r1 + 1 if keys[-1] == code else 0
            r2 = r2 + 1 if keys[-2] == code else 0
            r3 = r3 + 1 if keys[-3] == code else 0
            r4 = r4 + 1 if keys[-4] == code else 0
            r5 = r5 + 1 if keys[-5] == code else 0
            keys.append(code)
            # The stretch with period k ending here is ``r_k + k`` keys long (never more than
            # all: r_k counts only keys with k before them), that is ``r_k // k + 1`` cycles.
            repeats[position] = (r1 if not (r2 or r3 or r4 or r5)
                                 else max(r1, r2 // 2, r3 // 3, r4 // 4, r5 // 5)) + 1
    close_stretch()

    # Most repeats first, equal ones by position: ``repeats`` holds the positions in order and
    # ``reverse`` keeps a sort stable (no key tuple per step).
    by_repeats = sorted(repeats, key=repeats.__getitem__, reverse=True)
    prepared = PreparedSession(
        session.id, session.source, session.format, turn, call, tools, signature, prompts,
        pieces, call_text, repeats, by_repeats, [-repeats[p] for p in by_repeats], stretches)
    # Gemini CLI's own constants never change: their window walk belongs to preparing.
    prepared.content_run(*_GEMINI_CONSTANTS)
    return prepared


_Printed = tuple[tuple[str, str], str, str, tuple[str]]
"""What a call's step holds that depends on its name and arguments only: ``(name,
JSON.stringify(args))``, its tool_call_key, its signature and its tools."""


_SHARED_PRINTED: Final[dict[bytes, tuple[Any, _Printed]]] = {}
"""A call's :data:`_Printed` by the :func:`~loopscope.bulk.json_memo_key` of ``(name, how its
arguments were recorded, the recorded arguments)``, across sessions (:func:`memoised_by_json`)."""
_SHARED_PRINTED_TEXTS: Final[dict[tuple[str, str, str], _Printed]] = {}
"""The same for arguments recorded as text, keyed by ``(name, how recorded, text)`` (bounded
alike, by the text's length)."""
_SHARED_PRINTED_MAX: Final = 50_000
_SHARED_PRINTED_MAX_KEY: Final = 512
if MAX_CYCLE != 5:  # pragma: no cover
    raise ImportError("prepare's walk over cycle lengths is written for MAX_CYCLE == 5")


def _printed_key(call: tuple[str, str, Any]) -> _Printed:
    """:data:`_Printed` of a call ``(name, how its arguments were recorded, the recorded
    arguments)``. Memoised per session and across sessions: a looping agent repeats its calls,
    so most are parsed, printed and hashed once (and their steps share these read-only
    values)."""
    name, arguments_kind, raw = call
    args_text = json_stringify(args_of(arguments_kind, raw))
    key = node_sha256(f"{name}:{args_text}")
    return (name, args_text), key, f"{name}:{key}", (name,)


# --------------------------------------------------------------------------- content walk


_LONE: Final = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")
"""A surrogate half without its partner (in the string searched)."""


def _lone_prefix(text: str) -> list[int] | None:
    """``[lone surrogates in text[:i] for i in 0..len]``, or ``None`` when there are none."""
    found = [m.start() for m in _LONE.finditer(text)]
    if not found:
        return None
    prefix = [0] * (len(text) + 1)
    for position in found:
        prefix[position + 1] += 1
    for i in range(len(text)):
        prefix[i + 1] += prefix[i]
    return prefix


def _content_run(p: PreparedSession, chunk: int, threshold: int, history: int) -> ContentRun:
    detections: list[ContentHit] = []
    occurrences: dict[int, int] = {}
    for number, stretch in enumerate(p.stretches):
        walk_stretch(stretch.text, stretch.ends, stretch.positions, number, chunk, threshold,
                     history, detections, occurrences)
    return ContentRun(detections, occurrences)


def walk_stretch(text: str, ends: list[int], positions: list[int], number: int, chunk: int,
                 threshold: int, history: int, detections: list[ContentHit],
                 occurrences: dict[int, int]) -> None:
    """The window walk of one stretch (``text`` in code units, each piece's end and step):
    its detections are appended to ``detections`` (as stretch ``number``) and each step's most
    occurrences of one window recorded in ``occurrences``."""
    max_distance = chunk * 5 * (threshold - 1)
    max_periods = threshold // 2
    # A window's hash is SHA-256 of its UTF-8, where a lone surrogate half (also one cut
    # off by the window's edge) is U+FFFD: windows that differ only there share a hash but
    # not a text. The window with those halves replaced identifies its hash.
    surrogates = has_surrogates(text)
    lone_before = _lone_prefix(text) if surrogates else None
    stats: dict[str, list[int]] = {}
    last = 0  # the next window start, in absolute position
    floor = 0  # text before this was dropped by the history truncation
    for end, position in zip(ends, positions, strict=True):
        if end - floor > history:
            floor = end - history
            if last < floor:
                last = floor
        most = occurrences.get(position, 0)
        limit = end - chunk
        while last <= limit:
            window = text[last:last + chunk]
            key = window
            if surrogates and (
                    "\udc00" <= window[0] <= "\udfff" or "\ud800" <= window[-1] <= "\udbff"
                    or (lone_before is not None
                        and lone_before[last + chunk] != lone_before[last])):
                key = _LONE.sub("\ufffd", window)
            seen = stats.get(key)
            if seen is not None and seen[0] < floor:
                cut = bisect_left(seen, floor)
                if cut == len(seen):
                    seen = None
                else:
                    del seen[:cut]
            if seen is None:
                stats[key] = [last]
                last += 1
                continue
            if surrogates and text[seen[0]:seen[0] + chunk] != window:
                last += 1  # same hash, different text: nothing recorded
                continue
            seen.append(last)
            count = len(seen)
            if count > most:
                most = count
            if count >= threshold and last - seen[-threshold] <= max_distance:
                recent = seen[-threshold:]
                periods = {text[recent[i]:recent[i + 1]] for i in range(threshold - 1)}
                if len(periods) <= max_periods:
                    snippet = text[max(floor, last - DETAIL_CONTEXT):last + chunk]
                    detail = f'Repeating content detected: "{from_units(js_trim(snippet))}..."'
                    detections.append(ContentHit(position, detail, number, tuple(recent)))
                    break  # the window stays where it fired
            last += 1
        occurrences[position] = most


# --------------------------------------------------------------------------- run


@dataclass(slots=True)
class _Verdicts:
    """Per refused step position: ``(detector, count, detail, detections)``."""

    flagged: dict[int, tuple[str, int, str, int]]
    first: int


def _verdicts(p: PreparedSession, config: GeminiConfig) -> _Verdicts:
    if not config.enabled:
        return _Verdicts({}, -1)
    calls = p.by_repeats[:bisect_right(p.neg_repeats, -config.tool_call_loop_threshold)]
    calls.sort()
    content = p.content_run(*config.content_constants).detections
    flagged: dict[int, tuple[str, int, str, int]] = {}
    prompt_of = p.prompt
    current_prompt = -1
    count = 0
    i = j = 0
    n_calls, n_content = len(calls), len(content)
    while i < n_calls or j < n_content:
        if j >= n_content or (i < n_calls and calls[i] < content[j][0]):
            position = calls[i]
            i += 1
            detector = TOOL_CALL_LOOP
            detail = ""  # built when the step is
        else:
            position, detail = content[j][:2]
            j += 1
            detector = CONTENT_LOOP
        prompt = prompt_of[position]
        if prompt != current_prompt:
            current_prompt, count = prompt, 0
        count += 1
        seen = flagged.get(position)
        if seen is None:
            flagged[position] = (detector, count, detail, 1)
        else:
            flagged[position] = (seen[0], seen[1], seen[2], seen[3] + 1)
    return _Verdicts(flagged, min(flagged) if flagged else -1)


def run(p: PreparedSession, config: GeminiConfig) -> SessionReplay:
    v = _verdicts(p, config)
    first = None
    if v.first >= 0:
        first = FirstRefusal(p.turn[v.first], p.call[v.first], v.flagged[v.first][0])
    return SessionReplay.lazy(p.session, p.source, p.format, ENGINE_NAME, first, False,
                              _Detail(p, v))


def _extra(p: PreparedSession, i: int, count: int | None, detail: str | None,
           detections: int) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "kind": TOOL_CALL_KIND if p.call[i] is not None else CONTENT_KIND,
        "prompt": p.prompt[i], "intervention": intervention(count), "detail": detail,
        "detections": detections}
    pieces = p.pieces[i]
    if pieces is not None:
        extra["pieces"] = pieces
    return extra


class _Detail:
    """The steps of one prepared session under one configuration, built when read."""

    __slots__ = ("prepared", "verdicts")

    def __init__(self, prepared: PreparedSession, verdicts: _Verdicts) -> None:
        self.prepared = prepared
        self.verdicts = verdicts

    def _step(self, i: int) -> Step:
        p, v = self.prepared, self.verdicts
        diverged = i > v.first >= 0
        hit = v.flagged.get(i)
        if hit is None:
            return new_step(p.turn[i], p.call[i], p.tools[i], p.signature[i], "pass", None, None,
                            diverged, _extra(p, i, None, None, 0))
        detector, count, detail, detections = hit
        if detector == TOOL_CALL_LOOP:
            name, args_text = p.call_text[i]
            detail = tool_call_detail_text(name, args_text)
        return new_step(p.turn[i], p.call[i], p.tools[i], p.signature[i], "refuse", detector,
                        count, diverged, _extra(p, i, count, detail, detections))

    def steps(self) -> tuple[Step, ...]:
        return tuple(self._step(i) for i in range(self.prepared.n))

    def flagged(self) -> tuple[FlaggedStep, ...]:
        return tuple(FlaggedStep(i, self._calls_before(i), self._step(i))
                     for i in sorted(self.verdicts.flagged))

    def _calls_before(self, i: int) -> int:
        call = self.prepared.call
        if call[i] is not None:
            return call[i]  # type: ignore[return-value]
        for j in range(i - 1, -1, -1):
            c = call[j]
            if c is not None:
                return c + 1
        return 0

    def markers(self) -> tuple[Marker, ...]:
        p = self.prepared
        out = []
        for i in sorted(self.verdicts.flagged):
            detector, count, _detail, _n = self.verdicts.flagged[i]
            out.append(Marker(i, p.turn[i], p.call[i], self._calls_before(i), "refuse",
                              detector, count))
        return tuple(out)

    def verdict_counts(self) -> tuple[int, int]:
        return len(self.verdicts.flagged), 0

    def step_json(self) -> list[dict[str, Any]]:
        p, v = self.prepared, self.verdicts
        first = v.first
        out: list[dict[str, Any]] = []
        append = out.append
        flagged = v.flagged
        for i in range(p.n):
            if i in flagged:
                append(self._step(i).to_json())
                continue
            append({
                "turn": p.turn[i], "call": p.call[i], "tools": list(p.tools[i]),
                "signature": p.signature[i], "verdict": "pass", "detector": None, "count": None,
                "after_divergence": i > first >= 0, **_extra(p, i, None, None, 0)})
        return out


# --------------------------------------------------------------------------- recently prepared

_RECENT: Final[OrderedDict[tuple[str, str], PreparedSession]] = OrderedDict()
_RECENT_SIZE: Final = 64


def remember(prepared: PreparedSession) -> None:
    """Keep a few recently prepared sessions, so that an explanation (which sees only the
    replay) can point at the repeated text. Bounded; a cache, never a source of verdicts."""
    key = (prepared.session, prepared.source)
    _RECENT.pop(key, None)
    _RECENT[key] = prepared
    while len(_RECENT) > _RECENT_SIZE:
        _RECENT.popitem(last=False)


def recall(replay: SessionReplay) -> PreparedSession | None:
    """The remembered prepared session ``replay`` was made from, if it is still known and its
    steps are the replay's (same turns, calls, signatures and text pieces)."""
    prepared = _RECENT.get((replay.session, replay.source))
    if prepared is None:
        return None
    steps = replay.steps
    if len(steps) != prepared.n or any(
            s.turn != prepared.turn[i] or s.call != prepared.call[i]
            or s.signature != prepared.signature[i]
            or s.extra.get("pieces") != prepared.pieces[i] for i, s in enumerate(steps)):
        return None
    return prepared


# --------------------------------------------------------------------------- codec
# Prepared data as plain JSON columns (the on-disk cache, worker processes).

CODEC_VERSION = 1
"""Bumped whenever :func:`encode` writes something :func:`decode` of an older loopscope would
read differently."""


def encode(p: PreparedSession) -> dict[str, Any]:
    """``p`` as JSON-ready columns; :func:`decode` gives it back (a property test). Texts kept
    in UTF-16 code units are written as text (:func:`from_units`, which :func:`to_units`
    undoes exactly); the content walk under Gemini CLI's own constants comes along."""
    run = p.content_run(*_GEMINI_CONSTANTS)
    return {
        "session": p.session, "source": p.source, "format": p.format,
        "turn": p.turn, "call": [-1 if c is None else c for c in p.call],
        "tools": [t[0] if t else None for t in p.tools], "signature": p.signature,
        "prompt": p.prompt, "pieces": [-1 if k is None else k for k in p.pieces],
        "call_text": [[k, name, text] for k, (name, text) in p.call_text.items()],
        "repeats": [[k, v] for k, v in p.repeats.items()],
        "stretches": [[from_units(s.text), s.ends, s.positions] for s in p.stretches],
        "content": [[[h.position, h.detail, h.stretch, list(h.recent)] for h in run.detections],
                    [[k, v] for k, v in run.occurrences.items()]],
    }


def _pairs(value: Any, what: str, n: int) -> list[tuple[int, Any]]:
    if type(value) is not list or any(type(v) is not list or len(v) < 2 for v in value):
        raise CodecError(f"{what}: expected pairs")
    keys = int_list([v[0] for v in value], what, None, 0, n - 1)
    if len(set(keys)) != len(keys):
        raise CodecError(f"{what}: a step twice")
    return [(k, v[1:]) for k, v in zip(keys, value, strict=True)]


def decode(doc: Any) -> PreparedSession:
    """The :class:`PreparedSession` that :func:`encode` wrote; :class:`CodecError` for
    anything else (damaged or foreign data is never trusted)."""
    require_strings(doc, ("session", "source", "format"))
    turn = int_list(doc.get("turn"), "turn", None, 0, None)
    n = len(turn)
    tools_in, signature = doc.get("tools"), doc.get("signature")
    if type(tools_in) is not list or len(tools_in) != n or any(
            t is not None and type(t) is not str for t in tools_in):
        raise CodecError("tools: expected a name or null per step")
    if type(signature) is not list or len(signature) != n or any(
            s is not None and type(s) is not str for s in signature):
        raise CodecError("signature: expected a text or null per step")
    call = [None if c < 0 else c for c in int_list(doc.get("call"), "call", n, -1, None)]
    pieces = [None if k < 0 else k for k in int_list(doc.get("pieces"), "pieces", n, -1, None)]
    call_text: dict[int, tuple[str, str]] = {}
    for k, rest in _pairs(doc.get("call_text"), "call_text", n):
        if len(rest) != 2 or type(rest[0]) is not str or type(rest[1]) is not str:
            raise CodecError("call_text: expected a name and a text")
        call_text[k] = (rest[0], rest[1])
    repeats: dict[int, int] = {}
    for k, rest in _pairs(doc.get("repeats"), "repeats", n):
        if len(rest) != 1 or type(rest[0]) is not int or rest[0] < 0:
            raise CodecError("repeats: expected a count")
        repeats[k] = rest[0]
    stretches: list[Stretch] = []
    raw_stretches = doc.get("stretches")
    if type(raw_stretches) is not list:
        raise CodecError("stretches: expected a list")
    for item in raw_stretches:
        if type(item) is not list or len(item) != 3 or type(item[0]) is not str:
            raise CodecError("stretches: expected a text, its ends and positions")
        units = to_units(item[0])
        ends = int_list(item[1], "stretch ends", None, 0, len(units))
        stretches.append(Stretch(units, ends, int_list(item[2], "stretch positions", len(ends),
                                                    0, n - 1)))
    content = doc.get("content")
    if type(content) is not list or len(content) != 2 or type(content[0]) is not list:
        raise CodecError("content: expected detections and occurrences")
    detections = []
    for h in content[0]:
        if (type(h) is not list or len(h) != 4 or type(h[0]) is not int or not 0 <= h[0] < n
                or type(h[1]) is not str or type(h[2]) is not int
                or not 0 <= h[2] < len(stretches)):
            raise CodecError("content: a detection out of range")
        detections.append(ContentHit(h[0], h[1], h[2], tuple(int_list(h[3], "recent", None, 0,
                                                                    None))))
    occurrences: dict[int, int] = {}
    for k, rest in _pairs(content[1], "occurrences", n):
        if len(rest) != 1 or type(rest[0]) is not int:
            raise CodecError("occurrences: expected a count")
        occurrences[k] = rest[0]
    tools: list[tuple[str, ...]] = [() if t is None else (t,) for t in tools_in]
    by_repeats = sorted(repeats, key=lambda p: (-repeats[p], p))
    prepared = PreparedSession(
        doc["session"], doc["source"], doc["format"], turn, call, tools, signature,
        int_list(doc.get("prompt"), "prompt", n, 0, None), pieces, call_text, repeats, by_repeats,
        [-repeats[p] for p in by_repeats], stretches)
    prepared._content[_GEMINI_CONSTANTS] = ContentRun(detections, occurrences)
    return prepared
