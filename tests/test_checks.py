"""Bad settings fail `manage.py check` with a stable id."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

ROOT = Path(__file__).resolve().parent.parent

BAD_VALUES = [
    ("NR_LLM_MCP_OPERATION_TIMEOUT", "abc", "nr_llm.E001"),
    ("NR_LLM_MCP_OPERATION_TIMEOUT", -1, "nr_llm.E001"),
    ("NR_LLM_MCP_OPERATION_TIMEOUT", 0, "nr_llm.E001"),
    ("NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS", "false", "nr_llm.E002"),
    ("NR_LLM_MCP_ERA_CACHE_SECONDS", "soon", "nr_llm.E005"),
    ("NR_LLM_MCP_ERA_CACHE_SECONDS", -1, "nr_llm.E005"),
    ("NR_LLM_MCP_KEEPALIVE_SECONDS", "forever", "nr_llm.E008"),
    ("NR_LLM_MCP_KEEPALIVE_SECONDS", -1, "nr_llm.E008"),
    ("NR_LLM_MCP_KEEPALIVE_SECONDS", float("inf"), "nr_llm.E008"),
    ("NR_LLM_CREDENTIAL_KEYS", [], "nr_llm.E003"),
    ("NR_LLM_CREDENTIAL_KEYS", "one-key-as-a-string", "nr_llm.E003"),
    ("NR_LLM_CREDENTIAL_KEYS", ["short"], "nr_llm.E003"),
    ("NR_LLM_REQUEST_EVENTS", ["include_cancelled"], "nr_llm.E004"),
    ("NR_LLM_REQUEST_EVENTS", {"include_canceled": True}, "nr_llm.E004"),
    ("NR_LLM_REQUEST_EVENTS", {"include_cancelled": "yes"}, "nr_llm.E004"),
    ("NR_LLM_TOOL_CALL_PREVIEW_CHARS", -1, "nr_llm.E020"),
    ("NR_LLM_TOOL_CALL_PREVIEW_CHARS", "500", "nr_llm.E020"),
    ("NR_LLM_APPROVAL_EXPIRY_SECONDS", 0, "nr_llm.E021"),
    ("NR_LLM_APPROVAL_EXPIRY_SECONDS", "an hour", "nr_llm.E021"),
    ("NR_LLM_APPROVAL_SECOND_APPROVER", "false", "nr_llm.E022"),
    ("NR_LLM_DATA_CLASS_CEILING", "public", "nr_llm.E023"),
    ("NR_LLM_LEDGER_RETENTION_DAYS", "ninety", "nr_llm.E024"),
    ("NR_LLM_LEDGER_RETENTION_DAYS", -1, "nr_llm.E024"),
    ("NR_LLM_LEDGER_RETENTION_DAYS", 1.5, "nr_llm.E024"),
    ("NR_LLM_LEDGER_RETENTION_DAYS", True, "nr_llm.E024"),
    ("NR_LLM_MCP_CA_BUNDLE", "/nonexistent/nr-llm/ca.pem", "nr_llm.E007"),
    ("NR_LLM_MCP_CA_BUNDLE", ["/etc/ssl/ca.pem"], "nr_llm.E007"),
    ("NR_LLM_OTEL_CAPTURE_CONTENT", "public", "nr_llm.E040"),
    ("NR_LLM_OTEL_CAPTURE_CONTENT", True, "nr_llm.E040"),
    ("NR_LLM_TOOL_RESULT_BLOCK_BYTES", 0, "nr_llm.E050"),
    ("NR_LLM_TOOL_RESULT_BLOCK_BYTES", "1MB", "nr_llm.E050"),
    ("NR_LLM_TOOL_RESULT_TOTAL_BYTES", -1, "nr_llm.E051"),
    ("NR_LLM_TOOL_RESULT_TOTAL_BYTES", True, "nr_llm.E051"),
]


@pytest.mark.parametrize(("name", "value", "check_id"), BAD_VALUES)
def test_check_command_fails_on_bad_value(name, value, check_id):
    """Each bad value makes `manage.py check` fail and names its check id."""
    with override_settings(**{name: value}), pytest.raises(SystemCheckError) as info:
        call_command("check", "--tag", "nr_llm")
    assert check_id in str(info.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NR_LLM_MCP_OPERATION_TIMEOUT", ""),
        ("NR_LLM_MCP_OPERATION_TIMEOUT", "45"),
        ("NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS", True),
        ("NR_LLM_MCP_ERA_CACHE_SECONDS", 0),
        ("NR_LLM_MCP_ERA_CACHE_SECONDS", "120"),
        ("NR_LLM_CREDENTIAL_KEYS", ["a-sufficiently-long-key"]),
        ("NR_LLM_REQUEST_EVENTS", {"include_cancelled": True}),
        ("NR_LLM_TOOL_CALL_PREVIEW_CHARS", 0),
        ("NR_LLM_LEDGER_RETENTION_DAYS", 0),
        ("NR_LLM_LEDGER_RETENTION_DAYS", "30"),
        ("NR_LLM_APPROVAL_EXPIRY_SECONDS", 900),
        ("NR_LLM_APPROVAL_SECOND_APPROVER", True),
        ("NR_LLM_DATA_CLASS_CEILING", "sourceCode"),
        ("NR_LLM_OTEL_CAPTURE_CONTENT", "editorContent"),
    ],
)
def test_check_command_passes_on_good_value(name, value):
    """Good values (and an empty budget, which means the default) pass."""
    with override_settings(**{name: value}):
        call_command("check", "--tag", "nr_llm")


def test_manage_py_check_exits_non_zero_in_a_real_process():
    """The real `manage.py check` process fails when the environment carries a bad budget."""
    env = {
        **os.environ,
        "DEBUG": "true",
        "NR_LLM_MCP_OPERATION_TIMEOUT": "soon",
        "DATABASE_URL": "sqlite://:memory:",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "nr_llm.E001" in result.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"not a certificate at all\n", "is not a readable PEM file"),
        (b"", "is not a readable PEM file"),
    ],
    ids=["garbage", "empty"],
)
def test_a_ca_bundle_that_does_not_parse_as_pem_certificates_fails_the_check(tmp_path, content, problem):
    """NR_LLM_MCP_CA_BUNDLE must parse as PEM certificates, as the transport will load it: E007."""
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(content)
    with override_settings(NR_LLM_MCP_CA_BUNDLE=str(bundle)), pytest.raises(SystemCheckError) as info:
        call_command("check", "--tag", "nr_llm")
    assert "nr_llm.E007" in str(info.value) and problem in str(info.value)


def test_a_leaf_certificate_is_not_a_ca_bundle(tmp_path, tls):
    """A server's own certificate (no CA among it) is no trust anchor: E007 says so."""
    bundle = tls.issue("mcp.test").certfile
    with override_settings(NR_LLM_MCP_CA_BUNDLE=str(bundle)), pytest.raises(SystemCheckError) as info:
        call_command("check", "--tag", "nr_llm")
    assert "nr_llm.E007" in str(info.value) and "holds no CA certificate" in str(info.value)


def test_the_test_ca_s_pem_file_passes_the_check(tls):
    """A PEM file of CA certificates (the test session's CA) passes."""
    with override_settings(NR_LLM_MCP_CA_BUNDLE=str(tls.bundle)):
        call_command("check", "--tag", "nr_llm")
