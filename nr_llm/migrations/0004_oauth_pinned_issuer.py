"""The issuer of a pre-registered client, and what a grant is bound to (issue 18).

Existing rows keep working where they can:

- a pre-registered server whose grant row names the issuer it was authorized by gets that
  issuer (its secret has only ever gone there); one without gets none, and the admin shows
  "needs configuration" until an operator enters it (nothing is sent before);
- a grant whose resource covers the server's current URL is bound to that URL; one whose
  resource does not (the URL was edited after the Connect) stays unbound, so it is set
  aside as "needs reconnect: the URL changed".
"""

import django.core.validators
from django.db import migrations, models

from nr_llm.mcp.oauth.discovery import covers


def bind_existing(apps, schema_editor):
    Record = apps.get_model("nr_llm", "OAuthGrantRecord")
    for record in Record.objects.select_related("server"):
        server = record.server
        if server.oauth_registration == "preregistered" and not server.oauth_issuer and record.issuer:
            server.oauth_issuer = record.issuer[:500]
            server.save(update_fields=["oauth_issuer"])
        if record.access_token_ciphertext and record.resource and covers(record.resource, server.url):
            record.mcp_url = server.url
            record.save(update_fields=["mcp_url"])


class Migration(migrations.Migration):
    dependencies = [
        ("nr_llm", "0003_oauth_authorization"),
    ]

    operations = [
        migrations.AddField(
            model_name="mcpserver",
            name="oauth_issuer",
            field=models.CharField(
                blank=True,
                help_text="For a pre-registered client: the issuer it is registered at, exactly as that "
                "authorization server's metadata names it. Its secret goes to no other.",
                max_length=500,
                validators=[
                    django.core.validators.URLValidator(
                        message="Enter an http:// or https:// URL.", schemes=["http", "https"]
                    )
                ],
                verbose_name="authorization server (issuer)",
            ),
        ),
        migrations.AddField(
            model_name="oauthgrantrecord",
            name="mcp_url",
            field=models.CharField(blank=True, max_length=2048),
        ),
        migrations.AddField(
            model_name="oauthgrantrecord",
            name="resource_metadata",
            field=models.CharField(blank=True, max_length=2048),
        ),
        migrations.RunPython(bind_existing, migrations.RunPython.noop),
    ]
