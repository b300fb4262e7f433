"""Dates a query names, for recall's date boost: no model, a few unambiguous English forms.

Recognised, case-insensitively: ``2023-05-08``; ``8 May 2023``, ``8th of May, 2023``;
``May 8, 2023``, ``May 8th 2023``; ``May 2023``; a year ``2023`` (1900-2099); and a month
without a year, written in full after a preposition ("in June", "during August", "of March",
"mid-July"), which matches the
messages written in that month of any year (:class:`MonthSpan`): the messages' own dates
resolve it. A relative date ("last week") is not a date here: it would need a reference time.

Example::

    >>> query_dates("What did I say on 8 May, 2023?")
    [DateSpan(start=datetime.date(2023, 5, 8), end=datetime.date(2023, 5, 9))]
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime
from typing import NamedTuple

_MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_FULL_MONTH = r"(" + "|".join(name for name in _MONTHS if len(name) > 3 or name == "may") + r")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"


class DateSpan(NamedTuple):
    """Days from ``start`` (included) to ``end`` (excluded)."""

    start: date
    end: date

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment.date() < self.end


class MonthSpan(NamedTuple):
    """A month of any year (1-12)."""

    month: int

    def contains(self, moment: datetime) -> bool:
        return moment.month == self.month


Span = DateSpan | MonthSpan


def _day(year: str, month: int, day: str) -> DateSpan:
    start = date(int(year), month, int(day))
    return DateSpan(start, date.fromordinal(start.toordinal() + 1))


def _month(year: str, month: int) -> DateSpan:
    y = int(year)
    return DateSpan(date(y, month, 1), date(y + month // 12, month % 12 + 1, 1))


_FORMS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], Span]]] = [
    (re.compile(rf"\b{_YEAR}-(\d{{1,2}})-(\d{{1,2}})\b"), lambda m: _day(m[1], int(m[2]), m[3])),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s*{_YEAR}\b", re.I),
     lambda m: _day(m[3], _MONTHS[m[2].lower()], m[1])),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s*{_YEAR}\b", re.I),
     lambda m: _day(m[3], _MONTHS[m[1].lower()], m[2])),
    (re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I), lambda m: _month(m[2], _MONTHS[m[1].lower()])),
    (re.compile(rf"\b{_YEAR}\b"), lambda m: DateSpan(date(int(m[1]), 1, 1), date(int(m[1]) + 1, 1, 1))),
    (re.compile(rf"\b(?:(?:in|during|of|early|late)\s+|mid-?\s*){_FULL_MONTH}(?![\w-])", re.I),
     lambda m: MonthSpan(_MONTHS[m[1].lower()])),
]


def query_dates(query: str) -> list[Span]:
    """The day, month, year or month-of-any-year spans the query names, most specific form
    first; a piece of text belongs to one date at most, and an impossible date ("31 February
    2023") is ignored."""
    spans: list[Span] = []
    taken: list[tuple[int, int]] = []
    for pattern, build in _FORMS:
        for match in pattern.finditer(query):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            try:
                span = build(match)
            except ValueError:
                continue
            spans.append(span)
            taken.append((match.start(), match.end()))
    return spans
