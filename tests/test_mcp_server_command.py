"""``manage.py mcp_server``: servers as code, without contacting a server (imports are in
tests/test_mcp_server_command_sdk.py).

Idempotent runs, only the named fields set, the admin form's validation, credentials only from
environment variable names, --dry-run writing nothing, JSON and TOML files, exit codes 0/2.
"""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from nr_llm.models import McpServer
from nr_llm.servers import credentials
from tests.manage_process import manage_in
from tests.peers import ROOT

from .factories import McpServerFactory

pytestmark = pytest.mark.django_db
SECRET = "sk-live-0123456789abcdef-not-for-output"


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("mcp_server", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def fields(identifier):
    return McpServer.objects.filter(identifier=identifier).values().get()


def test_a_new_server_from_flags_is_created_disabled_and_requiring_approval(monkeypatch):
    """The flags set their fields; what they leave out keeps the model's defaults: disabled,
    approval required, no authentication. The output names the fields set and both defaults."""
    monkeypatch.setenv("MCP_ORDERS_TOKEN", "present")
    out, _, error = run(
        "orders",
        "--url",
        "https://orders.example/mcp",
        "--data-class",
        "editorContent",
        "--auth",
        "bearer",
        "--credential-env",
        "MCP_ORDERS_TOKEN",
    )
    assert error is None
    row = fields("orders")
    assert (row["name"], row["url"], row["data_class"]) == (
        "orders",
        "https://orders.example/mcp",
        "editorContent",
    )
    assert (row["enabled"], row["requires_approval"], row["operation_timeout"]) == (False, True, None)
    assert (row["auth_placement"], row["credential_env"], row["credential_ciphertext"]) == (
        "bearer",
        "MCP_ORDERS_TOKEN",
        "",
    )
    lines = out.splitlines()
    assert lines[0] == "orders: created: name, url, data_class, auth_placement, credential_env"
    assert any("waits for someone's approval (a new server's default" in line for line in lines)
    assert any(line.startswith("  not in use yet: it is disabled") for line in lines)
    # The command's notes name its own flags, not the admin's fieldsets and pages.
    assert "--enabled puts it in use" in out and "--no-requires-approval" in out
    assert not any(word in out for word in ("Policy", "admin", "page", "operator"))


def test_a_second_run_changes_nothing_and_says_unchanged():
    """Idempotent: the same command again writes no row (its updated stamp stays) and prints unchanged."""
    args = ("docs", "--url", "https://docs.example/mcp", "--data-class", "publicContent", "--enabled")
    assert run(*args)[2] is None
    before = fields("docs")
    out, _, error = run(*args)
    assert (out.splitlines()[0], error) == ("docs: unchanged", None)
    assert fields("docs") == before


def test_an_update_sets_only_the_named_fields_and_keeps_the_rest():
    """A server an operator configured in the admin: the command changes the URL alone; the
    operator's data class, approval choice, budget and the observed columns stay."""
    server = McpServerFactory.create(
        identifier="wiki", data_class="sourceCode", requires_approval=False, operation_timeout=45
    )
    McpServer.objects.filter(pk=server.pk).update(import_error="kept", tool_count=7)
    out, _, error = run("wiki", "--url", "https://wiki.example/v2/mcp")
    assert (out, error) == ("wiki: updated: url\n", None)
    row = fields("wiki")
    assert row["url"] == "https://wiki.example/v2/mcp"
    assert (row["data_class"], row["requires_approval"], row["operation_timeout"]) == (
        "sourceCode",
        False,
        45,
    )
    assert (row["import_error"], row["tool_count"], row["enabled"]) == ("kept", 7, True)


def test_operation_timeout_default_clears_the_servers_own_budget():
    """--operation-timeout default goes back to NR_LLM_MCP_OPERATION_TIMEOUT (the column empty)."""
    McpServerFactory.create(identifier="slow", operation_timeout=90)
    assert run("slow", "--operation-timeout", "default")[2] is None
    assert fields("slow")["operation_timeout"] is None


@pytest.mark.parametrize(
    "flag", ["--credential", "--token", "--oauth-client-secret", "--oauth-private-key"], ids=str
)
def test_a_literal_credential_on_the_command_line_is_refused_and_never_repeated(flag):
    """Exit 2, a message naming the environment-variable flags instead; the secret is in no output
    and nothing was written."""
    out, err, error = run("orders", "--url", "https://orders.example/mcp", flag, SECRET)
    assert error is not None and error.returncode == 2
    assert f"{flag} is refused: a credential on the command line stays in shell history" in str(error)
    assert "--credential-env NAME" in str(error)
    assert SECRET not in str(error) + out + err
    assert not McpServer.objects.exists()


def test_a_secret_given_where_a_variable_name_belongs_is_refused_without_repeating_it():
    """--credential-env takes a name: a token pasted there (it has dashes) is exit 2 and not echoed."""
    out, err, error = run("orders", "--credential-env", SECRET)
    assert error is not None and error.returncode == 2
    assert "credential_env takes the NAME of an environment variable" in str(error)
    assert SECRET not in str(error) + out + err
    assert not McpServer.objects.exists()


def test_a_value_the_admin_refuses_is_refused_with_the_admins_words_and_nothing_written():
    """The admin form validates: a non-http URL and a named header without its name, exit 2."""
    _, _, error = run("orders", "--url", "ftp://orders.example/")
    assert error is not None and error.returncode == 2
    assert str(error) == "server 'orders': url: Enter an http:// or https:// URL; nothing was written"
    _, _, error = run("orders", "--auth", "header")
    assert error is not None and "auth_header_name: Name the header that carries the credential" in str(error)
    assert not McpServer.objects.exists()


def test_dry_run_says_what_would_change_and_writes_nothing():
    """--dry-run: 'would create' / 'would update' with the fields, the database untouched."""
    out, _, error = run("new", "--url", "https://new.example/mcp", "--dry-run")
    assert (out.splitlines()[0], error) == ("new: would create: name, url", None)
    assert not McpServer.objects.exists()
    McpServerFactory.create(identifier="old", enabled=False)
    before = fields("old")
    out, _, _ = run("old", "--enabled", "--dry-run", "--import", "--enable-tool", "echo")
    assert out.splitlines()[:3] == [
        "old: would update: enabled",
        "  note: would import its catalogue",
        "  note: would enable echo (if its catalogue has them)",
    ]
    assert fields("old") == before


def test_an_oauth_client_secret_is_read_from_its_variable_and_stored_encrypted(monkeypatch):
    """--oauth-client-secret-env: the value is read now and stored encrypted; the same value again
    is 'unchanged', a new one an update; an unset variable is exit 2 and writes nothing."""
    monkeypatch.setenv("ORDERS_CLIENT_SECRET", SECRET)
    args = (
        "orders",
        "--url",
        "https://orders.example/mcp",
        "--auth",
        "oauth",
        "--oauth-registration",
        "preregistered",
        "--oauth-issuer",
        "https://auth.example",
        "--oauth-client-id",
        "nr-llm",
        "--oauth-client-secret-env",
        "ORDERS_CLIENT_SECRET",
    )
    out, _, error = run(*args)
    assert error is None and "oauth_client_secret" in out.splitlines()[0]
    stored = fields("orders")["oauth_client_secret_ciphertext"]
    assert SECRET not in stored and credentials.decrypt(stored) == SECRET
    assert run(*args)[0].splitlines()[0] == "orders: unchanged"
    monkeypatch.setenv("ORDERS_CLIENT_SECRET", "rotated-secret")
    assert run(*args)[0].splitlines()[0] == "orders: updated: oauth_client_secret"
    assert credentials.decrypt(fields("orders")["oauth_client_secret_ciphertext"]) == "rotated-secret"
    monkeypatch.delenv("ORDERS_CLIENT_SECRET")
    _, _, error = run(*args)
    assert error is not None and error.returncode == 2
    assert "the environment variable ORDERS_CLIENT_SECRET is not set here" in str(error)


def test_a_toml_file_configures_several_servers_in_one_transaction(tmp_path):
    """[[servers]] in TOML: both created; a second file with one bad server writes neither change."""
    good = tmp_path / "servers.toml"
    good.write_text(
        '[[servers]]\nidentifier = "docs"\nurl = "https://docs.example/mcp"\ndata_class = "publicContent"\n'
        "enabled = true\nrequires_approval = false\noperation_timeout = 30\n\n"
        '[[servers]]\nidentifier = "wiki"\nname = "Team wiki"\nurl = "https://wiki.example/mcp"\n'
    )
    out, _, error = run("--file", str(good))
    assert error is None
    assert (
        out.splitlines()[0]
        == "docs: created: name, url, enabled, data_class, requires_approval, operation_timeout"
    )
    assert (fields("docs")["enabled"], fields("wiki")["name"]) == (True, "Team wiki")
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[servers]]\nidentifier = "docs"\nurl = "https://docs.example/v2"\n\n'
        '[[servers]]\nidentifier = "wiki"\nurl = "not a url"\n'
    )
    _, _, error = run("--file", str(bad))
    assert error is not None and error.returncode == 2
    assert "server 'wiki': url:" in str(error)
    assert fields("docs")["url"] == "https://docs.example/mcp"


