"""Memory across merge requests: a member's dismissal becomes a learning of that project that
its later reviews see in their prompts, another project's never do; learnings are listed,
removed and exported through the CLI."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from reviewbot.config import parse_text, resolve
from reviewbot.conversation.learnings import LearningStore
from reviewbot.engine.build import make_engine
from reviewbot.flow import service
from reviewbot.forges.base import Target
from reviewbot.forges.markers import finding_marker
from tests.fake_openai import FakeOpenAI, Reply, user_text
from tests.forges.fake_gitlab import DEV_TOKEN, FakeGitLab
from tests.forges.gitlab.test_threads import _reply, _say, _threads
from tests.forges.gitlab_support import TOKEN, Env, env_fixture, scenario  # noqa: F401
from tests.forges.gitrepo import Repo


def _no_findings(request: dict[str, Any], attempt: int) -> Reply:
    return Reply(tool_args={"summary": "ok", "findings": []})


def _prompts(url: str, project: str, store: LearningStore) -> list[str]:
    """The user prompts of a full review of `project`'s MR 7 on the GitLab at `url`."""
    with FakeOpenAI(_no_findings, max_model_len=16000) as model:
        settings = resolve({"gitlab_url": url, "gitlab_token": TOKEN, "base_url": model.base_url,
                            "mode": "full", "verify": False}, env={}, config_path="/dev/null")
        order = service.ReviewOrder.opened(Target("gitlab", project, 7), settings)
        service.review(order, make_engine(settings).review, learnings=store)
        return [user_text(r) for r in model.requests]


def learnings_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reviewbot", "learnings", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_dismissal_is_learned_applied_to_its_project_only_and_removable(
        env: Env, tmp_path: Path) -> None:
    db = tmp_path / "webhook.sqlite"
    thread = _threads(env.gitlab)[0]
    title = thread["notes"][0]["body"].split("\n", 1)[0].split(": ", 1)[1]
    note = _say(env.gitlab, DEV_TOKEN, "@reviewbot ignore", thread)
    proc = _reply(env, None, note, "--db", str(db))
    assert proc.returncode == 0, proc.stderr

    listed = learnings_cli("list", "--project", "42", "--db", str(db), "--output", "json")
    assert listed.returncode == 0, listed.stderr
    (learning,) = json.loads(listed.stdout)
    assert title in learning["text"] and learning["author"] == "dana"
    assert learning["source"] == f"!7 thread {thread['id']}"
    store = LearningStore.open(db)

    guided = _prompts(env.gitlab.url, "grp/proj", store)  # named by path: the same project
    assert any(title in p for p in guided)
    assert any(f"> The team's guidance on {learning['category']} findings (learned from a "
               "dismissed finding)" in p for p in guided)
    assert learning["paths"] == [thread["notes"][0]["position"]["new_path"]]  # that file only
    summary = next(n for n in env.gitlab.notes() if "### reviewbot review" in n["body"])
    assert "- Learnings of this project applied: 1 " in summary["body"]

    other_repo = Repo(tmp_path / "other")
    base, head = scenario(other_repo)
    with FakeGitLab(other_repo, base=base, head=head, token=TOKEN, project_id=43,
                    project_path="grp/other") as other:
        elsewhere = _prompts(other.url, "43", store)
        assert elsewhere and not any(title in p for p in elsewhere)

    by_path = learnings_cli("list", "--project", "GRP/proj", "--db", str(db), "--output", "json")
    assert json.loads(by_path.stdout) == [learning]  # the path the bot saw, any case
    none = learnings_cli("list", "--project", "grp/other", "--db", str(db))
    assert none.stdout == "no learnings for project grp/other (id 43)\n"  # seen, none kept
    assert learnings_cli("list", "--project", "grp/unseen", "--db", str(db)).stdout \
        == "no learnings for project grp/unseen\n"

    exported = learnings_cli("export", "--project", "42", "--db", str(db))
    rules = parse_text(exported.stdout, "export")["rules"]
    assert len(rules) == 1 and rules[0].text.endswith(learning["text"])

    assert learnings_cli("rm", "--project", "43", str(learning["id"]), "--db", str(db)).returncode == 2
    assert learnings_cli("rm", "--project", "42", str(learning["id"]), "--db", str(db)).returncode == 0
    assert not any(title in p for p in _prompts(env.gitlab.url, "42", store))






