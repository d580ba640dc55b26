"""`reviewbot learnings` as a team runs it: a PostgreSQL queue named by the environment, never a
password on the command line; export in the form the config file uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reviewbot.config import parse_text
from reviewbot.conversation.learnings import LearningStore
from tests.conversation.test_learnings import learnings_cli


def test_the_cli_reads_and_removes_learnings_in_a_postgresql_queue(postgres_url: str) -> None:
    store = LearningStore.open(postgres_url)
    kept = store.add("42", "Retries here are deliberate.", ("src/*",), "style", "alice", "n1")
    # a password on the command line is refused (`ps` shows it): the environment carries it
    refused = learnings_cli("list", "--project", "42", "--db", postgres_url)
    assert refused.returncode == 2 and "carries a password" in refused.stderr
    listed = subprocess.run([sys.executable, "-m", "reviewbot", "learnings", "list", "--project",
                             "42", "--output", "json"], capture_output=True, text=True,
                            env={**os.environ, "REVIEWBOT_QUEUE_URL": postgres_url})
    assert listed.returncode == 0, listed.stderr
    assert [x["text"] for x in json.loads(listed.stdout)] == ["Retries here are deliberate."]
    # the listener's $REVIEWBOT_QUEUE_URL names it too
    gone = subprocess.run([sys.executable, "-m", "reviewbot", "learnings", "rm", "--project",
                           "42", str(kept)], capture_output=True, text=True,
                          env={**os.environ, "REVIEWBOT_QUEUE_URL": postgres_url})
    assert gone.returncode == 0, gone.stderr
    assert store.list("42") == []
    password = postgres_url.split("//", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert password not in (listed.stdout + listed.stderr + gone.stdout + gone.stderr
                            + refused.stderr)


def test_export_is_valid_toml_in_the_form_the_file_uses(tmp_path: Path) -> None:
    """An emoji, quotes and a backslash survive (DEL is cleaned away when stored); appended to a `[reviewbot]`-form file
    with `>>` as documented, the file still parses and carries the rule."""
    db = tmp_path / "webhook.sqlite"
    text = 'Retries are deliberate 🚀 "quoted" \\ back\x7fslash'
    LearningStore.open(db).add("42", text, ("src/[a]*.py",), "bug", "dana", "!7 thread x")
    config = tmp_path / ".reviewbot.toml"
    config.write_text('[reviewbot]\nfail_on = "major"\n')
    exported = learnings_cli("export", "--project", "42", "--db", str(db), "--config", str(config))
    assert exported.returncode == 0, exported.stderr
    with config.open("a") as handle:
        handle.write(exported.stdout)
    values = parse_text(config.read_text(), str(config))
    (rule,) = values["rules"]
    assert values["fail_on"] == "major" and rule.paths == ("src/[a]*.py",)
    assert rule.text.endswith("Retries are deliberate 🚀 \"quoted\" \\ backslash")
    plain = learnings_cli("export", "--project", "42", "--db", str(db), "--config", str(tmp_path / "no"))
    assert parse_text(plain.stdout, "plain")["rules"] == values["rules"]
