"""The Django side of MCP authorization (OAuth 2.1).

``models`` keeps grants and pending authorizations (every secret encrypted with the
credential keys), ``store`` implements the protocol client's ``GrantStore`` over them
with a row lock shared by every worker, ``service`` does the network I/O an operator's
Connect and Disconnect need, ``views`` are the admin's Connect, callback and Disconnect
pages, and ``columns`` says in words what state a server's authorization is in.
"""
