"""No secret in a URL's query reaches a log line or a repr (issue 25, item 8)."""

from __future__ import annotations

import logging
import sys

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.wire.redaction import masked_url
from tests.peers import running

SECRET = "key-0a1b2c3d4e5f"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
        (f"https://mcp.example.com/mcp?api_key={SECRET}", "https://mcp.example.com/mcp?api_key=[masked]"),
        (f"/mcp?tenant=a&token={SECRET}&flag", "/mcp?tenant=[masked]&token=[masked]&[masked]"),
        (f"https://user:{SECRET}@mcp.example.com/mcp", "https://[masked]@mcp.example.com/mcp"),
        (f"https://mcp.example.com/mcp?{SECRET}#{SECRET}", "https://mcp.example.com/mcp?[masked]#[masked]"),
    ],
)
def test_masked_url_keeps_the_names_and_masks_every_value(url: str, shown: str) -> None:
    """Query values and user-info are masked; scheme, host, path and parameter names stay."""
    assert masked_url(url) == shown


def test_an_endpoints_repr_shows_no_query_value_and_no_secret() -> None:
    """repr(Endpoint) (a traceback's locals, a log line) shows the URL with its query masked."""
    endpoint = Endpoint(
        identifier="demo",
        url=f"https://mcp.example.com/mcp?api_key={SECRET}",
        credential=SECRET + "-credential",
        auth_placement="bearer",
    )
    shown = repr(endpoint)
    assert SECRET not in shown
    assert "url='https://mcp.example.com/mcp?api_key=[masked]'" in shown and "'demo'" in shown


@pytest.mark.e2e
def test_urllib3s_debug_line_of_a_leg_shows_no_query_value(caplog: pytest.LogCaptureFixture) -> None:
    """urllib3 logs each request's target at DEBUG; a leg's line has its query values masked
    (against a real server on 127.0.0.1), and still says what was sent and answered."""
    caplog.set_level(logging.DEBUG, logger="urllib3")
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        url = f"http://127.0.0.1:{port}/fine/0/mcp?api_key={SECRET}&tenant=a"
        report = McpClient(connection=ConnectionSettings(allow_private_networks=True)).ping(
            Endpoint(identifier="query", url=url)
        )
    assert report.reachable, report
    lines = [record.getMessage() for record in caplog.records if record.name.startswith("urllib3")]
    assert any(
        '"POST /fine/0/mcp?api_key=[masked]&tenant=[masked] HTTP/1.1" 200' in line for line in lines
    ), lines
    assert not [line for line in lines if SECRET in line]


def test_secrets_mask_every_string_of_an_answer_longest_first() -> None:
    """Every string of a decoded answer, keys included, at any depth; a secret that contains
    another is masked whole; numbers and the rest stay as they were; a one-letter
    "credential" masks nothing."""
    from nr_llm.mcp.wire.redaction import MASK, Secrets

    secrets = Secrets()
    secrets.add("tok-access")  # a prefix of the longer one
    secrets.add("tok-access-123456")
    secrets.add("t")  # too short to be a secret: not looked for
    secrets.add(None)
    answer = {
        "result": {"content": [{"type": "text", "text": "sent tok-access-123456"}], "tok-access-123456": 1}
    }
    masked = secrets.mask_json(answer)
    assert masked == {"result": {"content": [{"type": "text", "text": f"sent {MASK}"}], MASK: 1}}
    assert "123456" not in repr(secrets)
    assert Secrets().mask_json(answer) is answer


def test_a_clipped_secret_is_masked_wherever_the_clipping_is() -> None:
    """A message clipped mid-secret and followed by more text ("… (code 1)"), as an error's
    detail is: the secret's start before the "…" is masked too."""
    from nr_llm.mcp.wire.redaction import MASK, redact

    secret = "tok-access-123456"
    assert redact(f"invalid {secret[:9]}… (code -32001)", secret) == f"invalid {MASK}… (code -32001)"
    assert redact("a … b", secret) == "a … b"
