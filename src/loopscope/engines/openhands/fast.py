"""Prepare once, re-run cheaply: the OpenHands stuck detector over counts read off the log.

``prepare(session)`` does everything that does not depend on the thresholds: it walks the
event log of :mod:`.events` once, gives every action and observation a key (two keys are equal
exactly when OpenHands' ``_event_eq`` says the events are: the tool, thought and parsed
arguments, nested ones by their :mod:`.python_equality` text), and records, for every check (after each
assistant turn), what the four patterns read:

* ``ra``: how many of the newest actions in a row equal the newest one;
* ``ro``: the same for observations; ``re``: how many of the newest observations in a row are
  errors;
* ``ka`` / ``ko``: how many ``i`` from the newest on have ``action[i] == action[i+2]`` (and the
  same for observations) without a break;
* where the agent-message run the monologue walk counts begins, the latest user message, and
  prefix counts of actions, observations and agent messages.

These are counted over the whole log; the window (the newest events after the latest user
message) only shortens them, and it is applied in ``run`` by prefix counts. The only thing a
configuration adds to the log is the action-error nudge (an environment message that takes a
place in the window), so ``run`` keeps the list of nudges and the "already nudged" memory and
evaluates only the checks where some pattern can hold for these thresholds. Every check is
O(1) apart from the nudges inside its window.

Property tests prove ``run(prepare(s), c)`` equal to the reference replay for random sessions
and thresholds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter
from typing import Any, Final

from loopscope.bulk import keep_shared
from loopscope.engines.base import FirstRefusal, FlaggedStep, Marker, SessionReplay, Step, new_step
from loopscope.engines.codec import CodecError, ints_at, require_strings, strs_at
from loopscope.engines.contract import CounterSeries
from loopscope.engines.openhands.config import OpenHandsConfig
from loopscope.engines.openhands.events import argument_text, malformed_error, parse_arguments
from loopscope.engines.openhands.python_equality import canonical
from loopscope.engines.openhands.reference import ENGINE_NAME, step_extra
from loopscope.engines.openhands.upstream import (
    ACTION_ERROR,
    ACTION_OBSERVATION,
    ALTERNATING_PATTERN,
    MONOLOGUE,
    nudge_text,
)
from loopscope.model import (
    AssistantTurn,
    Compaction,
    Event,
    Session,
    ToolCall,
    ToolResult,
    UserMessage,
)

__all__ = ["PreparedSession", "counters", "prepare", "run"]

_MALFORMED: Final = ("malformed",)
"""The equality key of ``action=None`` (the keys of parsed arguments are objects or texts)."""

_OTHER, _ACTION, _OBSERVATION, _AGENT = range(4)
"""What a log event is, as far as the prefix counts go (one byte per event)."""

_OBSERVATION_BYTE: Final = bytes([_OBSERVATION])

_NO_EVENT: Final = object()
"""Stands for a missing newest (or second newest) event: equal to no key."""

_CHECK_FIELDS: Final = 15
"""Fields of a check's row in :func:`prepare`."""

_NAME: Final = attrgetter("name")


@dataclass(slots=True)
class PreparedSession:
    """One session's threshold-independent data (one entry per check unless stated)."""

    session: str
    source: str
    format: str
    n: int
    """Number of checks (= steps = assistant turns)."""
    turn: list[int]
    call: list[int | None]
    tools: list[tuple[str, ...]]
    calls_before: list[int]
    base: list[int]
    """Events in the log (nudges excepted) when the check is made."""
    user: list[int]
    """Log index of the latest user message before the check (-1: none)."""
    ra: list[int]
    """Newest actions in a row equal to the newest one."""
    ro: list[int]
    """Newest observations in a row equal to the newest one."""
    re: list[int]
    """Newest observations in a row that are errors."""
    ka: list[int]
    """``i`` from the newest on with ``action[i] == action[i+2]``, without a break."""
    ko: list[int]
    """The same for observations."""
    mono_start: list[int]
    """Log index where the run of messages the monologue walk reads begins."""
    newest_obs: list[int]
    """Log index of the newest observation (-1: none): the nudge memory's event id."""
    nudge_tool: list[str]
    """Tool name of the newest action (the nudge text)."""
    nudge_error: list[str]
    """Text of the newest observation when it is an error (the nudge text)."""
    pre_actions: list[int]
    """``pre_actions[i]``: actions among the first ``i`` log events (length = events + 1)."""
    pre_observations: list[int]
    pre_agent: list[int]
    # Upper bounds per check, for skipping checks where nothing can hold (sorted views below).
    reach: tuple[tuple[list[int], list[int]], ...]
    """Per bound (streak, same pair, monologue, alternation): check indices sorted by
    decreasing bound, and the negated bounds in that order (ascending, for ``bisect``)."""

    def candidates(self, config: OpenHandsConfig) -> list[int]:
        """The checks where a nudge or a pattern can hold under ``config``, in order."""
        found: set[int] = set()
        for (order, negated), threshold in zip(self.reach, (
                config.action_error, config.action_observation, config.monologue,
                config.alternating_pattern), strict=True):
            k = bisect_right(negated, -threshold)
            if k:
                found.update(order[:k])
        return sorted(found)


