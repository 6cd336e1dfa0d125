"""Governance of tool calls: the ledger, approvals and the data-class ceiling.

Sites call it through ``nr_llm.tools`` (``execute``, ``resume``, ``approve``, ``deny``).
"""
