"""A literal port of Qwen Code's ``LoopDetectionService`` (``@qwen-code/qwen-code@0.24.4``,
``chunks/chunk-DPEB6S2R.js``, section ``packages/core/src/services/loopDetectionService.ts``).

Two tiers, called separately as ``client.ts`` does: :meth:`check_always_on_safeties` (the
consecutive-identical tool-call check, the git-inspection shell stagnation check and the per-turn
cap; always on) and :meth:`add_and_check_heuristic_loops` (global duplicate, alternating
pattern, read-file loop, action stagnation, content chanting, repetitive thoughts; only with
``skipLoopDetection: false``). Text is held in UTF-16 code units (:func:`loopscope.jsonrules.node_json.to_units`), as
JavaScript measures it. Tool results are never fed (``recordToolResult`` is not ported), so the
result-aware state of stateful read tools stays empty, exactly as in the package when no result
is recorded.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final

from loopscope.jsonrules.javascript import utf16_sort_key
from loopscope.jsonrules.node_json import (
    JS_WHITESPACE_CLASS,
    js_trim,
    json_stringify,
    node_sha256,
    to_units,
)

__all__ = [
    "ALTERNATING",
    "CAP",
    "CHANTING",
    "CONSECUTIVE",
    "GLOBAL_DUPLICATE",
    "HEURISTIC_TYPES",
    "READ_FILE",
    "SHELL_STAGNATION",
    "STAGNATION",
    "THOUGHTS",
    "Constants",
    "Content",
    "LoopDetectionService",
    "PreparedCall",
    "Thought",
    "ToolCallRequest",
    "canonical_tool_name",
    "prepare_call",
    "resolve_tool_call",
    "should_halt_on_turn_tool_call_cap",
    "tool_call_key",
]

CONSECUTIVE: Final = "consecutive_identical_tool_calls"
SHELL_STAGNATION: Final = "shell_command_stagnation"
CAP: Final = "turn_tool_call_cap"
GLOBAL_DUPLICATE: Final = "global_tool_call_duplicate"
ALTERNATING: Final = "alternating_tool_call_pattern"
READ_FILE: Final = "read_file_loop"
STAGNATION: Final = "action_stagnation"
CHANTING: Final = "chanting_identical_sentences"
THOUGHTS: Final = "repetitive_thoughts"
HEURISTIC_TYPES: Final = frozenset({GLOBAL_DUPLICATE, ALTERNATING, READ_FILE, STAGNATION,
                                    CHANTING, THOUGHTS})

# Fixed constants (module-level in the package).
CONTENT_CHUNK_SIZE: Final = 50
MAX_HISTORY_LENGTH: Final = 4000
TRUNCATION_SLACK: Final = 1000
PERIODIC_OCCURRENCES_REQUIRED: Final = 5
PERIODIC_MIN_TRUNCATED_OCCURRENCES: Final = 3
MIN_PERIODIC_REGION_LENGTH: Final = 1000
MAX_THOUGHT_HISTORY: Final = 50
FILE_READ_WINDOW: Final = 15
STATEFUL_READ_TOOLS: Final = frozenset({"task_list"})
TOOL_CALL_ENVELOPE: Final = "tool_call"  # ToolNames.TOOL_CALL
READ_LIKE_TOOL_NAMES: Final = frozenset({"read_file", "read_many_files", "list_directory",
                                         "zoom_image"})
READ_LIKE_NAME_PREFIXES: Final = ("read_", "list_")
TOOL_NAMES_MIGRATION: Final = {"search_file_content": "grep_search", "replace": "edit",
                               "task": "agent"}


@dataclass(frozen=True, slots=True)
class Constants:
    """The module constants that loopscope lets a what-if change (Qwen Code's values)."""

    tool_call_loop_threshold: int = 5
    content_loop_threshold: int = 10
    global_duplicate_threshold: int = 6
    alternating_pattern_cycles: int = 3
    file_read_threshold: int = 8
    stagnation_threshold: int = 8
    adaptive_cap_hard_multiplier: int = 10
    thought_repeat_threshold: int = 3


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """``{type: tool_call_request, value: {name, args}}``: ``name`` is ``fnCall.name ||
    "undefined_tool_name"``, ``args`` is ``fnCall.args || {}``."""

    name: str
    args: Any


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A ``tool_call_request`` reduced to what the guards read (:func:`prepare_call`): the
    name after ``getLoopDetectionToolCall``, its repeat key, and whether it is a git overview
    inspection command (``getShellInspectionKey`` not null). Replays prepare each call once."""

    name: str
    key: str
    inspection: bool


@dataclass(frozen=True, slots=True)
class Content:
    """``{type: content, value: text}``."""

    text: str


@dataclass(frozen=True, slots=True)
class Thought:
    """``{type: thought, value: {subject, description}}``."""

    subject: str
    description: str


# --------------------------------------------------------------------------- keys


def canonical_tool_name(name: str) -> str:
    """``canonicalToolName``: three legacy names map to today's."""
    return TOOL_NAMES_MIGRATION.get(name, name)


def _canonicalize(value: Any) -> Any:
    """``canonicalizeForHash``: objects rebuilt with their keys in JavaScript's default sort
    order (UTF-16 code units); :func:`json_stringify` then still lists array-index keys first,
    as a JavaScript object does."""
    if isinstance(value, list | tuple):
        return [_canonicalize(v) for v in value]
    if isinstance(value, dict):
        return {k: _canonicalize(value[k]) for k in sorted(value, key=utf16_sort_key)}
    return value


def tool_call_key(name: str, args: Any) -> str:
    """``getToolCallRepeatKey``: sha256 of ``canonicalName + ":" + JSON.stringify(canonical
    args)``."""
    return node_sha256(f"{canonical_tool_name(name)}:{json_stringify(_canonicalize(args))}")


def resolve_tool_call(name: str, args: Any) -> tuple[str, Any]:
    """``getLoopDetectionToolCall``: a ``tool_call`` envelope is judged as the call it wraps
    (canonical name, lower-cased; its ``arguments`` when they are an object)."""
    if name != TOOL_CALL_ENVELOPE or not isinstance(args, dict):
        return name, args
    target = args.get("name")
    if not isinstance(target, str):
        return name, args
    inner = args.get("arguments")
    return canonical_tool_name(target).lower(), inner if isinstance(inner, dict) else args


def should_halt_on_turn_tool_call_cap(total: int, max_key_repeat: int, cap: float,
                                      explicit: bool, c: Constants = Constants()) -> bool:
    """``shouldHaltOnTurnToolCallCap``: nothing up to the cap; past it an explicit cap halts,
    an adaptive one only when stuck (one call repeated ``GLOBAL_DUPLICATE_THRESHOLD`` times) or
    past the hard backstop (cap × ``ADAPTIVE_CAP_HARD_MULTIPLIER``)."""
    if total <= cap:
        return False
    hard_cap = cap * c.adaptive_cap_hard_multiplier
    stuck = max_key_repeat >= c.global_duplicate_threshold
    return explicit or total > hard_cap or stuck


# --------------------------------------------------------------------------- regexes

_S: Final = f"[{JS_WHITESPACE_CLASS}]"
_NS: Final = f"[^{JS_WHITESPACE_CLASS}]"
_LINE_CHAR: Final = "[^\\n\\r\\u2028\\u2029]"
_HAS_TABLE: Final = re.compile(f"(?:^|\\n){_S}*(?:\\|{_LINE_CHAR}*\\||[|+-]{{3,}})")
_HAS_BULLET: Final = re.compile(f"(?:^|\\n){_S}*[-*+]{_S}")
_HAS_NUMBERED: Final = re.compile(f"(?:^|\\n){_S}*[0-9]+\\.{_S}")
_HAS_HEADING: Final = re.compile(f"(?:^|\\n)#+{_S}")
_HAS_BLOCKQUOTE: Final = re.compile(f"(?:^|\\n)>{_S}")
_IS_DIVIDER: Final = re.compile("[-+_=*\u2500-\u257f]+")
_SHELL_SPLIT: Final = re.compile(r"&&|\|\||[;&|\n]")
_GIT_OVERVIEW: Final = re.compile(
    f"git(?:{_S}+(?:-C{_S}+{_NS}+|--no-pager))*{_S}+(status|diff|ls-files)\\b",
    re.ASCII | re.IGNORECASE)
_SPACES: Final = re.compile(f"{_S}+")
_REV_SUFFIX: Final = re.compile("(?:HEAD|@)(?:[~^][0-9]*)+")
_REV_HASH: Final = re.compile("[0-9a-f]{7,40}", re.ASCII | re.IGNORECASE)
_REV_RANGE: Final = re.compile(f"{_NS}+\\.{{2,3}}{_NS}+")


def _is_git_revision_token(token: str) -> bool:
    return (token in ("HEAD", "@") or _REV_SUFFIX.fullmatch(token) is not None
            or _REV_HASH.fullmatch(token) is not None or _REV_RANGE.fullmatch(token) is not None)


def _is_overview_git_diff(args: str) -> bool:
    trimmed = js_trim(args)
    if not trimmed:
        return True
    tokens = _SPACES.split(trimmed)
    if "--" in tokens and tokens.index("--") < len(tokens) - 1:
        return False
    return all(t.startswith("-") or _is_git_revision_token(t) for t in tokens)


def is_git_overview_inspection_command(command: str) -> bool:
    """``isGitOverviewInspectionCommand``: every segment is ``git status``, ``git ls-files`` or
    a ``git diff`` without paths."""
    segments = [s for s in (js_trim(p) for p in _SHELL_SPLIT.split(command)) if s]
    if not segments:
        return False
    for segment in segments:
        match = _GIT_OVERVIEW.match(segment)
        if match is None:
            return False
        if match.group(1).lower() == "diff" and not _is_overview_git_diff(segment[match.end():]):
            return False
    return True


def prepare_call(name: str, args: Any, key: str | None = None) -> PreparedCall:
    """What the guards read of ``{name, args}``; ``key``, when given, is
    ``tool_call_key(name, args)``, reused when the call resolves to itself."""
    resolved, resolved_args = resolve_tool_call(name, args)
    command = resolved_args.get("command") if isinstance(resolved_args, dict) else None
    inspection = (resolved == "run_shell_command" and isinstance(command, str)
                  and is_git_overview_inspection_command(command))
    if key is None or resolved != name or resolved_args is not args:
        key = tool_call_key(resolved, resolved_args)
    return PreparedCall(resolved, key, inspection)


def _is_read_like(name: str) -> bool:
    return name in READ_LIKE_TOOL_NAMES or name.startswith(READ_LIKE_NAME_PREFIXES)


# --------------------------------------------------------------------------- the service


class LoopDetectionService:
    """One service per session, as ``LlmClient`` holds one."""

    prompt_id: str
    loop_detected: bool
    last_tool_call_key: str | None
    tool_call_repetition_count: int
    last_shell_inspection_key: str | None
    shell_inspection_streak: int
    stream_content_history: str
    content_stats: dict[str, list[int]]
    last_content_index: int
    thought_history: list[str]
    recent_tool_calls: list[str]
    same_name_streak: int
    last_seen_tool_name: str | None
    has_seen_non_read_tool: bool
    global_tool_call_counts: dict[str, int]
    recent_tool_call_keys: list[str]
    turn_tool_call_total: int
    cap_key_counts: dict[str, int]
    cap_max_key_repeat: int

    def __init__(self, constants: Constants = Constants(), *, skip: bool = True,
                 cap: int = 100, explicit: bool = False) -> None:
        self.c = constants
        self.skip = skip
        self.cap: float = math.inf if cap <= 0 else cap
        self.explicit = explicit
        self.in_code_block = False
        self.last_loop_type: str | None = None
        self.reset("")

    # ------------------------------------------------------------------ always on

    def check_always_on_safeties(self, event: Any) -> bool:
        if self.loop_detected:
            return True
        if isinstance(event, ToolCallRequest):
            event = prepare_call(event.name, event.args)
        if not isinstance(event, PreparedCall):
            return False
        key = event.key
        if event.name not in STATEFUL_READ_TOOLS:
            count = self.cap_key_counts.get(key, 0) + 1
            self.cap_key_counts[key] = count
            self.cap_max_key_repeat = max(self.cap_max_key_repeat, count)
        if (self.check_tool_call_loop(key) or self.check_shell_command_stagnation(event.inspection)
                or self.check_turn_tool_call_cap()):
            self.loop_detected = True
            return True
        return False

    def check_tool_call_loop(self, key: str) -> bool:
        if self.last_tool_call_key == key:
            self.tool_call_repetition_count += 1
        else:
            self.last_tool_call_key = key
            self.tool_call_repetition_count = 1
        # (A stateful read tool has no recorded results here, so it fires like any other.)
        if self.tool_call_repetition_count >= self.c.tool_call_loop_threshold:
            self.last_loop_type = CONSECUTIVE
            return True
        return False

    def check_shell_command_stagnation(self, inspection: bool) -> bool:
        if not inspection:
            self.last_shell_inspection_key = None
            self.shell_inspection_streak = 0
            return False
        key = "run_shell_command:git-inspection"
        if self.last_shell_inspection_key == key:
            self.shell_inspection_streak += 1
        else:
            self.last_shell_inspection_key = key
            self.shell_inspection_streak = 1
        if self.shell_inspection_streak >= self.c.stagnation_threshold:
            self.last_loop_type = SHELL_STAGNATION
            return True
        return False

    def check_turn_tool_call_cap(self) -> bool:
        self.turn_tool_call_total += 1
        if not should_halt_on_turn_tool_call_cap(self.turn_tool_call_total,
                                                 self.cap_max_key_repeat, self.cap,
                                                 self.explicit, self.c):
            return False
        self.last_loop_type = CAP
        return True

    # ------------------------------------------------------------------ heuristics

    def add_and_check_heuristic_loops(self, event: Any) -> bool:
        if self.loop_detected:
            return True
        if isinstance(event, ToolCallRequest):
            event = prepare_call(event.name, event.args)
        if isinstance(event, PreparedCall):
            self.reset_content_tracking()
            self.thought_history = []
            name, key = event.name, event.key
            self.track_tool_call(name)
            global_dup = (False if name in STATEFUL_READ_TOOLS
                          else self.check_global_duplicate(key))
            alternating = self.check_alternating_pattern(key)
            read_file = self.check_read_file_loop()
            stagnation = self.check_action_stagnation()
            self.loop_detected = global_dup or alternating or read_file or stagnation
        elif isinstance(event, Content):
            self.loop_detected = self.check_content_loop(event.text)
        elif isinstance(event, Thought):
            self.track_thought(event)
            self.loop_detected = self.check_repetitive_thoughts()
            if not self.loop_detected:
                text = " ".join(p for p in (event.subject, event.description) if p)
                if text:
                    self.loop_detected = self.append_and_analyze(to_units(text))
        return self.loop_detected

    def track_tool_call(self, name: str) -> None:
        self.recent_tool_calls.append(name)
        if len(self.recent_tool_calls) > FILE_READ_WINDOW:
            self.recent_tool_calls.pop(0)
        if not self.has_seen_non_read_tool and not _is_read_like(name):
            self.has_seen_non_read_tool = True
        if self.last_seen_tool_name == name:
            self.same_name_streak += 1
        else:
            self.last_seen_tool_name = name
            self.same_name_streak = 1

    def check_global_duplicate(self, key: str) -> bool:
        count = self.global_tool_call_counts.get(key, 0) + 1
        self.global_tool_call_counts[key] = count
        if count >= self.c.global_duplicate_threshold:
            self.last_loop_type = GLOBAL_DUPLICATE
            return True
        return False

    def check_alternating_pattern(self, key: str) -> bool:
        max_len = 2 * self.c.alternating_pattern_cycles
        keys = self.recent_tool_call_keys
        keys.append(key)
        if len(keys) > max_len:
            keys.pop(0)
        if len(keys) < max_len:
            return False
        a, b = keys[0], keys[1]
        if a == b:
            return False
        if any(keys[i] != (a if i % 2 == 0 else b) for i in range(max_len)):
            return False
        self.last_loop_type = ALTERNATING
        return True

    def check_read_file_loop(self) -> bool:
        if not self.has_seen_non_read_tool:
            return False
        if len(self.recent_tool_calls) < self.c.file_read_threshold:
            return False
        reads = sum(1 for name in self.recent_tool_calls if _is_read_like(name))
        if reads >= self.c.file_read_threshold:
            self.last_loop_type = READ_FILE
            return True
        return False

    def check_action_stagnation(self) -> bool:
        if self.same_name_streak >= self.c.stagnation_threshold:
            self.last_loop_type = STAGNATION
            return True
        return False

    def track_thought(self, thought: Thought) -> None:
        subject = js_trim(thought.subject).lower()
        description = to_units(js_trim(thought.description).lower())[:200]
        self.thought_history.append(f"{to_units(subject)}|{description}")
        if len(self.thought_history) > MAX_THOUGHT_HISTORY:
            self.thought_history.pop(0)

    def check_repetitive_thoughts(self) -> bool:
        n = self.c.thought_repeat_threshold
        if len(self.thought_history) < n:
            return False
        recent = self.thought_history[-n:]
        if all(t == recent[0] for t in recent):
            self.last_loop_type = THOUGHTS
            return True
        return False

    # ------------------------------------------------------------------ content

    def check_content_loop(self, content: str) -> bool:
        units = to_units(content)
        fences = units.count("```")
        divider = _IS_DIVIDER.fullmatch(units) is not None
        if (fences or divider or _HAS_TABLE.search(units) or _HAS_BULLET.search(units)
                or _HAS_NUMBERED.search(units) or _HAS_HEADING.search(units)
                or _HAS_BLOCKQUOTE.search(units)):
            self.reset_content_tracking()
        was_in_code_block = self.in_code_block
        if fences % 2 == 1:
            self.in_code_block = not self.in_code_block
        if was_in_code_block or self.in_code_block or divider:
            return False
        return self.append_and_analyze(units)

    def append_and_analyze(self, units: str) -> bool:
        """``appendToContentHistoryAndAnalyze`` (text already in code units)."""
        self.stream_content_history += units
        self.truncate_and_update()
        return self.analyze_content_chunks_for_loop()

    def window_start(self) -> int:
        return max(0, len(self.stream_content_history) - MAX_HISTORY_LENGTH)

    def truncate_and_update(self) -> None:
        history = self.stream_content_history
        if len(history) <= MAX_HISTORY_LENGTH + TRUNCATION_SLACK:
            return
        amount = len(history) - MAX_HISTORY_LENGTH
        self.stream_content_history = history[amount:]
        self.last_content_index = max(0, self.last_content_index - amount)
        for digest in list(self.content_stats):
            adjusted = [i - amount for i in self.content_stats[digest] if i - amount >= 0]
            if adjusted:
                self.content_stats[digest] = adjusted
            else:
                del self.content_stats[digest]

    def analyze_content_chunks_for_loop(self) -> bool:
        while self.last_content_index + CONTENT_CHUNK_SIZE <= len(self.stream_content_history):
            start = self.last_content_index
            chunk = self.stream_content_history[start:start + CONTENT_CHUNK_SIZE]
            if self.is_loop_detected_for_chunk(chunk, node_sha256(chunk)):
                self.last_loop_type = CHANTING
                return True
            self.last_content_index += 1
        return False

    def is_loop_detected_for_chunk(self, chunk: str, digest: str) -> bool:
        indices = self.content_stats.get(digest)
        if indices:
            start = self.window_start()
            if indices[0] < start:
                first_kept = 1
                while first_kept < len(indices) and indices[first_kept] < start:
                    first_kept += 1
                indices = indices[first_kept:]
                self.content_stats[digest] = indices
        if not indices:
            self.content_stats[digest] = [self.last_content_index]
            return False
        history = self.stream_content_history
        if history[indices[0]:indices[0] + CONTENT_CHUNK_SIZE] != chunk:
            return False
        indices.append(self.last_content_index)
        return self.is_clustered(indices) or self.is_periodic(indices)

    def is_clustered(self, indices: list[int]) -> bool:
        threshold = self.c.content_loop_threshold
        if len(indices) < threshold:
            return False
        recent = indices[-threshold:]
        # averageDistance = total / (threshold − 1) <= 1.5 × chunk size, in exact integers.
        return (recent[-1] - recent[0]) * 2 <= CONTENT_CHUNK_SIZE * 3 * (threshold - 1)

    def is_periodic(self, indices: list[int]) -> bool:
        if len(indices) < PERIODIC_MIN_TRUNCATED_OCCURRENCES:
            return False
        last = len(indices) - 1
        stride = indices[last] - indices[last - 1]
        first = last
        while first > 0 and indices[first] - indices[first - 1] == stride:
            first -= 1
        run = last - first + 1
        if run >= PERIODIC_OCCURRENCES_REQUIRED:
            return self.is_region_periodic(indices[first], indices[last] + CONTENT_CHUNK_SIZE,
                                           stride)
        if (run >= PERIODIC_MIN_TRUNCATED_OCCURRENCES
                and len(self.stream_content_history) >= MAX_HISTORY_LENGTH):
            return self.is_region_periodic(self.window_start(),
                                           indices[last] + CONTENT_CHUNK_SIZE, stride)
        return False

    def is_region_periodic(self, start: int, end: int, stride: int) -> bool:
        if end - start < MIN_PERIODIC_REGION_LENGTH:
            return False
        history = self.stream_content_history
        if stride >= end - start:
            return True
        return history[start:end - stride] == history[start + stride:end]

    # ------------------------------------------------------------------ resets

    def reset(self, prompt_id: str) -> None:
        """A new prompt: everything but the code-block flag starts again."""
        self.prompt_id = prompt_id
        self.last_tool_call_key = None
        self.tool_call_repetition_count = 0
        self.last_shell_inspection_key = None
        self.shell_inspection_streak = 0
        self.stream_content_history = ""
        self.content_stats = {}
        self.last_content_index = 0
        self.loop_detected = False
        self.thought_history = []
        self.recent_tool_calls = []
        self.same_name_streak = 0
        self.last_seen_tool_name = None
        self.has_seen_non_read_tool = False
        self.last_loop_type = None
        self.global_tool_call_counts = {}
        self.recent_tool_call_keys = []
        self.turn_tool_call_total = 0
        self.cap_key_counts = {}
        self.cap_max_key_repeat = 0

    def reset_content_tracking(self) -> None:
        self.stream_content_history = ""
        self.content_stats.clear()
        self.last_content_index = 0