def prepare(session: Session) -> PreparedSession:
    """Walk the session once and record what every check reads.

    This writes the same log as :func:`.events.build_items` (the readable reference, which the
    plain replay and the explanations use) without building its event objects: each event is
    one byte of ``kinds`` (for the prefix counts), and actions and observations are compared by
    their equality keys as they are written. The property tests prove the two equal.
    """
    events = session.events
    argument_keys = _ArgumentKeys()
    kinds = bytearray()  # per log event: _ACTION, _OBSERVATION, _AGENT or _OTHER
    rows: list[tuple[Any, ...]] = []  # per check: the fields of _CHECK_FIELDS
    # Equality keys (``_event_eq`` as ``==``) of the two newest actions and observations.
    newest_action: Any = _NO_EVENT
    older_action: Any = _NO_EVENT
    newest_observation: Any = _NO_EVENT
    older_observation: Any = _NO_EVENT
    ra = ro = re = ka = ko = 0
    last_user = -1
    stopper = -1  # newest event that stops the monologue walk
    newest_obs = -1
    newest_tool = ""
    newest_error = ""
    n_calls = 0

    for event in events:
        if isinstance(event, AssistantTurn):
            calls = event.tool_calls
            if not calls:
                kinds.append(_AGENT)
                if event.text.strip() == "":
                    kinds.append(_OTHER)  # OpenHands' corrective message
                rows.append((event.turn, None, (), n_calls, len(kinds), last_user, ra, ro, re,
                             ka, ko, stopper + 1, newest_obs, newest_tool, newest_error))
                continue
            # The keys of the turn's observations in log order (the errors of calls that did
            # not parse come before every result): an error's is its text, a result's
            # (tool, text).
            observed: list[Any] = []
            executed: list[ToolCall] = []
            thought = event.text  # the reply text, on the first call only ("": none)
            for tool_call in calls:
                key, parse_error = argument_keys.of(tool_call)
                name = tool_call.name
                action = (name, thought, key)
                thought = ""
                ra = ra + 1 if action == newest_action else 1
                ka = ka + 1 if action == older_action else 0
                older_action, newest_action = newest_action, action
                kinds.append(_ACTION)
                if parse_error is None:
                    executed.append(tool_call)
                else:
                    newest_obs = len(kinds)
                    kinds.append(_OBSERVATION)
                    newest_error = malformed_error(name, parse_error)
                    observed.append(newest_error)
                    re += 1
            if executed:
                answers = _answers(events, event.index, executed)
                if answers:
                    for name_of_call, result in answers:
                        if result.is_error:
                            newest_error = result.text
                            observed.append(newest_error)
                            re += 1
                        else:
                            newest_error = ""
                            observed.append((name_of_call, result.text))
                            re = 0
                    kinds.extend(_OBSERVATION_BYTE * len(answers))
                    newest_obs = len(kinds) - 1
            for observation in observed:
                ro = ro + 1 if observation == newest_observation else 1
                ko = ko + 1 if observation == older_observation else 0
                older_observation, newest_observation = newest_observation, observation
            newest_tool = name
            stopper = len(kinds) - 1  # every event of the turn is an action or observation
            rows.append((event.turn, calls[0].index, tuple(map(_NAME, calls)), n_calls,
                         len(kinds), last_user, ra, ro, re, ka, ko, stopper + 1, newest_obs,
                         newest_tool, newest_error))
            n_calls += len(calls)
        elif isinstance(event, ToolResult):
            continue  # read with its turn
        elif isinstance(event, UserMessage):
            last_user = stopper = len(kinds)
            kinds.append(_OTHER)
        elif isinstance(event, Compaction):
            stopper = len(kinds)
            kinds.append(_OTHER)
        # System and other messages: no event.

    (turn, call, tools, calls_before, base, user, ra_l, ro_l, re_l, ka_l, ko_l, mono_l,
     newest_obs_l, tool_l, error_l) = _columns(rows)
    pre_a, pre_o, pre_g = (_prefix_counts(kinds, kind) for kind in (_ACTION, _OBSERVATION, _AGENT))
    n = len(turn)
    return PreparedSession(
        session.id, session.source, session.format, n, turn, call, tools, calls_before, base,
        user, ra_l, ro_l, re_l, ka_l, ko_l, mono_l, newest_obs_l, tool_l, error_l, pre_a, pre_o,
        pre_g, _reach(base, user, ra_l, ro_l, re_l, ka_l, ko_l, mono_l, pre_a, pre_o, pre_g))