def test_with_learnings_need_approval_a_learning_waits_for_approve(env: Env, tmp_path: Path) -> None:
    db = tmp_path / "webhook.sqlite"
    thread = _threads(env.gitlab)[0]
    note = _say(env.gitlab, DEV_TOKEN, "@reviewbot ignore", thread)
    proc = _reply(env, None, note, "--db", str(db),
                  env_vars={"REVIEWBOT_LEARNINGS_NEED_APPROVAL": "1"})
    assert proc.returncode == 0, proc.stderr
    store = LearningStore.open(db)
    (waiting,) = store.list("42")
    assert not waiting.approved and store.rules("42") == ()
    listed = learnings_cli("list", "--project", "42", "--db", str(db))
    assert "[awaiting approval]" in listed.stdout
    assert learnings_cli("export", "--project", "42", "--db", str(db)).stdout.strip() == ""
    approved = learnings_cli("approve", "--project", "42", str(waiting.id), "--db", str(db))
    assert approved.returncode == 0, approved.stderr
    assert [r.paths for r in store.rules("42")] == [waiting.paths]


def test_the_team_sees_what_became_of_its_findings(env: Env, tmp_path: Path) -> None:
    """Posted findings are open; `fixed` accepts one, `ignore` dismisses another; the counts
    reach `learnings stats`, the next summary note and the listener's /metrics."""
    from reviewbot.webhook.metrics import Metrics
    from reviewbot.webhook.queue import JobQueue
    from tests.forges.gitlab.test_threads import _answer
    from tests.forges.gitlab_support import reviewer

    db = tmp_path / "webhook.sqlite"
    store = LearningStore.open(db)
    order = service.ReviewOrder.opened(Target("gitlab", "42", 7), resolve(
        {"gitlab_url": env.gitlab.url, "gitlab_token": TOKEN, "mode": "full"}, env={},
        config_path="/dev/null"))
    run, _ = service.review(order, reviewer, learnings=store)
    posted = len(run.outcome.posted)
    threads = [d for d in env.gitlab.discussions if d["notes"][0].get("position")]
    assert posted == len(threads) >= 3
    with FakeOpenAI(_answer("fixed", "Fixed by the last push."), max_model_len=16000) as model:
        fixed = _say(env.gitlab, DEV_TOKEN, "I changed it, is it fine now?", threads[0])
        assert _reply(env, model, fixed, "--db", str(db)).returncode == 0
    ignore = _say(env.gitlab, DEV_TOKEN, "@reviewbot ignore", threads[1])
    assert _reply(env, None, ignore, "--db", str(db)).returncode == 0

    stats = learnings_cli("stats", "--project", "grp/proj", "--db", str(db), "--output", "json")
    assert json.loads(stats.stdout) == {"project": "42", "days": 30.0, "open": posted - 2,
                                        "accepted": 1, "dismissed": 1}
    again, _ = service.review(order, reviewer, learnings=store)
    assert f"- This project: 1 findings accepted, 1 dismissed, {posted - 2} open in 30 days" \
        in again.summary
    # /metrics needs no token: no project's name unless the operator asks for it
    scraped = Metrics(JobQueue.open(db)).render()[0].decode()
    assert 'reviewbot_findings{outcome="accepted"} 1.0' in scraped and 'project="' not in scraped
    scraped = Metrics(JobQueue.open(db), project_labels=True).render()[0].decode()
    assert 'reviewbot_findings{outcome="accepted",project="42"} 1.0' in scraped


def test_a_thread_a_person_resolved_without_a_word_counts_by_what_the_code_did(
        env: Env, tmp_path: Path) -> None:
    """Resolved by a person, not the bot: accepted when its file changed since the finding was
    posted (fixed, then closed), dismissed when it did not; said once, never overwritten."""
    from tests.forges.gitlab_support import reviewer

    db = tmp_path / "webhook.sqlite"
    store = LearningStore.open(db)
    order = service.ReviewOrder.opened(Target("gitlab", "42", 7), resolve(
        {"gitlab_url": env.gitlab.url, "gitlab_token": TOKEN, "mode": "full"}, env={},
        config_path="/dev/null"))
    service.review(order, reviewer, learnings=store)
    by_path = {n["position"]["new_path"]: n for n in env.gitlab.diff_notes()}
    fixed, left = by_path["src/added.py"], by_path["src/new_name.py"]
    assert env.gitlab.resolve_by_human(lambda n: n["id"] in (fixed["id"], left["id"])) == 2
    env.repo.write({"src/added.py": "import os\n\nprint(os.getcwd(), flush=True)\n"})
    env.gitlab.push(env.repo.commit("fix the print"))
    service.review(order, reviewer, learnings=store)
    service.review(order, reviewer, learnings=store)  # the word stays what it was

    with sqlite3.connect(db) as con:
        outcome = dict(con.execute("SELECT fingerprint, outcome FROM finding_outcomes"))
    assert outcome[_fingerprint(fixed)] == "accepted" and outcome[_fingerprint(left)] == "dismissed"


def _fingerprint(note: dict[str, Any]) -> str:
    marker = finding_marker(note["body"])
    assert marker is not None
    return marker.fingerprint
