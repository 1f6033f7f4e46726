"""Shadow-mode replay of an OpenAI-chat message list (gglib engine spec §5).

Two paths with identical output:

* :func:`replay_messages` is the plain reference: the §5.1 pseudocode over the detector classes
  of :mod:`loopscope.engines.gglib.core`.
* :func:`prepare_messages` does every threshold-independent step once (reading calls, parsing
  arguments, canonicalising, FNV, joining results, the session-wide ``previous`` readings,
  costly classification, stagnation text hashes) and integer-codes signatures and results
  hashes; :func:`run_prepared` then replays only the two small state machines. Observation
  classification depends on the pattern list and is cached per pattern tuple.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loopscope.engines.base import FirstRefusal, Step
from loopscope.engines.gglib.canon import stable_repr
from loopscope.engines.gglib.config import GglibConfig
from loopscope.engines.gglib.core import (
    WINDOW_FACTOR,
    LoopDetected,
    LoopDetector,
    StagnationDetected,
    StagnationDetector,
    batch_class_of,
    batch_signature,
    domain_calls,
    extract_text,
    hash_result_content,
    is_costly_batch,
    is_costly_name,
    is_observation_batch,
    is_observation_name,
    read_arguments,
    turn_results_hash,
)
from loopscope.engines.gglib.fnv import fnv1a_64, hex16

__all__ = [
    "STEP_FIELDS",
    "PreparedMessages",
    "prepare_messages",
    "replay_messages",
    "run_prepared",
]

STEP_FIELDS: tuple[str, ...] = (
    "turn",
    "call",
    "tools",
    "signature",
    "verdict",
    "detector",
    "count",
    "after_divergence",
    "kind",
    "total",
    "effective_max",
    "ceiling",
    "batch_class",
    "rule",
    "outcome",
    "rescued",
    "identical",
    "not_evaluated",
    "answers_joined",
    "max_steps",
    "window",
    "text_hash",
)
"""All 22 step keys of §5.3, in output order."""


def _role(m: Any) -> str | None:
    if isinstance(m, dict):
        r = m.get("role")
        if isinstance(r, str):
            return r
    return None


def _batch_extra(
    *,
    total: int,
    effective_max: int,
    ceiling: int | None,
    batch_class: str,
    rule: str | None,
    outcome: str | None,
    rescued: bool,
    identical: bool,
    not_evaluated: bool,
    answers_joined: bool,
) -> dict[str, Any]:
    return {
        "kind": "batch",
        "total": total,
        "effective_max": effective_max,
        "ceiling": ceiling,
        "batch_class": batch_class,
        "rule": rule,
        "outcome": outcome,
        "rescued": rescued,
        "identical": identical,
        "not_evaluated": not_evaluated,
        "answers_joined": answers_joined,
        "max_steps": None,
        "window": None,
        "text_hash": None,
    }


def _prose_extra(max_steps: int, text_hash: str | None) -> dict[str, Any]:
    return {
        "kind": "prose",
        "total": None,
        "effective_max": None,
        "ceiling": None,
        "batch_class": None,
        "rule": None,
        "outcome": None,
        "rescued": False,
        "identical": False,
        "not_evaluated": False,
        "answers_joined": None,
        "max_steps": max_steps,
        "window": max(max_steps * WINDOW_FACTOR, 1),
        "text_hash": text_hash,
    }


# --------------------------------------------------------------------------------------------
# The reference


def replay_messages(
    messages: Sequence[Any], config: GglibConfig
) -> tuple[tuple[Step, ...], FirstRefusal | None]:
    """The plain shadow-mode replay of §5.1 over the detector classes."""
    S = config.max_repeated_batch_steps
    O = config.max_observation_steps  # noqa: E741 - the spec's name
    patterns = config.observation_tools
    M = config.max_stagnation_steps
    loops = LoopDetector()
    stag = StagnationDetector()
    previous: dict[str, Any] = {}
    turn = -1
    next_call = 0
    first: FirstRefusal | None = None
    steps: list[Step] = []
    n_messages = len(messages)
    for i, m in enumerate(messages):
        role = _role(m)
        if role == "tool":
            continue
        if role != "assistant":
            loops.break_run()
            stag.clear()
            continue
        turn += 1
        calls = domain_calls(m.get("tool_calls"))
        after = first is not None
        step: Step
        if calls:
            results = turn_results_hash(calls, (messages[j] for j in range(i + 1, n_messages)))
            sig = batch_signature(calls)
            had = sig in previous
            seen = previous.get(sig)
            previous[sig] = results
            identical = had and seen is not None and results is not None and seen == results
            not_evaluated = had and (seen is None or results is None)
            observation = is_observation_batch(calls, patterns)
            costly = is_costly_batch(calls)
            try:
                rec = loops.check(calls, S, patterns, O)
            except LoopDetected as e:
                step = Step(
                    turn,
                    next_call,
                    tuple(c.name for c in calls),
                    sig,
                    "refuse",
                    "loop",
                    e.count,
                    after,
                    _batch_extra(
                        total=e.total,
                        effective_max=e.effective_max,
                        ceiling=e.ceiling,
                        batch_class=batch_class_of(observation, costly),
                        rule=e.rule,
                        outcome=None,
                        rescued=False,
                        identical=identical,
                        not_evaluated=not_evaluated,
                        answers_joined=results is not None,
                    ),
                )
            else:
                outcome = loops.record_results(rec, results)
                step = Step(
                    turn,
                    next_call,
                    tuple(c.name for c in calls),
                    sig,
                    "pass",
                    None,
                    rec.count,
                    after,
                    _batch_extra(
                        total=rec.total,
                        effective_max=rec.effective_max,
                        ceiling=rec.ceiling,
                        batch_class=batch_class_of(observation, costly),
                        rule=None,
                        outcome=outcome.value,
                        rescued=rec.rescued,
                        identical=identical,
                        not_evaluated=not_evaluated,
                        answers_joined=results is not None,
                    ),
                )
        else:
            text = extract_text(m.get("content"))
            text_hash = hex16(fnv1a_64(text)) if text else None
            try:
                count = stag.record(text, False, M)
            except StagnationDetected as e:
                step = Step(
                    turn, None, (), None, "refuse", "stagnation", e.count, after,
                    _prose_extra(M, text_hash),
                )
            else:
                step = Step(
                    turn, None, (), None, "pass", None, count, after, _prose_extra(M, text_hash)
                )
        if step.verdict == "refuse" and first is None:
            first = FirstRefusal(step.turn, step.call, step.detector or "")
        steps.append(step)
        next_call += len(calls)
    return tuple(steps), first


# --------------------------------------------------------------------------------------------
# Prepared data and the fast state machine

_BREAK = -1


@dataclass(frozen=True, slots=True)
class _PBatch:
    turn: int
    call: int
    tools: tuple[str, ...]
    names_lower: tuple[str, ...]
    signature: str
    sig_id: int
    results_id: int
    """-1 when the results hash is None (unjoinable)."""
    identical: bool
    not_evaluated: bool
    costly: bool
    call_signatures: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _PProse:
    turn: int
    text_id: int
    """-1 for empty text (nothing recorded)."""
    text_hash: str | None


@dataclass(slots=True)
class PreparedMessages:
    """Threshold-independent data for one message list (see the module docstring)."""

    steps: tuple[_PBatch | _PProse, ...]
    program: tuple[int, ...]
    """Step indices in order, with ``-1`` for a run break (consecutive breaks collapsed)."""
    n_messages: int
    _obs_cache: dict[tuple[str, ...], tuple[bool, ...]] = field(default_factory=dict)
    _last: list[Any] = field(default_factory=list)
    """Per step, ``(row, step)`` of the last run: a step whose varying fields (``row``) are
    equal is reused. One tuple per slot, so concurrent runs never pair a row with another
    run's step."""
    _extras: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    """Shared, read-only ``extra`` mappings keyed by their values (many steps share one)."""

    def observation_flags(self, patterns: Sequence[str]) -> tuple[bool, ...]:
        """Per step: is it an observation batch under ``patterns`` (False for prose)."""
        key = tuple(patterns)
        flags = self._obs_cache.get(key)
        if flags is None:
            lowered = [p.lower() for p in key]
            per_name: dict[str, bool] = {}
            out: list[bool] = []
            for s in self.steps:
                if isinstance(s, _PProse) or not lowered:
                    out.append(False)
                    continue
                ok = True
                for n in s.names_lower:
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


