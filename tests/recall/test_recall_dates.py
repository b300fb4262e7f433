"""Dates a query names."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memvault.recall.dates import DateSpan, MonthSpan, query_dates


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did I say on 8 May, 2023?", [DateSpan(date(2023, 5, 8), date(2023, 5, 9))]),
        ("on the 8th of May 2023", [DateSpan(date(2023, 5, 8), date(2023, 5, 9))]),
        ("on December 1,2023 taken", [DateSpan(date(2023, 12, 1), date(2023, 12, 2))]),
        ("Sept. 3rd, 2022", [DateSpan(date(2022, 9, 3), date(2022, 9, 4))]),
        ("2023-05-07", [DateSpan(date(2023, 5, 7), date(2023, 5, 8))]),
        ("in August 2023?", [DateSpan(date(2023, 8, 1), date(2023, 9, 1))]),
        ("in December 2023", [DateSpan(date(2023, 12, 1), date(2024, 1, 1))]),
        ("recently in 2024", [DateSpan(date(2024, 1, 1), date(2025, 1, 1))]),
        ("from 2022 to 2023", [DateSpan(date(2022, 1, 1), date(2023, 1, 1)),
                               DateSpan(date(2023, 1, 1), date(2024, 1, 1))]),
    ],
)
def test_recognised_forms(query: str, expected: list[DateSpan]) -> None:
    assert query_dates(query) == expected


@pytest.mark.parametrize("query", ["December", "last week", "May I ask?", "in Mayfair", "in dec",
                                   "room 1234", "", "12:30"])
def test_no_date(query: str) -> None:
    assert query_dates(query) == []


def test_an_impossible_day_leaves_the_month() -> None:
    assert query_dates("31 February 2023") == [DateSpan(date(2023, 2, 1), date(2023, 3, 1))]


def test_an_impossible_iso_date_leaves_the_year() -> None:
    assert query_dates("2023-13-45") == [DateSpan(date(2023, 1, 1), date(2024, 1, 1))]


def test_span_contains() -> None:
    span = DateSpan(date(2023, 5, 8), date(2023, 5, 9))
    assert span.contains(datetime(2023, 5, 8, 23, 59, tzinfo=UTC))
    assert not span.contains(datetime(2023, 5, 9, 0, 0, tzinfo=UTC))


@pytest.mark.parametrize(
    ("query", "month"),
    [("When did Melanie go camping in June?", 6), ("during August", 8), ("the second week of November", 11),
     ("in mid-July", 7), ("In May, we moved", 5), ("early September", 9)],
)
def test_a_month_without_a_year_is_that_month_of_any_year(query: str, month: int) -> None:
    assert query_dates(query) == [MonthSpan(month)]
    span = MonthSpan(month)
    assert span.contains(datetime(2019, month, 28, tzinfo=UTC))
    assert span.contains(datetime(2023, month, 1, tzinfo=UTC))
    assert not span.contains(datetime(2023, month % 12 + 1, 1, tzinfo=UTC))


def test_a_month_with_a_year_is_not_also_any_year() -> None:
    assert query_dates("in June 2023") == [DateSpan(date(2023, 6, 1), date(2023, 7, 1))]
