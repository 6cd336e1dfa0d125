"""WWW-Authenticate: the Bearer challenge's error, scopes and metadata URL, nothing else."""

from __future__ import annotations

import pickle

import pytest

from nr_llm.mcp.oauth import parse_challenge
from nr_llm.mcp.oauth.challenge import MAX_HEADER_CHARS
from nr_llm.mcp.wire.errors import ChallengeError


def test_a_full_bearer_challenge_is_read() -> None:
    """error, scope (split, order kept) and resource_metadata come from quoted parameters."""
    challenge = parse_challenge(
        'Bearer realm="mcp", error="insufficient_scope", scope="files:read files:write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"'
    )
    assert challenge.error == "insufficient_scope"
    assert challenge.scopes == ("files:read", "files:write")
    assert challenge.resource_metadata == "https://mcp.example.com/.well-known/oauth-protected-resource"


def test_parameters_of_another_scheme_are_not_taken() -> None:
    """A DPoP or Basic challenge before the Bearer one does not lend it its parameters."""
    challenge = parse_challenge('DPoP algs="ES256", scope="admin", Bearer scope="read", Basic realm="x"')
    assert challenge.scopes == ("read",)


def test_unquoted_values_and_escapes() -> None:
    """Token values need no quotes; a backslash escape inside quotes is undone."""
    challenge = parse_challenge('bearer error=invalid_token, error_description="a \\"b\\""')
    assert challenge.error == "invalid_token" and challenge.error_description == 'a "b"'


def test_no_scope_parameter_differs_from_an_empty_one() -> None:
    """None means the server named no scope; an empty scope is an empty tuple."""
    assert parse_challenge("Bearer").scopes is None
    assert parse_challenge('Bearer scope=""').scopes == ()


def test_a_repeated_parameter_does_not_override_the_first() -> None:
    """The first resource_metadata stands; a second one appended cannot redirect discovery."""
    challenge = parse_challenge(
        'Bearer resource_metadata="https://a.example/x", resource_metadata="https://evil/"'
    )
    assert challenge.resource_metadata == "https://a.example/x"


@pytest.mark.parametrize(
    "header",
    [None, "", "Basic realm=x", "garbage ===", '"unterminated', "Bearer " + "a" * MAX_HEADER_CHARS],
)
def test_absent_foreign_or_broken_headers_are_empty(header: str | None) -> None:
    """Anything that is not a readable Bearer challenge yields no parameters and no exception."""
    challenge = parse_challenge(header)
    assert (challenge.error, challenge.scopes, challenge.resource_metadata) == (None, None, None)


def test_a_challenge_error_survives_pickling() -> None:
    """ChallengeError keeps status, error, scopes and metadata URL across a process boundary."""
    error = ChallengeError(
        "demo",
        "refused",
        status=403,
        error="insufficient_scope",
        scopes=("a",),
        resource_metadata="https://x/",
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.kind, copy.status, copy.error, copy.scopes, copy.resource_metadata) == (
        "status",
        403,
        "insufficient_scope",
        ("a",),
        "https://x/",
    )
