"""A paginator that counts only a window of rows, because counting a million-row ledger was
most of an admin page's time; a longer list says "more than N"."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.views.main import PAGE_VAR
from django.core.paginator import Paginator
from django.http import HttpRequest
from django.utils.functional import cached_property

#: Pages counted beyond the one shown (and linked from it).
PAGES_AHEAD = 10
#: Filters narrow a list; an OFFSET in the millions would read millions of entries.
MAX_PAGES = 200


class WindowPaginator(Paginator):  # type: ignore[type-arg]
    def __init__(self, object_list: Any, per_page: int, *, page_number: int = 1, **kwargs: Any) -> None:
        super().__init__(object_list, per_page, **kwargs)
        self.page_number = min(max(page_number, 1), MAX_PAGES + 1)

    @cached_property
    def count(self) -> int:
        """Rows up to the end of the counted window; ``capped`` says whether more follow."""
        if self.page_number > MAX_PAGES:
            return MAX_PAGES * int(self.per_page)  # past the deepest page: the admin's "?e=1"
        start = (self.page_number - 1) * int(self.per_page)
        ahead = int(self.per_page) * (PAGES_AHEAD + 1)
        rows: Any = self.object_list  # the admin's queryset
        return start + int(rows.order_by()[start : start + ahead + 1].count())

    @property
    def capped(self) -> bool:
        start = (self.page_number - 1) * int(self.per_page)
        return self.count > start + int(self.per_page) * (PAGES_AHEAD + 1)

    @property
    def counted(self) -> int:
        return self.count - 1 if self.capped else self.count


def paginator_for(request: HttpRequest, queryset: Any, per_page: int, **kwargs: Any) -> WindowPaginator:
    try:
        page = int(request.GET.get(PAGE_VAR, 1))
    except ValueError:
        page = 1
    return WindowPaginator(queryset, per_page, page_number=page, **kwargs)