def _read_call_parts(element: Any) -> tuple[str, str, Any]:
    """``(id, name, raw arguments)`` of one ``tool_calls`` element, as :func:`core.read_call`."""
    if not isinstance(element, dict):
        return "", "", None
    i = element.get("id")
    call_id = i if isinstance(i, str) else ""
    f = element.get("function")
    if not isinstance(f, dict):
        return call_id, "", None
    name = f.get("name")
    return call_id, name if isinstance(name, str) else "", f.get("arguments")


def _join(ids: list[str], keys: list[str], messages: Sequence[Any], start: int) -> Any:
    """:func:`core.turn_results_hash` with the results keys already computed."""
    answers: dict[str, Any] = {}
    n = len(messages)
    j = start
    while j < n:
        m = messages[j]
        if not isinstance(m, dict) or m.get("role") != "tool":
            break
        j += 1
        tcid = m.get("tool_call_id")
        if not isinstance(tcid, str):
            continue
        if tcid in answers:
            return None
        answers[tcid] = hash_result_content(m.get("content"))
    if len(set(ids)) != len(ids):
        return None
    pairs = []
    for call_id, key in zip(ids, keys, strict=True):
        a = answers.get(call_id)
        if a is None:
            return None
        pairs.append((key, a))
    return tuple(sorted(pairs))


