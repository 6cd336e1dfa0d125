"""The wire: every HTTP leg of the client (MCP or OAuth), and the vocabulary all three layers share.

``legs`` is the leg machine (the only module that touches ``requests``), ``watchdog`` ends a
leg at its grant, ``connections`` (urllib3's classes) dial the vetted addresses under it,
``pool`` keeps idle connections, ``hostgate`` refuses private addresses, ``headerlimit`` and
the body cap bound an answer, ``eventstream`` decodes text/event-stream, ``sealed`` keeps
credentials out of reprs; ``deadline``, ``errors``, ``text``, ``redaction`` and ``telemetry``
are the shared vocabulary.

The rule: this package imports nothing from ``nr_llm.mcp.protocol`` or ``nr_llm.mcp.oauth``
(nor Django). It knows HTTP and nothing of JSON-RPC.
"""
