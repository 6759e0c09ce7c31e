"""What people want to see of a model response that an agent runtime kept as LiteLLM
returned it: an OpenAI Chat completion (``{"id", "model", "choices", "usage"...}``).

SWE-agent (mini-swe-agent's ``extra.response``) and OpenHands (``tool_call_metadata.
model_response``) both keep such responses; their readers take ``metadata.facts`` from
them here (see ``FACTS`` in common.py) rather than from each other. What a response holds
beyond these facts stays where the reader keeps the response."""

from __future__ import annotations

from typing import Any

from .common import inner


def response_facts(response: object) -> dict[str, Any]:
    """``model``, ``usage`` and ``finish_reason`` of an OpenAI-shaped (LiteLLM) response;
    nothing for a value that is not one."""
    if not isinstance(response, dict):
        return {}
    facts: dict[str, Any] = {}
    if isinstance(response.get("model"), str):
        facts["model"] = response["model"]
    if usage := usage_facts(response.get("usage")):
        facts["usage"] = usage
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    if isinstance(first, dict) and isinstance(first.get("finish_reason"), str):
        facts["finish_reason"] = first["finish_reason"]
    return facts


def usage_facts(usage: object) -> dict[str, int]:
    """OpenAI usage counts as ``{"input", "output", "cached", "reasoning", "total"}`` (those
    that are integers)."""
    if not isinstance(usage, dict):
        return {}
    counts = {
        "input": usage.get("prompt_tokens"),
        "output": usage.get("completion_tokens"),
        "cached": inner(usage, "prompt_tokens_details").get("cached_tokens"),
        "reasoning": inner(usage, "completion_tokens_details").get("reasoning_tokens"),
        "total": usage.get("total_tokens"),
    }
    return {
        name: count
        for name, count in counts.items()
        if isinstance(count, int) and not isinstance(count, bool)
    }