def prepare_messages(messages: Sequence[Any]) -> PreparedMessages:
    """Everything threshold-independent about ``messages``, computed once."""
    sig_ids: dict[str, int] = {}
    results_ids: dict[Any, int] = {}
    text_ids: dict[int, int] = {}
    # raw arguments string -> (canonical rendering, hex16 of its FNV)
    arg_cache: dict[str, tuple[str, str]] = {}
    previous: dict[int, int] = {}
    steps: list[_PBatch | _PProse] = []
    program: list[int] = []
    turn = -1
    next_call = 0
    if not isinstance(messages, list | tuple):
        messages = list(messages)
    for i, m in enumerate(messages):
        role = _role(m)
        if role == "tool":
            continue
        if role != "assistant":
            if not program or program[-1] != _BREAK:
                program.append(_BREAK)
            continue
        turn += 1
        tool_calls = m.get("tool_calls")
        if isinstance(tool_calls, list) and tool_calls:
            ids: list[str] = []
            names: list[str] = []
            keys: list[str] = []
            sigs: list[str] = []
            for element in tool_calls:
                call_id, name, raw = _read_call_parts(element)
                entry = arg_cache.get(raw) if isinstance(raw, str) else None
                if entry is None:
                    canonical = stable_repr(read_arguments(raw))
                    entry = (canonical, hex16(fnv1a_64(canonical)))
                    if isinstance(raw, str):
                        arg_cache[raw] = entry
                ids.append(call_id)
                names.append(name)
                keys.append(name + "\x00" + entry[0])
                sigs.append(name + ":" + entry[1])
            results = _join(ids, keys, messages, i + 1)
            sig = "|".join(sorted(sigs))
            sid = sig_ids.setdefault(sig, len(sig_ids))
            rid = -1 if results is None else results_ids.setdefault(results, len(results_ids))
            had = sid in previous
            seen = previous.get(sid, -1)
            previous[sid] = rid
            tools = tuple(names)
            steps.append(
                _PBatch(
                    turn=turn,
                    call=next_call,
                    tools=tools,
                    names_lower=tuple(dict.fromkeys(n.lower() for n in tools)),
                    signature=sig,
                    sig_id=sid,
                    results_id=rid,
                    identical=had and seen != -1 and rid != -1 and seen == rid,
                    not_evaluated=had and (seen == -1 or rid == -1),
                    costly=any(is_costly_name(n) for n in tools),
                    call_signatures=tuple(sigs),
                )
            )
            next_call += len(tool_calls)
        else:
            text = extract_text(m.get("content"))
            if text:
                h = fnv1a_64(text)
                tid = text_ids.setdefault(h, len(text_ids))
                steps.append(_PProse(turn, tid, hex16(h)))
            else:
                steps.append(_PProse(turn, -1, None))
        program.append(len(steps) - 1)
    return PreparedMessages(tuple(steps), tuple(program), len(messages))


