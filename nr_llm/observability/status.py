"""The non-standard status nginx made the convention for "the client went away"."""

CLIENT_CLOSED_REQUEST = 499
CLIENT_CLOSED_REASON = "Client Closed Request"
