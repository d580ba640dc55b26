"""`reviewbot doctor` as a real process: every check passes on a correct set-up (the real CPU
vLLM, the fake GitLab over HTTP with its hooks and members APIs, a migrated SQLite database,
strong secrets), and each broken piece fails with its fix, the token never shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewbot.history import HistoryStore
from tests.conftest import VllmServer
from tests.fake_openai import FakeOpenAI, Reply
from tests.forges.fake_github import FakeGitHub
from tests.forges.github_support import fake_github  # noqa: F401
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401

ROOT = Path(__file__).parents[2]
LISTENER = "https://reviewbot.example.com"
STRONG = {"REVIEWBOT_GITLAB_WEBHOOK_SECRET": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
          "REVIEWBOT_ADMIN_TOKEN": "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
GOOD_HOOK = {"id": 1, "url": f"{LISTENER}/webhook/gitlab", "merge_requests_events": True,
             "note_events": True, "push_events": False, "enable_ssl_verification": True}


def _doctor(env: Env, base_url: str, *extra: str, token: str = TOKEN,
            secrets: dict[str, str] = STRONG) -> tuple[int, dict[str, dict[str, Any]], str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "doctor", "--base-url", base_url,
         "--gitlab-url", env.gitlab.url, "--project", "grp/proj", "--listener-url", LISTENER,
         "--output", "json", *extra],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
        env={**clean, "REVIEWBOT_GITLAB_TOKEN": token, **secrets})
    checks = {c["name"]: c for c in json.loads(proc.stdout or "[]")}
    assert token not in proc.stdout + proc.stderr
    assert all(s not in proc.stdout + proc.stderr for s in secrets.values())
    return proc.returncode, checks, proc.stderr


def test_a_correct_set_up_passes_every_check(env: Env, vllm_server: VllmServer,
                                            tmp_path: Path) -> None:
    db = tmp_path / "queue.sqlite"
    HistoryStore.open(db)  # the listener migrated it
    env.gitlab.hooks.append(GOOD_HOOK)
    code, checks, err = _doctor(env, vllm_server.base_url, "--db", str(db))
    assert code == 0, (checks, err)
    assert {c["status"] for c in checks.values()} == {"ok"}, checks
    assert set(checks) >= {"model server", "model", "token counting", "forced tool call",
                           "GitLab token", "GitLab project", "GitLab role", "GitLab hook",
                           "project settings", "REVIEWBOT_GITLAB_WEBHOOK_SECRET",
                           "REVIEWBOT_ADMIN_TOKEN", "database"}


def _model() -> FakeOpenAI:
    return FakeOpenAI(lambda body, attempt: Reply(tool_name="report", tool_args={"ok": True}),
                      model="served-model")


def test_each_broken_piece_fails_with_its_fix(env: Env, tmp_path: Path) -> None:
    with _model() as model:
        code, checks, _ = _doctor(env, model.base_url, token="glpat-WRONG-t0ken-9999")
        assert code == 1 and checks["GitLab token"]["status"] == "failed"
        assert "REVIEWBOT_GITLAB_TOKEN" in checks["GitLab token"]["fix"]

        code, checks, _ = _doctor(env, model.base_url, "--model", "other-model")
        assert checks["model"]["status"] == "failed" and "serve" in checks["model"]["fix"]

        code, checks, _ = _doctor(env, model.base_url)  # no hook yet
        assert checks["GitLab hook"]["detail"].startswith("no hook to"), checks["GitLab hook"]
        assert f"{LISTENER}/webhook/gitlab" in checks["GitLab hook"]["fix"]
        env.gitlab.hooks.append({**GOOD_HOOK, "note_events": False})
        code, checks, _ = _doctor(env, model.base_url)
        assert "Comments" in checks["GitLab hook"]["fix"]

        weak = {**STRONG, "REVIEWBOT_GITLAB_WEBHOOK_SECRET": "changeme"}
        code, checks, _ = _doctor(env, model.base_url, secrets=weak)
        assert checks["REVIEWBOT_GITLAB_WEBHOOK_SECRET"]["status"] == "failed"
        assert "openssl rand" in checks["REVIEWBOT_GITLAB_WEBHOOK_SECRET"]["fix"]

        code, checks, _ = _doctor(env, model.base_url, "--db", str(tmp_path / "none.sqlite"))
        assert checks["database"]["status"] == "failed"

        env.gitlab.members[1] = 20  # the bot's user is a Reporter now
        code, checks, _ = _doctor(env, model.base_url)
        assert checks["GitLab role"]["status"] == "failed" and "Developer" in \
            checks["GitLab role"]["fix"]
        assert checks["GitLab hook"]["status"] == "skipped", checks["GitLab hook"]  # Maintainer
    code, checks, err = _doctor(env, model.base_url)  # the model server is gone
    assert code == 1 and checks["model server"]["status"] == "failed", err
    assert "server up" in checks["model server"]["fix"]


def test_a_broken_settings_file_on_the_default_branch_fails(tmp_path: Path) -> None:
    from tests.forges.fake_gitlab import FakeGitLab
    from tests.forges.gitlab_support import scenario
    from tests.forges.gitrepo import Repo

    repo = Repo(tmp_path / "repo")
    repo.write({".reviewbot.toml": '[reviewbot]\nfail_on = "sometimes"\n'})
    base, head = scenario(repo)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state, _model() as model:
        code, checks, _ = _doctor(Env(repo, state, base, head), model.base_url)
    assert code == 1 and checks["project settings"]["status"] == "failed"
    assert "fail_on" in checks["project settings"]["detail"]


GITHUB_HOOK = {"id": 9, "events": ["pull_request", "issue_comment",
                                   "pull_request_review_comment"],
               "config": {"url": f"{LISTENER}/webhook/github", "secret": "********"}}


def _doctor_github(fake: FakeGitHub, base_url: str, token: str | None = None
                   ) -> tuple[int, dict[str, dict[str, Any]]]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    secret = {"REVIEWBOT_GITHUB_WEBHOOK_SECRET": STRONG["REVIEWBOT_GITLAB_WEBHOOK_SECRET"],
              "REVIEWBOT_ADMIN_TOKEN": STRONG["REVIEWBOT_ADMIN_TOKEN"]}
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "doctor", "--base-url", base_url, "--github-url",
         fake.base_url, "--repo", fake.full_name, "--listener-url", LISTENER, "--output", "json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
        env={**clean, "GITHUB_TOKEN": token or fake.token, **secret})
    assert (token or fake.token) not in proc.stdout + proc.stderr
    return proc.returncode, {c["name"]: c for c in json.loads(proc.stdout or "[]")}


def test_github_a_correct_set_up_passes_and_a_weak_hook_names_its_fix(
        fake: FakeGitHub, tmp_path: Path) -> None:
    fake.repo.write(".reviewbot.toml", '[reviewbot]\nfail_on = "major"\n')
    fake.repo.commit("settings")
    fake.permissions["reviewbot[bot]"] = "admin"  # only an admin may list webhooks
    fake.hooks.append(GITHUB_HOOK)
    with _model() as model:
        code, checks = _doctor_github(fake, model.base_url)
        assert code == 0, [c for c in checks.values() if c["status"] != "ok"]
        assert {n for n, c in checks.items() if c["status"] == "ok"} >= {
            "GitHub token", "GitHub repository", "GitHub permission", "GitHub webhook",
            "project settings"}, checks
        fake.hooks[0] = {**GITHUB_HOOK, "events": ["pull_request"]}
        code, checks = _doctor_github(fake, model.base_url)
        assert code == 1 and "issue_comment" in checks["GitHub webhook"]["detail"]
        fake.hooks[0] = {**GITHUB_HOOK, "config": {"url": f"{LISTENER}/webhook/github"}}
        code, checks = _doctor_github(fake, model.base_url)
        assert "no secret" in checks["GitHub webhook"]["detail"]
        fake.permissions["reviewbot[bot]"] = "read"
        code, checks = _doctor_github(fake, model.base_url)
        assert checks["GitHub permission"]["status"] == "failed"
        assert checks["GitHub webhook"]["status"] == "skipped"  # 404 to a non-admin
        code, checks = _doctor_github(fake, model.base_url, token="ghp_wrong_token_000000000000")
        assert code == 1 and checks["GitHub token"]["status"] == "failed"


def test_the_database_check_on_each_backend(queue_url: str) -> None:
    """An empty database is reachable but not migrated; after the listener's migration it
    passes; the password of a URL never shows."""
    from reviewbot.db import open_database
    from reviewbot.flow.doctor import database

    open_database(queue_url).close()  # there, and empty
    (empty,) = database(queue_url)
    assert empty.status == "failed" and "schema 0" in empty.detail, empty
    HistoryStore.open(queue_url)
    (ready,) = database(queue_url)
    assert ready.status == "ok", ready
    password = queue_url.partition("://")[2].partition("@")[0].partition(":")[2]
    assert not password or password not in ready.detail + empty.detail


def test_an_unreachable_database_fails_within_the_connect_timeout() -> None:
    from reviewbot.flow.doctor import database

    (gone,) = database("postgresql://bot:pw-0123456789@127.0.0.1:9/none")
    assert gone.status == "failed" and "pw-0123456789" not in gone.detail + gone.fix


def test_a_url_password_never_reaches_the_json_output(env: Env) -> None:
    """The text output redacted the password of --gitlab-url; the JSON printed it."""
    password = "Url-Pa55word-never-shown"
    with_password = env.gitlab.url.replace("http://", f"http://oauth2:{password}@")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    with _model() as model:
        for fmt in ("json", "text"):
            proc = subprocess.run(
                [sys.executable, "-m", "reviewbot", "doctor", "--base-url", model.base_url,
                 "--gitlab-url", with_password, "--project", "grp/proj", "--output", fmt],
                capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
                env={**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN, **STRONG})
            assert proc.stdout and password not in proc.stdout + proc.stderr, fmt
            assert password.upper() not in proc.stdout.upper()


@pytest.mark.parametrize("reply, status, says", [
    (Reply(tool_name="report", tool_args='{"ok": tru'), "ok", "random-weight test model"),
    (Reply(tool_name="report", tool_args={"ok": True}), "ok", "came back as JSON"),
    (Reply(content="I cannot call tools.", finish_reason="stop"), "failed", "no report call"),
])
def test_the_forced_call_check_tells_a_random_weight_model_from_a_missing_flag(
        reply: Reply, status: str, says: str) -> None:
    """Against the demo's random-weight model doctor said "FAILED forced tool call: Expecting
    value" and asked for flags the server already had."""
    from reviewbot.engine.llm import ModelClient
    from reviewbot.flow.doctor import _tool_call

    with FakeOpenAI(lambda body, attempt: reply, model="m") as server:
        check = _tool_call(ModelClient(server.base_url, None, 30, 0), "m")
    assert (check.status.value, says in check.detail) == (status, True), check
