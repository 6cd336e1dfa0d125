"""Database work stays bounded: bulk writes, a fixed number of queries, no writes when unchanged."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nr_llm.catalogue import import_catalogue
from nr_llm.catalogue.imports import _SYNCED_FIELDS
from nr_llm.models import McpTool

from ..factories import McpServerFactory
from ..fakes import FakeClient, tool

pytestmark = pytest.mark.django_db

TOOL_TABLE = McpTool._meta.db_table
#: Every reconcile: savepoint, lock the server row, read names held by other servers, read
#: this server's rows, update the server's import fields, release. Writes to tools come on top.
FIXED = 6
INSERT_FIELDS = [f for f in McpTool._meta.concrete_fields if not f.primary_key]
# bulk_update's own batch arithmetic: each row costs the pk twice plus the updated fields.
UPDATE_FIELDS = ["pk", "pk", *_SYNCED_FIELDS, "updated"]


def _catalogue(count, description="d"):
    return [tool(f"t{i:03d}", description=description) for i in range(count)]


def _import(server, catalogue):
    with CaptureQueriesContext(connection) as queries:
        report = import_catalogue(server, client=FakeClient(catalogue))
    assert report.ok
    return [q["sql"] for q in queries.captured_queries]


def _writes_to_tools(sql):
    return [
        s for s in sql if TOOL_TABLE in s and s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]


def _batches(rows, fields):
    # SQLite caps the parameters of one statement, so Django splits a bulk write into
    # batches; that is still a fixed number for a catalogue capped at 500 tools.
    size = connection.ops.bulk_batch_size(fields, [None] * rows) or rows
    return -(-rows // size)


def test_a_first_import_of_500_tools_writes_them_in_bulk():
    """500 new tools: the fixed queries plus bulk INSERTs (one per backend batch), no more."""
    sql = _import(McpServerFactory.create(identifier="demo"), _catalogue(500))
    inserts = [s for s in _writes_to_tools(sql) if s.lstrip().upper().startswith("INSERT")]
    assert len(inserts) == _batches(500, INSERT_FIELDS)
    assert len(sql) == FIXED + len(inserts)
    assert McpTool.objects.count() == 500


def test_an_unchanged_second_import_writes_no_tool_rows():
    """Importing the same 500 tools again reads and compares; not one tool row is written."""
    server = McpServerFactory.create(identifier="demo")
    _import(server, _catalogue(500))
    sql = _import(server, _catalogue(500))
    assert _writes_to_tools(sql) == []
    assert len(sql) == FIXED


def test_an_unchanged_import_costs_the_same_queries_for_50_and_500_tools():
    """The query count does not grow with the catalogue."""
    small, large = McpServerFactory.create(identifier="small"), McpServerFactory.create(identifier="large")
    _import(small, _catalogue(50))
    _import(large, _catalogue(500))
    assert len(_import(small, _catalogue(50))) == len(_import(large, _catalogue(500)))


def test_changing_every_tool_is_one_bulk_update_not_one_per_tool():
    """500 changed descriptions: the fixed queries plus one UPDATE per backend batch."""
    server = McpServerFactory.create(identifier="demo")
    _import(server, _catalogue(500))
    sql = _import(server, _catalogue(500, description="changed"))
    updates = _writes_to_tools(sql)
    assert len(updates) == _batches(500, UPDATE_FIELDS)
    assert len(sql) == FIXED + len(updates)
    assert set(McpTool.objects.values_list("description", flat=True)) == {"changed"}


def test_orphaning_the_whole_catalogue_is_bounded_too():
    """500 tools vanishing: one UPDATE per backend batch, not 500 statements."""
    server = McpServerFactory.create(identifier="demo")
    _import(server, _catalogue(500))
    sql = _import(server, [])
    updates = _writes_to_tools(sql)
    assert len(updates) == _batches(500, UPDATE_FIELDS)
    # No advertised names, so no read of names held by other servers.
    assert len(sql) == FIXED - 1 + len(updates)
    assert McpTool.objects.filter(orphaned=True).count() == 500
