"""The one scope resolver (MEM-6, MEM-13), on the spec's examples and the decided cases (A18)."""

from __future__ import annotations

import pytest

from buffers.healing.scopes import ExecutionContext, real_identity, resolve
from tests.conftest import spec_examples


@pytest.mark.rule("MEM-6")
@pytest.mark.parametrize(("n", "verdict"), [(1, "refused"), (2, "refused"), (3, "resolved")])
def test_the_spec_examples_of_a_user_scope_resolve_or_refuse_as_given(n: int, verdict: str) -> None:
    example = spec_examples("MEM-6")[n]
    assert example["verdict"] == verdict

    resolution = resolve("user", ExecutionContext(user_id=example["buffer"]["user_id"]))

    assert resolution.refused is (verdict == "refused")
    assert resolution.scope_id == ("7" if verdict == "resolved" else "")


UNUSABLE = [
    None, "", "   ", 0, "0", "00", -3, "-3", "seven", "7a", 7.0, True, False, "\u0667", [7],
    2**63, str(2**63), "9" * 5000,  # no database row has such an id
]  # fmt: skip


@pytest.mark.rule("MEM-6")
@pytest.mark.parametrize("identity", UNUSABLE, ids=repr)
def test_a_user_scope_refuses_every_identity_that_is_not_real(identity: object) -> None:
    resolution = resolve("user", ExecutionContext(user_id=identity))

    assert resolution.refused
    assert resolution.scope_id == ""
    assert "carries no real user" in resolution.reason


@pytest.mark.rule("MEM-13")
@pytest.mark.parametrize("identity", UNUSABLE, ids=repr)
def test_a_session_scope_refuses_every_identity_that_is_not_real(identity: object) -> None:
    resolution = resolve("session", ExecutionContext(session_id=identity))

    assert resolution.refused
    assert resolution.scope_id == ""
    assert "carries no real session" in resolution.reason


@pytest.mark.rule("MEM-6")
@pytest.mark.rule("MEM-13")
@pytest.mark.parametrize("scope", ["user", "session"])
def test_an_identity_scope_refuses_without_any_context(scope: str) -> None:
    resolution = resolve(scope, None)

    assert (resolution.refused, resolution.scope_id) == (True, "")
    assert resolution.reason == "there is no execution context"


@pytest.mark.rule("MEM-6")
@pytest.mark.parametrize("context", [None, ExecutionContext(), ExecutionContext(user_id=0)])
def test_the_global_scope_resolves_to_the_shared_bucket_whatever_the_context(
    context: ExecutionContext | None,
) -> None:
    resolution = resolve("global", context)

    assert (resolution.refused, resolution.scope_id) == (False, "")


@pytest.mark.rule("MEM-6")
@pytest.mark.rule("MEM-13")
def test_a_real_identity_resolves_to_its_id_as_text() -> None:
    assert resolve("user", ExecutionContext(user_id=7)).scope_id == "7"
    assert resolve("user", ExecutionContext(user_id=" 7 ")).scope_id == "7"
    assert resolve("session", ExecutionContext(session_id="12")).scope_id == "12"
    assert real_identity("007") == "7"
