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
        ("NR_LLM_APPROVAL_EXPIRY_SECONDS", 900),
        ("NR_LLM_APPROVAL_SECOND_APPROVER", True),
        ("NR_LLM_DATA_CLASS_CEILING", "sourceCode"),
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
