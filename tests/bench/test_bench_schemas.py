"""The benchmarks' throwaway PostgreSQL schemas (:mod:`memvault.bench.schemas`)."""

from __future__ import annotations

from memvault.bench import schemas


def test_schema_is_replaced_not_added() -> None:
    url = schemas.with_schema("postgresql://u@h:5432/db?schema=old&connect_timeout=3", "new")
    assert url == "postgresql://u@h:5432/db?connect_timeout=3&schema=new"


def test_names_are_fresh_and_only_postgres_urls_are_postgres() -> None:
    names = {schemas.fresh_name("bench_x") for _ in range(100)}
    assert len(names) == 100 and all(n.startswith("bench_x_") and n.isidentifier() for n in names)
    assert schemas.is_postgres("postgresql://u@h/db") and schemas.is_postgres("postgres://h/db")
    assert not any(schemas.is_postgres(s) for s in ("sqlite", "memory", "sqlite:///x.db", "mysql://h/db"))
