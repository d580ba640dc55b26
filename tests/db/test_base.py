"""What both drivers share, in memory: a URL shown without its password, SQLite's URL forms, and
the `IN` clause's placeholders."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbot.db import display, in_clause, open_database, sqlite_path
from reviewbot.errors import UsageError


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://bot:s3cret@db:5432/q", "postgresql://bot:***@db:5432/q"),
    ("postgresql://:s3cret@db/q", "postgresql://db/q"),
    ("postgresql://bot@db/q", "postgresql://bot@db/q"),
    ("postgresql://b%40t:p%40ss@db/q", "postgresql://b%40t:***@db/q"),
    ("sqlite:///q.sqlite", "sqlite:///q.sqlite")])
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert display(url) == shown


@pytest.mark.parametrize(("url", "path"), [
    ("sqlite:///rel/q.sqlite", Path("rel/q.sqlite")), ("sqlite:////abs/q.sqlite", Path("/abs/q.sqlite")),
    ("q.sqlite", Path("q.sqlite")), ("postgresql://db/q", None), ("mysql://db/q", None)])
def test_sqlite_urls_and_bare_paths(url: str, path: Path | None) -> None:
    assert sqlite_path(url) == path


def test_another_scheme_is_refused_without_its_password() -> None:
    with pytest.raises(UsageError, match=r"sqlite:///PATH or postgresql://") as caught:
        open_database("mysql://bot:s3cret@db/q")
    assert "s3cret" not in str(caught.value)


def test_in_clause() -> None:
    assert in_clause([1]) == "(?)" and in_clause(["a", "b", "c"]) == "(?, ?, ?)"
