"""Governance of tool calls on the Django side: the ledger, approvals, the data-class ceiling.

- ``models``: ``ToolCall``, one row per ``execute()``, committed durably in a transaction of its own;
- ``ledger``: those writes, the arguments' canonical JSON and digest, encryption at rest;
- ``decisions``: approve, deny, expiry, and the claim that lets an approved call run once;
- ``ceiling``: the order of the six data classes and what a ceiling lets through;
- ``retention``: deleting finished rows past ``NR_LLM_LEDGER_RETENTION_DAYS``, in batches;
- ``reaper``: calls left running by a dead worker marked failed, "may have run";
- ``dbclock``: the database's clock, which the reaper and retention judge age by;
- ``admin``: the Tool calls and Approvals pages, with ``filters`` (indexed, fixed choices),
  ``paging`` (a count that never reads the whole ledger) and ``summary`` (per server).

The API a site calls is ``nr_llm.tools`` (``execute``, ``resume``, ``approve``, ``deny``).
"""
