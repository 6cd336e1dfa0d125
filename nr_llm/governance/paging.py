"""A paginator that never counts the whole ledger.

Django's admin counts every matching row to number its pages: at a million rows that count
is most of a page's time, and it grows with the table. Here the count stops at ``CAP`` + 1
(a ``LIMIT`` inside the ``COUNT``, so an index scan of at most that many entries): a list of
more than ``CAP`` calls says "more than 10,000" and offers the first ``CAP`` / ``per_page``
pages, which is as deep as anyone pages; filters and the search narrow the rest.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.utils.functional import cached_property

#: Rows counted at most; past it a list is "more than CAP".
CAP = 10_000


class CappedPaginator(Paginator):  # type: ignore[type-arg]
    cap = CAP  # for the templates (admin/nr_llm/pagination.html)

    @cached_property
    def count(self) -> int:
        """The number of rows, or ``CAP + 1`` for "more than ``CAP``"."""
        rows: Any = self.object_list  # the admin's queryset
        return min(int(rows.order_by()[: CAP + 1].count()), CAP + 1)
