"""Prompt templates, in memory: a user's directory overrides a bundled template by name, the
sandbox holds whatever the template or the text it renders says, and every template error is
one usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbot.engine.templates import render
from reviewbot.errors import UsageError


def test_a_users_template_overrides_the_bundled_one_and_the_rest_stay(tmp_path: Path) -> None:
    (tmp_path / "format.j2").write_text("Report {{ what }}.")
    assert render("format.j2", str(tmp_path), what="it") == "Report it.\n"
    assert render("judge.j2", str(tmp_path)) == render("judge.j2")  # not overridden


def test_text_rendered_into_a_template_is_never_evaluated(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_text("{{ diff }}")
    assert render("t.j2", str(tmp_path), diff="{{ 7 * 7 }} {% raw %}") == "{{ 7 * 7 }} {% raw %}\n"


@pytest.mark.parametrize(("template", "says"), [
    ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "unsafe"),  # the sandbox
    ("{{ missing }}", "undefined"),  # StrictUndefined: no silent empty prompt
    ("{% if %}", "prompt template t.j2"),  # a syntax error
])
def test_a_template_error_is_one_usage_error(tmp_path: Path, template: str, says: str) -> None:
    (tmp_path / "t.j2").write_text(template)
    with pytest.raises(UsageError, match=says):
        render("t.j2", str(tmp_path))


def test_a_prompts_dir_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a directory"):
        render("format.j2", str(tmp_path / "nowhere"))
