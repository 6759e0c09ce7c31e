"""The pure core of FlowDrop Web: the GR-MEM buffer rules, with no Django import.

Every entry point (views, admin, API, commands) reaches these through
``buffers.services``; nothing else re-implements a rule.
"""

from __future__ import annotations

from .analysis import FINDING_LABELS, Analysis, Finding, UnansweredCall, analyze
from .errors import InvalidInput, Problem, parse_each
from .facts import (
    BufferFacts,
    BufferIndex,
    OpenCall,
    ResultSlot,
    facts_from_messages,
    ids_in_batch,
    index_buffer,
)
from .ids import (
    call_id,
    declared_call_ids,
    declared_calls,
    is_placeholder,
    result_call_id,
    usable_id,
)
from .messages import (
    INTERRUPTED_TEXT,
    ROLES,
    FlatMessage,
    Message,
    Role,
    StorableText,
    appendable_problems,
    describe,
    json_problem,
    parse_message,
    parse_messages,
    placeholder_for,
    problem_from,
)
from .planner import (
    DROP_REASONS,
    AppendPlan,
    AppendReport,
    Declaration,
    Dropped,
    Healed,
    Insert,
    Outcome,
    Replaced,
    Replacement,
    apply_plan,
    plan_append,
)

__all__ = [
    "DROP_REASONS",
    "FINDING_LABELS",
    "INTERRUPTED_TEXT",
    "ROLES",
    "Analysis",
    "AppendPlan",
    "AppendReport",
    "BufferFacts",
    "BufferIndex",
    "Declaration",
    "Dropped",
    "Finding",
    "FlatMessage",
    "Healed",
    "Insert",
    "InvalidInput",
    "Message",
    "OpenCall",
    "Outcome",
    "Problem",
    "Replaced",
    "Replacement",
    "ResultSlot",
    "Role",
    "StorableText",
    "UnansweredCall",
    "analyze",
    "appendable_problems",
    "apply_plan",
    "call_id",
    "declared_call_ids",
    "declared_calls",
    "describe",
    "facts_from_messages",
    "ids_in_batch",
    "index_buffer",
    "is_placeholder",
    "json_problem",
    "parse_each",
    "parse_message",
    "parse_messages",
    "placeholder_for",
    "plan_append",
    "problem_from",
    "result_call_id",
    "usable_id",
]
