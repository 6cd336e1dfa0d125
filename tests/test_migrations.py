from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_models_and_migrations_agree():
    """Every model change ships with its migration."""
    out = StringIO()
    call_command("makemigrations", "nr_llm", "--check", "--dry-run", stdout=out)
