"""A GitLab Note Hook through a real `reviewbot webhook` process with the production runner:
the note is answered in its thread once, also when the listener is killed with SIGKILL between
accepting the event and answering it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.fake_openai import FakeOpenAI, Reply
from tests.forges.fake_gitlab import DEV_TOKEN, DEV_USER, State
from tests.forges.gitlab.test_threads import _say, _threads
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401
from tests.webhook.webhook_support import ADMIN_TOKEN, GITLAB_SECRET, wait_for, webhook_process

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _note_hook(state: State, note_id: int, body: str, thread: dict[str, Any]) -> tuple[
        dict[str, str], bytes]:
    payload = {
        "object_kind": "note", "user": {k: DEV_USER[k] for k in ("id", "username")},
        "project": {"id": 42, "web_url": f"{state.url}/grp/proj",
                    "path_with_namespace": "grp/proj"},
        "object_attributes": {"id": note_id, "note": body, "noteable_type": "MergeRequest",
                              "discussion_id": thread["id"], "type": "DiffNote",
                              "system": False},
        "merge_request": {"iid": 7, "last_commit": {"id": state.head}},
    }
    return ({"X-Gitlab-Event": "Note Hook", "X-Gitlab-Token": GITLAB_SECRET,
             "Content-Type": "application/json"}, json.dumps(payload).encode())


def _env(state: State, model: FakeOpenAI) -> dict[str, str]:
    return {"REVIEWBOT_WEBHOOK_FORGE_URLS": state.url, "REVIEWBOT_GITLAB_TOKEN": TOKEN,
            "REVIEWBOT_BASE_URL": model.base_url, "REVIEWBOT_MAX_CONTEXT": "16000"}


def _answers(thread: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in thread["notes"][1:] if n["author"]["username"] == "reviewbot"]


def test_a_note_hook_is_answered_once_across_a_kill_9(env: Env, tmp_path: Path) -> None:
    thread = _threads(env.gitlab)[0]
    body = "@reviewbot is this reachable at all?"
    note = _say(env.gitlab, DEV_TOKEN, body, thread)
    slow = {"first": True}

    def script(request: dict[str, Any], attempt: int) -> Reply:
        delay = 30.0 if slow.pop("first", False) else 0.0  # the first answer never arrives
        return Reply(tool_name="reply", delay=delay,
                     tool_args={"body": "Yes: the parser calls it.", "verdict": "keep"})

    db = tmp_path / "queue.sqlite"
    with FakeOpenAI(script, max_model_len=16000) as model:
        with webhook_process(db, _env(env.gitlab, model), runner=None) as proc:
            headers, raw = _note_hook(env.gitlab, note, body, thread)
            first = httpx.post(f"{proc.url}/webhook/gitlab", content=raw, headers=headers)
            assert first.status_code == 202, first.text
            wait_for(lambda: len(model.requests) == 1)  # the model is answering: kill now
            proc.kill9()
        assert _answers(thread) == []
        with webhook_process(db, _env(env.gitlab, model), runner=None) as proc:
            wait_for(lambda: len(_answers(thread)) == 1, timeout=60)
            again = httpx.post(f"{proc.url}/webhook/gitlab", content=raw, headers=headers)
            assert again.json()["status"] == "duplicate"  # the forge redelivers: nothing new
            time.sleep(1)
            jobs = httpx.get(f"{proc.url}/jobs", headers=ADMIN).json()["jobs"]
    assert [j["note_id"] for j in jobs] == [note] and jobs[0]["state"] == "done"
    assert len(_answers(thread)) == 1 and _answers(thread)[0]["body"].startswith("Yes:")


def test_a_flood_of_notes_costs_a_bounded_number_of_requests_each(env: Env,
                                                                  tmp_path: Path) -> None:
    """40 notes by a non-member in a bot thread, and the bot's own answers: each note costs a
    few API requests on the bot's token (its one discussion by id, not every discussion), the
    bot's own notes never become jobs, and a flood is cut to a trickle per merge request."""
    from tests.forges.fake_gitlab import MALLORY_TOKEN

    thread = _threads(env.gitlab)[0]
    notes = [_say(env.gitlab, MALLORY_TOKEN, f"@reviewbot ignore {i}", thread) for i in range(40)]
    bot_note = thread["notes"][0]  # the finding itself, with its marker
    db = tmp_path / "queue.sqlite"
    with FakeOpenAI(lambda r, a: Reply(tool_name="reply", tool_args={}),
                    max_model_len=16000) as model, \
            webhook_process(db, _env(env.gitlab, model), runner=None) as proc:
        headers, raw = _note_hook(env.gitlab, bot_note["id"], bot_note["body"], thread)
        own = httpx.post(f"{proc.url}/webhook/gitlab", content=raw, headers=headers).json()
        before = len(env.gitlab.requests)
        answers = [httpx.post(f"{proc.url}/webhook/gitlab", headers=hook[0], content=hook[1])
                   .json()["status"] for hook in
                   (_note_hook(env.gitlab, n, f"@reviewbot ignore {i}", thread)
                    for i, n in enumerate(notes))]
        wait_for(lambda: all(j["state"] == "done" for j in httpx.get(
            f"{proc.url}/jobs", headers=ADMIN).json()["jobs"]), timeout=120)
        jobs = httpx.get(f"{proc.url}/jobs", headers=ADMIN).json()["jobs"]
    assert own["status"] == "ignored"
    assert answers.count("queued") == len(jobs) and 20 <= len(jobs) < 40
    assert answers.count("ignored") == 40 - len(jobs)  # rate-limited
    assert all(j["reason"].endswith("not-a-member") for j in jobs)
    per_note = (len(env.gitlab.requests) - before) / len(jobs)
    assert per_note <= 5, per_note
    assert not any(r.path.endswith("/discussions") and r.method == "GET"
                   for r in env.gitlab.requests[before:])
    assert model.requests == []