_ArgumentKey = tuple[Any, Exception | None]
"""What a call's argument text parses to, for comparing actions: the parsed object, or its
canonical text when it nests objects or arrays; or ``_MALFORMED`` and the parse error."""


def _argument_key(text: str) -> _ArgumentKey:
    parsed = parse_arguments(text)
    data = parsed.data
    if data is None:
        return _MALFORMED, parsed.error
    # OpenHands compares actions with ``==``, and so does the walk, on the parsed object itself
    # when it is flat (most arguments): cheaper than writing its canonical text. A nested one
    # is compared by its canonical text (:mod:`.python_equality`): ``==`` of objects nested as deeply as
    # the parser allows would exhaust the stack. An object never equals a text, and a flat
    # object never equals a nested one either.
    for value in data.values():
        if isinstance(value, dict | list):
            return canonical(data), None
    return data, None


class _ArgumentKeys:
    """One session's argument keys, each argument text parsed once.

    A recorded value (not a text) is written as JSON first, as OpenHands would receive it; a
    flat object of plain scalars is also remembered by its entries, which spares writing equal
    ones again (most recorded arguments are such objects, and many repeat).

    Keys of short texts (and of flat objects written short) are also kept across sessions
    (:data:`_SHARED_BY_TEXT`, :data:`_SHARED_BY_ENTRIES`): agents repeat their arguments from
    one session to the next too, and a key is a pure function of the text (of the entries).
    Keys are only ever compared, never changed, so sessions may share them. (Those of texts
    that do not parse are not shared: their errors hold the parser's frames.)
    """

    __slots__ = ("_by_entries", "_by_text")

    def __init__(self) -> None:
        self._by_text: dict[str, _ArgumentKey] = {}
        self._by_entries: dict[tuple[tuple[str, Any], ...], _ArgumentKey] = {}

    def of(self, call: ToolCall) -> _ArgumentKey:
        raw = call.raw_arguments
        if isinstance(raw, str):
            return self._of_text(raw)
        entries = _plain_entries(raw)
        if entries is None:
            return self._of_text(argument_text(call))
        found = self._by_entries.get(entries)
        if found is None:
            found = _SHARED_BY_ENTRIES.get(entries)
            if found is None:
                text = argument_text(call)
                found = self._of_text(text)
                if len(text) <= _SHARED_MAX_TEXT and found[1] is None:
                    keep_shared(_SHARED_BY_ENTRIES, entries, found, max_entries=_SHARED_MAX)
            self._by_entries[entries] = found
        return found

    def _of_text(self, text: str) -> _ArgumentKey:
        found = self._by_text.get(text)
        if found is None:
            found = _SHARED_BY_TEXT.get(text)
            if found is None:
                found = _argument_key(text)
                if len(text) <= _SHARED_MAX_TEXT and found[1] is None:
                    keep_shared(_SHARED_BY_TEXT, text, found, max_entries=_SHARED_MAX)
            self._by_text[text] = found
        return found