_OUTCOME_CHANGED = "answer_changed"
_OUTCOME_REPEATED = "answer_repeated"
_OUTCOME_NC = "not_comparable"


def _fast_step_factory() -> Any:
    """A ``Step`` constructor that skips the frozen dataclass ``__init__`` (about 3x faster).

    It writes the slots directly and is used only if it builds exactly what ``Step(...)`` builds;
    otherwise (``Step`` without slots, other fields) the plain constructor is used.
    """
    import dataclasses

    names = [f.name for f in dataclasses.fields(Step)]
    expected = [
        "turn", "call", "tools", "signature", "verdict", "detector", "count",
        "after_divergence", "extra",
    ]
    try:
        if names != expected:
            raise TypeError
        setters = [Step.__dict__[n].__set__ for n in names]
    except (KeyError, AttributeError, TypeError):
        return Step
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = setters
    new = object.__new__

    def make(
        turn: int, call: Any, tools: Any, sig: Any, verdict: Any, det: Any, count: Any,
        after: bool, extra: Any,
    ) -> Step:
        o = new(Step)
        s0(o, turn)
        s1(o, call)
        s2(o, tools)
        s3(o, sig)
        s4(o, verdict)
        s5(o, det)
        s6(o, count)
        s7(o, after)
        s8(o, extra)
        return o

    probe: tuple[Any, ...] = (1, 2, ("t",), "t:x", "pass", None, 3, False, {"k": 1})
    try:
        built = make(*probe)
        ok = built == Step(*probe) and type(built) is Step
    except Exception:
        ok = False
    return make if ok else Step


_make_step = _fast_step_factory()


