"""The repository's rules in the prompt: [[rules]] by path, the categories setting."""

from __future__ import annotations

import json

import pytest

from reviewbot.choices import FindingsFormat
from reviewbot.config import Settings, parse_text, resolve
from reviewbot.context import Context
from reviewbot.diff import parse
from reviewbot.engine import answers, tools
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.tokens import EstimateTokenCounter
from reviewbot.errors import UsageError
from reviewbot.rules import Rule, applicable, matches
from tests.engine.pieces_support import make_pieces

DIFF = """\
diff --git a/src/api/app.py b/src/api/app.py
--- a/src/api/app.py
+++ b/src/api/app.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 2
diff --git a/docs/guide.md b/docs/guide.md
--- a/docs/guide.md
+++ b/docs/guide.md
@@ -1 +1 @@
-old
+new
"""


def test_globs_cross_folders_and_double_star_matches_none() -> None:
    assert matches("src/api/app.py", "src/**/*.py") and matches("src/app.py", "src/**/*.py")
    assert matches("src/api/app.py", "*.py") and not matches("lib/app.py", "src/**")
    rules = (Rule(("docs/*",), "d"), Rule(("src/**/*.py", "*.go"), "p"))
    assert [r.text for r in applicable(rules, ["src/api/app.py"])] == ["p"]


def test_rules_from_a_file_and_from_the_environment() -> None:
    values = parse_text('[[rules]]\npaths = ["src/**/*.py"]\ntext = "Validate inputs."\n', "t")
    assert values["rules"] == (Rule(("src/**/*.py",), "Validate inputs."),)
    env = {"REVIEWBOT_RULES": json.dumps([{"paths": "docs/*", "text": "Plain English."}])}
    assert resolve({}, env=env, file_values={}).rules == (Rule(("docs/*",), "Plain English."),)


@pytest.mark.parametrize("toml, message", [
    ('[[rules]]\ntext = "no paths"\n', "rule 1 needs paths"),
    ('[[rules]]\npaths = ["a"]\ntext = ""\n', "rule 1 needs paths"),
    ('[[rules]]\npaths = ["a"]\ntext = "x"\nsevere = true\n', "and nothing else"),
    ('rules = "not json"\n', "JSON list"),
    ('[[rules]]\npaths = ["a"]\ntext = "' + "x" * 1001 + '"\n', "longer than 1000"),
    ('categories = ["bug", "style"]\n', "not 'style'"),
])
def test_bad_rules_and_categories_are_usage_errors(toml: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve({}, env={}, file_values=parse_text(toml, "t"))


def _engine(**settings: object) -> Engine:
    return Engine(Settings(findings_format=FindingsFormat.TOOL, **settings), None,
                  EstimateTokenCounter(), "m", 65536)  # type: ignore[arg-type]


def _chunk(path: str) -> Chunk:
    changes = parse(DIFF)
    return Chunk(1, tuple(p for p in make_pieces(changes, EstimateTokenCounter(), 10_000)
                          if p.file.path == path))


def test_a_rule_is_shown_only_with_the_files_it_matches() -> None:
    e = _engine(rules=(Rule(("src/**/*.py",), "Return types are annotated."),))
    code = e.requests.messages(_chunk("src/api/app.py"), Context())[1]["content"]
    docs = e.requests.messages(_chunk("docs/guide.md"), Context())[1]["content"]
    assert "> Return types are annotated." in code and "Return types" not in docs


def test_categories_shape_the_schema_the_prompt_and_the_parser() -> None:
    narrow = _engine(categories=("bug", "security"))
    chunk = _chunk("src/api/app.py")
    _, tool_list = narrow.requests.request(chunk, Context())
    finding = tool_list[-1]["function"]["parameters"]["$defs"]["finding"]
    assert finding["properties"]["category"]["enum"] == ["bug", "security"]
    assert "nothing about style, naming or formatting" in narrow.requests.system_prompt
    assert "maintainability" not in narrow.requests.system_prompt
    assert "at severity minor or info only" in _engine().requests.system_prompt
    row = next(iter(chunk.rows()))
    item = {"row": row, "title": "t", "body": "b", "severity": "critical", "confidence": 0.9}
    call = [(tools.TOOL_NAME, json.dumps({"summary": "", "findings": [
        {**item, "category": "maintainability"}]}))]
    assert answers.parse_calls(call, chunk, 8, ("bug", "security")).findings == []
    (kept,) = answers.parse_calls(call, chunk, 8).findings
    assert kept.severity.label == "minor"  # maintainability is never more than minor