_SHARED_BY_TEXT: Final[dict[str, _ArgumentKey]] = {}
"""Argument text → its key, across sessions (texts of up to :data:`_SHARED_MAX_TEXT`
characters; emptied once it holds :data:`_SHARED_MAX` keys, so it stays bounded)."""
_SHARED_BY_ENTRIES: Final[dict[tuple[tuple[str, Any], ...], _ArgumentKey]] = {}
"""A flat object's entries → its key, across sessions (see :func:`_plain_entries` for why equal
entries have equal keys), when its text is short; bounded alike."""
_SHARED_MAX: Final = 50_000
_SHARED_MAX_TEXT: Final = 512


_PLAIN_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _plain_entries(raw: Any) -> tuple[tuple[str, Any], ...] | None:
    """The entries of a ``dict`` whose keys are ``str`` and whose values are plain scalars
    (exactly these types), in order; ``None`` for anything else.

    Two such objects with equal entries (``==``, item by item, in order) have the same key: the
    JSON texts differ at most in how equal numbers are written (``1``, ``1.0``, ``true``), which
    parse to equal values again, and an integer too long for ``json.dumps`` is too long for both
    (no float equals it). A NaN is equal only to itself here (tuples compare identity first).
    """
    if type(raw) is not dict:
        return None
    entries = tuple(raw.items())
    for key, value in entries:
        if type(key) is not str or type(value) not in _PLAIN_SCALARS:
            return None
    return entries


def _answers(events: tuple[Event, ...], turn_index: int, executed: list[ToolCall]
             ) -> list[tuple[str, ToolResult]]:
    """``(tool name, result)`` for each executed call, in call order: the first result not yet
    taken, among those recorded right after the turn, whose id is the call's
    (:func:`.events.turn_events`)."""
    out: list[tuple[str, ToolResult]] = []
    taken: list[int] = []  # event indices (a turn has few results: a list beats a set)
    end = len(events)
    for call in executed:
        call_id = call.id
        if call_id is None:
            continue
        for k in range(turn_index + 1, end):
            result = events[k]
            if not isinstance(result, ToolResult):
                break
            if result.call_id == call_id and k not in taken:
                taken.append(k)
                out.append((call.name, result))
                break
    return out