def run_prepared(
    prepared: PreparedMessages, config: GglibConfig
) -> tuple[tuple[Step, ...], FirstRefusal | None]:
    """The state machines of §2.6 and §2.10 over prepared data; equal to :func:`replay_messages`.

    Only integers are compared here. A step whose varying fields equal those of the previous
    run on the same prepared data is reused rather than rebuilt, so re-running with other
    thresholds mostly costs the state machine itself.
    """
    S = config.max_repeated_batch_steps
    O = config.max_observation_steps  # noqa: E741 - the spec's name
    M = config.max_stagnation_steps
    window = max(M * WINDOW_FACTOR, 1)
    obs_flags = prepared.observation_flags(config.observation_tools)
    psteps = prepared.steps
    n_steps = len(psteps)
    last = prepared._last
    if len(last) != n_steps:
        last[:] = [(None, None)] * n_steps

    # Per class (observation, costly): effective_max, ceiling (None when exempt), class name.
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

    make = _make_step
    extras = prepared._extras
    if len(extras) > 100_000:
        extras.clear()
    run_sig = -2
    run_count = 0
    run_total = 0
    run_last = -1
    recent: deque[int] = deque()
    counts: dict[int, int] = {}
    first: FirstRefusal | None = None
    after = False
    out: list[Step] = []
    append = out.append

    for idx in prepared.program:
        if idx == _BREAK:
            run_sig = -2
            if recent:
                recent.clear()
                counts.clear()
            continue
        s = psteps[idx]
        if type(s) is _PBatch:
            eff, ceil, cls = classes[(obs_flags[idx], s.costly)]
            sid = s.sig_id
            if sid == run_sig:
                run_count += 1
                run_total += 1
            else:
                run_sig = sid
                run_count = 1
                run_total = 1
                run_last = -1
            rid = s.results_id
            if run_count > eff or (ceil is not None and run_total > ceil):
                rule = "strike" if run_count > eff else "ceiling"
                row: tuple[Any, ...] = (after, True, run_count, run_total, eff, ceil, cls, rule)
                prev_row, step = last[idx]
                if row != prev_row:
                    ekey = (row, s.identical, s.not_evaluated, rid != -1)
                    extra = extras.get(ekey)
                    if extra is None:
                        extra = extras[ekey] = {
                            "kind": "batch",
                            "total": run_total,
                            "effective_max": eff,
                            "ceiling": ceil,
                            "batch_class": cls,
                            "rule": rule,
                            "outcome": None,
                            "rescued": False,
                            "identical": s.identical,
                            "not_evaluated": s.not_evaluated,
                            "answers_joined": rid != -1,
                            "max_steps": None,
                            "window": None,
                            "text_hash": None,
                        }
                    step = make(
                        s.turn, s.call, s.tools, s.signature, "refuse", "loop", run_count, after,
                        extra,
                    )
                    last[idx] = (row, step)
                if first is None:
                    first = FirstRefusal(s.turn, s.call, "loop")
                    after = True
            else:
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
                row = (after, False, count, run_total, eff, ceil, cls, outcome)
                prev_row, step = last[idx]
                if row != prev_row:
                    ekey = (row, s.identical, s.not_evaluated, rid != -1)
                    extra = extras.get(ekey)
                    if extra is None:
                        extra = extras[ekey] = {
                            "kind": "batch",
                            "total": run_total,
                            "effective_max": eff,
                            "ceiling": ceil,
                            "batch_class": cls,
                            "rule": None,
                            "outcome": outcome,
                            "rescued": run_total > eff,
                            "identical": s.identical,
                            "not_evaluated": s.not_evaluated,
                            "answers_joined": rid != -1,
                            "max_steps": None,
                            "window": None,
                            "text_hash": None,
                        }
                    step = make(
                        s.turn, s.call, s.tools, s.signature, "pass", None, count, after, extra
                    )
                    last[idx] = (row, step)
        else:
            assert type(s) is _PProse
            tid = s.text_id
            if tid == -1:
                c: int | None = None
                refuse = False
            else:
                recent.append(tid)
                counts[tid] = counts.get(tid, 0) + 1
                while len(recent) > window:
                    counts[recent.popleft()] -= 1
                c = counts[tid]
                refuse = c > M
            row = (after, refuse, c, M)
            prev_row, step = last[idx]
            if row != prev_row:
                pkey = (M, s.text_hash)
                extra = extras.get(pkey)
                if extra is None:
                    extra = extras[pkey] = {
                        "kind": "prose",
                        "total": None,
                        "effective_max": None,
                        "ceiling": None,
                        "batch_class": None,
                        "rule": None,
                        "outcome": None,
                        "rescued": False,
                        "identical": False,
                        "not_evaluated": False,
                        "answers_joined": None,
                        "max_steps": M,
                        "window": window,
                        "text_hash": s.text_hash,
                    }
                step = make(
                    s.turn, None, (), None, "refuse" if refuse else "pass",
                    "stagnation" if refuse else None, c, after, extra,
                )
                last[idx] = (row, step)
            if refuse and first is None:
                first = FirstRefusal(s.turn, None, "stagnation")
                after = True
        append(step)
    return tuple(out), first
