"""The merge request's author does not configure its own review: in CI the working tree's
.reviewbot.toml is ignored for the target branch's, files cannot choose where secrets go, and
prompt templates are sandboxed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reviewbot.config import parse_text, resolve
from reviewbot.errors import UsageError
from reviewbot.flow.trust import cli_order
from tests.fake_openai import FakeOpenAI, Reply
from tests.forges.fake_github import FakeGitHub, Server
from tests.forges.github_repo import GitRepo
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401

REPO_ROOT = Path(__file__).parents[2]
EMPTY = Reply(tool_args={"summary": "ok", "findings": []})


def _hostile_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "checkout"
    (tree / "evil").mkdir(parents=True)
    (tree / "evil" / "system.j2").write_text(
        "{{ cycler.__init__.__globals__.os.popen('touch " + str(tmp_path / "pwned") + "').read() }}")
    (tree / ".reviewbot.toml").write_text('[reviewbot]\nexclude = ["*"]\nfail_on = "never"\n')
    return tree


def test_gitlab_ci_ignores_the_working_trees_config(env: Env, tmp_path: Path) -> None:
    tree = _hostile_tree(tmp_path)
    ci = {k: v for k, v in os.environ.items()
          if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    ci.update(GITLAB_CI="true", CI_SERVER_URL=env.gitlab.url, REVIEWBOT_GITLAB_TOKEN=TOKEN,
              CI_MERGE_REQUEST_IID="7", CI_MERGE_REQUEST_PROJECT_ID="42",
              PYTHONPATH=str(REPO_ROOT))
    with FakeOpenAI(lambda body, n: EMPTY, max_model_len=16000) as server:
        ci["REVIEWBOT_BASE_URL"] = server.base_url
        proc = subprocess.run([sys.executable, "-m", "reviewbot", "review", "--no-progress",
                               "--mr", "7", "--output", "json"], capture_output=True, text=True, timeout=300,
                              env=ci, cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert "target branch" in proc.stderr  # the log says which file counts
    assert '"files_reviewed": 0' not in proc.stdout and server.requests
    assert any(r.path.endswith("/repository/files/.reviewbot.toml/raw")
               for r in env.gitlab.requests)


def test_github_actions_reads_the_base_branch_config(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "gh")
    repo.write(".reviewbot.toml", '[reviewbot]\nfail_on = "major"\nexclude = ["docs/*"]\n')
    repo.write("app.py", "a = 1\n")
    base = repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write(".reviewbot.toml", '[reviewbot]\nfail_on = "never"\nexclude = ["*"]\n')
    repo.write("app.py", "a = 2\n")
    head = repo.commit("the author relaxes the review")
    fake = FakeGitHub(repo)
    fake.open_pull(base, head)
    with Server(fake):
        env = {"GITHUB_ACTIONS": "true", "GITHUB_API_URL": fake.base_url,
               "GITHUB_TOKEN": fake.token, "GITHUB_REPOSITORY": fake.full_name}
        settings = cli_order({}, None, mr=None, pr=7, project=None, repo=None,
                               env=env).settings
        # the templates' empty inputs reach the job as empty variables: no setting at all
        empty = cli_order({}, None, mr=None, pr=7, project=None, repo=None,
                            env={**env, "REVIEWBOT_FAIL_ON": "", "REVIEWBOT_MODE": ""}).settings
    assert settings.fail_on == "major" and settings.exclude == ("docs/*",)
    assert empty.fail_on == "major" and empty.mode == "incremental"


@pytest.mark.parametrize("key", ["base_url = 'http://evil.example/v1'", "ssl_verify = false",
                                 "prompts_dir = 'evil'", "gitlab_url = 'http://x'",
                                 "tokenizer = '/tmp/t.json'", "ca_file = '/tmp/ca.pem'"])
def test_keys_that_decide_where_secrets_go_are_refused_in_files(key: str) -> None:
    with pytest.raises(UsageError, match="cannot be set in a file"):
        parse_text(f"[reviewbot]\n{key}\n", "x.toml")


def test_templates_are_sandboxed(tmp_path: Path) -> None:
    tree = _hostile_tree(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    with FakeOpenAI(lambda body, n: EMPTY, max_model_len=16000) as server:
        env.update(REVIEWBOT_BASE_URL=server.base_url, REVIEWBOT_PROMPTS_DIR=str(tree / "evil"))
        diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a\n+b\n"
        proc = subprocess.run([sys.executable, "-m", "reviewbot", "review", "--no-progress",
                               "--diff", "-", "--config", str(tmp_path / "none.toml")],
                              input=diff, capture_output=True, text=True, timeout=120, env=env)
    assert not (tmp_path / "pwned").exists()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr


def test_resolve_reads_every_key_from_reviewbot_variables() -> None:
    s = resolve({}, env={"REVIEWBOT_SSL_VERIFY": "false", "REVIEWBOT_REVIEW_TIMEOUT": "60"},
                file_values={})
    assert s.ssl_verify is False and s.review_timeout == 60


@pytest.mark.parametrize("entry", ["git", "diff", "eval"])
def test_in_ci_a_local_review_or_eval_never_takes_the_changes_own_file(
        tmp_path: Path, entry: str) -> None:
    """GITLAB_CI=true reviewbot review --git A...B read the .reviewbot.toml the change added;
    now a --git range reads its left side's (the target), --diff and eval none."""
    from reviewbot.flow.trust import Trust

    repo = GitRepo(tmp_path / "r")
    repo.write(".reviewbot.toml", '[reviewbot]\nfail_on = "major"\n')
    repo.write("app.py", "a = 1\n")
    base = repo.commit("base")
    repo.write(".reviewbot.toml", '[reviewbot]\nfail_on = "never"\nexclude = ["*"]\n')
    repo.write("app.py", "a = 2\n")
    head = repo.commit("the author relaxes the review")
    ci = {"GITLAB_CI": "true"}
    cwd = os.getcwd()
    os.chdir(repo.path)
    try:
        if entry == "git":
            settings = Trust.for_local({}, None, f"{base}...{head}", env=ci).base()
            assert settings.fail_on == "major" and settings.exclude == ()  # the target's
        else:  # --diff, eval: nothing from the working tree (the change's own)
            settings = Trust.for_local({}, None, None, env=ci).base()
            assert settings.fail_on == "never" and settings.exclude == ()
        # outside CI the working tree is the user's own
        assert Trust.for_local({}, None, None, env={}).base().exclude == ("*",)
    finally:
        os.chdir(cwd)