def _columns(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    """Rows of :func:`prepare`'s checks as one list per field."""
    if not rows:
        return [[] for _ in range(_CHECK_FIELDS)]
    return [list(column) for column in zip(*rows, strict=True)]


_ONLY: Final = tuple(bytes(int(byte == kind) for byte in range(256)) for kind in range(4))
"""Per kind, a ``bytes.translate`` table: 1 for that kind, 0 for any other."""


def _prefix_counts(kinds: bytearray, kind: int) -> list[int]:
    """Element ``i``: events of ``kind`` among the first ``i`` (summed in C)."""
    return list(accumulate(kinds.translate(_ONLY[kind]), initial=0))


def _reach(base: list[int], user: list[int], ra_l: list[int], ro_l: list[int], re_l: list[int],
           ka_l: list[int], ko_l: list[int], mono_l: list[int], pre_a: list[int],
           pre_o: list[int], pre_g: list[int]) -> tuple[tuple[list[int], list[int]], ...]:
    """:attr:`PreparedSession.reach` of the other fields."""
    streak: list[int] = []
    same_pair: list[int] = []
    talk: list[int] = []
    alternation: list[int] = []
    # Conditional expressions rather than min(): this runs for every check of every session,
    # and a call of min() on a few ints costs about as much as the rest of the loop.
    for b, u, ra, ro, re, ka, ko, mono in zip(base, user, ra_l, ro_l, re_l, ka_l, ko_l, mono_l,
                                              strict=True):
        seg_a = pre_a[b] - pre_a[u + 1]
        seg_o = pre_o[b] - pre_o[u + 1]
        pair = seg_a if seg_a < seg_o else seg_o
        least = ra if ra < re else re
        streak.append(least if least < pair else pair)  # min(ra, re, pair)
        least = ra if ra < ro else ro
        same_pair.append(least if least < pair else pair)  # min(ra, ro, pair)
        talk.append(pre_g[b] - pre_g[mono])
        least = (ka if ka < ko else ko) + 2
        alternation.append(least if least < pair else pair)  # min(pair, ka + 2, ko + 2)
    return tuple(_by_decreasing(values) for values in (streak, same_pair, talk, alternation))


def _by_decreasing(values: list[int]) -> tuple[list[int], list[int]]:
    """The indices of the positive values by decreasing value (equal ones in index order:
    ``reverse`` keeps a sort stable), and their negated values in that order."""
    order = [i for i, value in enumerate(values) if value > 0]
    order.sort(key=values.__getitem__, reverse=True)
    return order, [-values[i] for i in order]


# --------------------------------------------------------------------------------------------
# Prepared data as plain JSON columns (the on-disk cache, worker processes).

CODEC_VERSION = 1
"""Bumped whenever :func:`encode` writes something :func:`decode` of an older loopscope would
read differently."""

_INT_FIELDS = ("turn", "calls_before", "base", "user", "ra", "ro", "re", "ka", "ko",
               "mono_start", "newest_obs")
_PREFIX_FIELDS = ("pre_actions", "pre_observations", "pre_agent")


def encode(p: PreparedSession) -> dict[str, Any]:
    """``p`` as JSON-ready columns; :func:`decode` gives it back (a property test)."""
    tool_sets: dict[tuple[str, ...], int] = {}
    for t in p.tools:
        tool_sets.setdefault(t, len(tool_sets))
    return {
        "session": p.session, "source": p.source, "format": p.format,
        **{name: getattr(p, name) for name in _INT_FIELDS},
        "call": [-1 if c is None else c for c in p.call],
        "tool_sets": [list(t) for t in tool_sets], "tools": [tool_sets[t] for t in p.tools],
        "nudge_tool": p.nudge_tool, "nudge_error": p.nudge_error,
        **{name: getattr(p, name) for name in _PREFIX_FIELDS},
    }


def decode(doc: Any) -> PreparedSession:
    """The :class:`PreparedSession` that :func:`encode` wrote; :class:`CodecError` for
    anything else (damaged or foreign data is never trusted)."""
    require_strings(doc, ("session", "source", "format"))
    pre_a = ints_at(doc, "pre_actions", None, 0, None)
    events = len(pre_a) - 1
    if events < 0:
        raise CodecError("pre_actions: expected at least one count")
    pre_o = ints_at(doc, "pre_observations", events + 1, 0, None)
    pre_g = ints_at(doc, "pre_agent", events + 1, 0, None)
    turn = ints_at(doc, "turn", None, 0, None)
    n = len(turn)
    # Log positions: a check reads the first ``base`` events; ``user`` and ``newest_obs`` are
    # events before it (-1: none); the monologue walk starts at or before ``base``.
    base = ints_at(doc, "base", n, 0, events)
    user = ints_at(doc, "user", n, -1, max(events - 1, -1))
    newest_obs = ints_at(doc, "newest_obs", n, -1, max(events - 1, -1))
    mono = ints_at(doc, "mono_start", n, 0, events)
    counts = {name: ints_at(doc, name, n, 0, None)
              for name in ("calls_before", "ra", "ro", "re", "ka", "ko")}
    tool_sets = doc.get("tool_sets")
    if type(tool_sets) is not list or any(
            type(t) is not list or any(type(x) is not str for x in t) for t in tool_sets):
        raise CodecError("tool_sets: expected lists of strings")
    sets = [tuple(t) for t in tool_sets]
    tools = [sets[k] for k in ints_at(doc, "tools", n, 0, len(sets) - 1)]
    call = [None if c < 0 else c for c in ints_at(doc, "call", n, -1, None)]
    return PreparedSession(
        doc["session"], doc["source"], doc["format"], n, turn, call, tools,
        counts["calls_before"], base, user, counts["ra"], counts["ro"], counts["re"],
        counts["ka"], counts["ko"], mono, newest_obs, strs_at(doc, "nudge_tool", n),
        strs_at(doc, "nudge_error", n), pre_a, pre_o, pre_g,
        _reach(base, user, counts["ra"], counts["ro"], counts["re"], counts["ka"], counts["ko"],
               mono, pre_a, pre_o, pre_g))


# --------------------------------------------------------------------------- run


def _window(b: int, u: int, nudges: list[int], n: int, size: int) -> tuple[int, int]:
    """``(start, kept)``: the window (the newest ``size`` log entries, cut after the latest
    user message) holds the events ``start .. b-1`` and ``kept`` nudges.

    ``nudges[:n]`` lists, oldest first, how many events the log held when each nudge was
    appended (nudge ``j`` sits after event ``nudges[j] - 1``); later entries are ignored.
    """
    in_window = kept = 0
    j = n - 1
    while j >= 0:
        at = nudges[j]
        if (b - at) + (n - j) > size:  # entries from this nudge to the end
            break
        in_window += 1
        if at > u:
            kept += 1
        j -= 1
    start = b - size + in_window
    if start <= u:
        start = u + 1
    if start < 0:
        start = 0
    return start, kept


_Verdict = tuple[str, str, int, str | None]
"""(verdict, detector, count, nudge text) of a check that did not pass."""


def _evaluate(p: PreparedSession, config: OpenHandsConfig,
              candidates: Sequence[int] | None = None
              ) -> tuple[dict[int, _Verdict], list[int], int]:
    """The flagged checks, the nudges (events in the log at each) and the first refusal.
    ``candidates``: the checks that can flag under ``config`` when the caller has them
    (default: ``p.candidates(config)``)."""
    flagged: dict[int, _Verdict] = {}
    nudges: list[int] = []
    first = -1
    if not config.enabled:
        return flagged, nudges, first
    ao, ae, mono, alt = (config.action_observation, config.action_error, config.monologue,
                         config.alternating_pattern)
    size = config.max_events
    least = min(ao, ae, mono)
    needed = max(ao, ae + 1)
    last_nudged = -1
    base, user, pre_a, pre_o = p.base, p.user, p.pre_actions, p.pre_observations
    for i in p.candidates(config) if candidates is None else candidates:
        b, u = base[i], user[i]
        start, kept = _window(b, u, nudges, len(nudges), size)
        n_a = pre_a[b] - pre_a[start]
        n_o = pre_o[b] - pre_o[start]
        ra, re = p.ra[i], p.re[i]
        # The nudge: the action-error streak read with one pair more than the threshold.
        streak = min(ra, re, n_a, n_o, ae + 1)
        if streak == ae and p.newest_obs[i] != last_nudged:
            last_nudged = p.newest_obs[i]
            nudges.append(b)
            flagged[i] = ("warn", ACTION_ERROR, ae,
                          nudge_text(p.nudge_tool[i], ae, p.nudge_error[i]))
            continue
        length = (b - start) + kept
        if length < least:
            continue
        verdict: _Verdict | None = None
        if n_a >= ao and n_o >= ao and ra >= ao and p.ro[i] >= ao:
            verdict = ("refuse", ACTION_OBSERVATION, ao, None)
        else:
            streak = min(ra, re, n_a, n_o, needed)
            if streak > ae:
                verdict = ("refuse", ACTION_ERROR, streak, None)
            elif length >= mono and (count := p.pre_agent[b] - p.pre_agent[
                    max(start, p.mono_start[i])]) >= mono:
                verdict = ("refuse", MONOLOGUE, count, None)
            elif (length >= alt and n_a >= alt and n_o >= alt
                  and (alt <= 2 or (p.ka[i] >= alt - 2 and p.ko[i] >= alt - 2))):
                verdict = ("refuse", ALTERNATING_PATTERN, alt, None)
        if verdict is not None:
            flagged[i] = verdict
            if first < 0:
                first = i
    return flagged, nudges, first


def run(p: PreparedSession, config: OpenHandsConfig) -> SessionReplay:
    """The replay of ``p`` under ``config``; steps are built when read."""
    flagged, nudges, first = _evaluate(p, config)
    first_refusal = None
    if first >= 0:
        first_refusal = FirstRefusal(p.turn[first], p.call[first], flagged[first][1])
    warned = len(nudges) > 0
    return SessionReplay.lazy(p.session, p.source, p.format, ENGINE_NAME, first_refusal, warned,
                              _Detail(p, config, flagged, nudges, first))


class _Detail:
    """The steps of one prepared session under one configuration, built when read."""

    __slots__ = ("config", "first", "flagged_checks", "nudges", "prepared")

    def __init__(self, prepared: PreparedSession, config: OpenHandsConfig,
                 flagged: dict[int, _Verdict], nudges: list[int], first: int) -> None:
        self.prepared = prepared
        self.config = config
        self.flagged_checks = flagged
        self.nudges = nudges
        self.first = first

    def _scans(self) -> list[int]:
        """Events in the window after each check (its own nudge included)."""
        p, size = self.prepared, self.config.max_events
        nudges = self.nudges
        out: list[int] = []
        k = 0  # nudges made up to and including this check
        for i in range(p.n):
            b = p.base[i]
            while k < len(nudges) and nudges[k] <= b:
                k += 1
            start, kept = _window(b, p.user[i], nudges, k, size)
            out.append(b - start + kept)
        return out

    def _fields(self) -> list[tuple[Any, ...]]:
        p, first = self.prepared, self.first
        enabled = self.config.enabled
        scans = self._scans() if enabled else None
        out: list[tuple[Any, ...]] = []
        for i in range(p.n):
            v = self.flagged_checks.get(i)
            extra = step_extra(enabled, scans[i] if scans is not None else 0,
                               v[3] if v is not None else None)
            if v is None:
                out.append((p.turn[i], p.call[i], p.tools[i], None, "pass", None, None,
                            i > first >= 0, extra))
            else:
                out.append((p.turn[i], p.call[i], p.tools[i], None, v[0], v[1], v[2],
                            i > first >= 0, extra))
        return out

    def steps(self) -> tuple[Step, ...]:
        return tuple(new_step(*f) for f in self._fields())

    def flagged(self) -> tuple[FlaggedStep, ...]:
        steps = self.steps()
        calls_before = self.prepared.calls_before
        return tuple(FlaggedStep(i, calls_before[i], steps[i])
                     for i in sorted(self.flagged_checks))

    def markers(self) -> tuple[Marker, ...]:
        p, flagged = self.prepared, self.flagged_checks
        return tuple(Marker(i, p.turn[i], p.call[i], p.calls_before[i], v[0], v[1], v[2])  # type: ignore[arg-type]
                     for i, v in sorted(flagged.items()))

    def step_json(self) -> list[dict[str, Any]]:
        return [{"turn": f[0], "call": f[1], "tools": list(f[2]), "signature": None,
                 "verdict": f[4], "detector": f[5], "count": f[6], "after_divergence": f[7],
                 **f[8]} for f in self._fields()]

    def verdict_counts(self) -> tuple[int, int]:
        refusals = sum(1 for v in self.flagged_checks.values() if v[0] == "refuse")
        return refusals, len(self.flagged_checks) - refusals


def counters(p: PreparedSession, config: OpenHandsConfig) -> tuple[CounterSeries, ...]:
    """After every turn, what each pattern reads inside the window, against its threshold:
    identical call + result pairs in a row, the same call failing in a row, agent messages in a
    row, and calls (and results) repeating with period 2."""
    _, nudges, _ = _evaluate(p, config)
    pairs: list[float | None] = []
    failing: list[float | None] = []
    talking: list[float | None] = []
    alternating: list[float | None] = []
    k = 0
    for i in range(p.n):
        b, u = p.base[i], p.user[i]
        while k < len(nudges) and nudges[k] < b:
            k += 1
        start, _kept = _window(b, u, nudges, k, config.max_events)
        n_a = p.pre_actions[b] - p.pre_actions[start]
        n_o = p.pre_observations[b] - p.pre_observations[start]
        both = min(n_a, n_o)
        pairs.append(min(p.ra[i], p.ro[i], both))
        failing.append(min(p.ra[i], p.re[i], both))
        talking.append(p.pre_agent[b] - p.pre_agent[max(start, p.mono_start[i])])
        alternating.append(min(both, p.ka[i] + 2, p.ko[i] + 2))
    n = p.n
    out = [
        CounterSeries("same call + result in a row", tuple(pairs), hover="identical pairs"),
        CounterSeries("same call failing in a row", tuple(failing), hover="failures in a row"),
        CounterSeries("agent replies in a row", tuple(talking), hover="replies in a row"),
        CounterSeries("calls alternating (period 2)", tuple(alternating),
                      hover="calls in the pattern"),
    ]
    if config.enabled:
        for label, value in (("stop at identical pairs", config.action_observation),
                             ("nudge at failures", config.action_error),
                             ("stop at replies", config.monologue),
                             ("stop at alternating calls", config.alternating_pattern)):
            out.append(CounterSeries(f"{label}: {value}", (float(value),) * n, role="limit",
                                     hover=label))
    return tuple(out)