def test_a_json_file_with_one_server_and_its_key_checks(tmp_path):
    """A JSON object is one server; an unknown key, a literal credential key and a wrongly typed
    value are each exit 2 with what to fix."""
    path = tmp_path / "orders.json"
    path.write_text(
        json.dumps({"identifier": "orders", "url": "https://orders.example/mcp", "enabled": True})
    )
    assert run("--file", str(path))[2] is None
    assert fields("orders")["enabled"] is True
    for entry, message in [
        ({"identifier": "x", "colour": "red"}, "unknown key(s) colour"),
        ({"identifier": "x", "credential": SECRET}, "credential would be a credential written out"),
        ({"identifier": "x", "enabled": "yes"}, "enabled must be true or false"),
        ({"url": "https://x.example"}, "each server needs its identifier"),
    ]:
        path.write_text(json.dumps(entry))
        out, err, error = run("--file", str(path))
        assert error is not None and error.returncode == 2, entry
        assert message in str(error)
        assert SECRET not in str(error) + out + err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a server's identifier (with flags), or --file"),
        (("x", "--file", "servers.toml"), "give either --file or an identifier with flags"),
        (("x", "--operation-timeout", "soon"), "--operation-timeout takes whole seconds"),
        (("--file", "servers.yaml"), "cannot read servers.yaml"),
    ],
)
def test_usage_errors_exit_2_and_say_what_to_do(args, message):
    """Nothing is written and the message names the fix."""
    _, _, error = run(*args)
    assert error is not None and error.returncode == 2
    assert message in str(error)


def test_the_real_process_refuses_a_literal_credential_with_exit_2(tmp_path: Path):
    """Through manage.py: exit 2 and one line on stderr without the secret; a valid run exits 0."""
    manage = manage_in(tmp_path)
    refused = manage("mcp_server", "orders", "--credential", SECRET)
    assert refused.returncode == 2
    assert refused.stderr.startswith("CommandError: --credential is refused")
    assert SECRET not in refused.stdout + refused.stderr
    created = manage("mcp_server", "orders", "--url", "https://orders.example/mcp")
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("orders: created: name, url")


def test_the_operator_guides_toml_example_is_accepted_as_written(tmp_path, monkeypatch):
    """docs/operator-guide.md's file, saved as is, is valid: a dry run would create 'orders' with
    every field it names, import it and enable lookup_order, and writes nothing."""
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    example = guide.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "mcp-servers.toml"
    path.write_text(example)
    monkeypatch.setenv("MCP_ORDERS_TOKEN", "present")
    out, _, error = run("--file", str(path), "--dry-run")
    assert error is None
    assert out.splitlines()[:3] == [
        "orders: would create: name, url, enabled, data_class, requires_approval, operation_timeout, "
        "auth_placement, credential_env",
        "  note: would import its catalogue",
        "  note: would enable lookup_order (if its catalogue has them)",
    ]
    assert not McpServer.objects.exists()


def test_a_private_key_from_its_variable_is_checked_like_the_admin_checks_it(monkeypatch):
    """--oauth-private-key-env: a PEM key is stored encrypted for client credentials; text that is
    no key is exit 2 under the configuration's own key name, and is not repeated."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )
    args = (
        "machine", "--url", "https://machine.example/mcp", "--auth", "oauth", "--oauth-grant",
        "client_credentials", "--oauth-registration", "preregistered", "--oauth-issuer",
        "https://auth.example", "--oauth-client-id", "nr-llm", "--oauth-private-key-env", "MACHINE_KEY",
    )  # fmt: skip
    monkeypatch.setenv("MACHINE_KEY", SECRET)
    out, err, error = run(*args)
    assert error is not None and error.returncode == 2
    assert "oauth_private_key_env: This is not an unencrypted PEM private key" in str(error)
    assert SECRET not in str(error) + out + err
    assert not McpServer.objects.exists()
    monkeypatch.setenv("MACHINE_KEY", pem)
    out, _, error = run(*args)
    assert error is None, error
    assert out.splitlines()[0].endswith(", oauth_private_key")
    assert credentials.decrypt(fields("machine")["oauth_private_key_ciphertext"]) == pem.strip()


@pytest.mark.parametrize(
    "url", ["npx -y @modelcontextprotocol/server-everything", "stdio://server", "uvx mcp-x"]
)
def test_a_stdio_servers_command_as_url_names_the_bridge(url):
    """A newcomer pastes the command a stdio server runs with: the error says what to do."""
    _, _, error = run("local", "--url", url, "--data-class", "publicContent")
    assert error is not None and "Streamable HTTP through a bridge" in str(error)
    assert not McpServer.objects.filter(identifier="local").exists()
