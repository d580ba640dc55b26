"""service.review / the listener's ForgeRunner: CI defaults, dispatch, exit codes, against the fake GitLab."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from reviewbot.config import Settings
from reviewbot.errors import IncompleteReview, UsageError
from reviewbot.flow import service
from reviewbot.flow.select import _pr_from_event, open_forge, target_of
from reviewbot.flow.trust import Trust
from reviewbot.forges.base import Target
from reviewbot.forges.gitlab.forge import GitLabForge
from reviewbot.history import HistoryStore, ReviewOutcome
from reviewbot.result import Reviewer
from reviewbot.webhook.jobs import Job, JobOutcome
from reviewbot.webhook.runner import Engines, ForgeRunner
from tests.forges.fake_gitlab import Fault
from tests.forges.gitlab_support import TOKEN, Env, env_fixture, reviewer  # noqa: F401


def _ci_env(env: Env) -> dict[str, str]:
    return {"CI_SERVER_URL": env.gitlab.url, "CI_MERGE_REQUEST_PROJECT_ID": "42",
            "CI_PROJECT_ID": "999", "CI_MERGE_REQUEST_IID": "7", "GITLAB_TOKEN": TOKEN}


def _settings(ci: dict[str, str], **kw: object) -> Settings:
    from reviewbot.config import resolve

    return resolve(kw, env=ci, config_path=None)


def test_gitlab_ci_defaults_pick_the_merge_request(env: Env) -> None:
    ci = _ci_env(env)
    target = target_of(mr=None, pr=None, project=None, repo=None, env=ci)
    assert target == Target("gitlab", "42", 7)
    forge = open_forge(target, _settings(ci))
    assert isinstance(forge, GitLabForge) and (forge.project_id, forge.iid) == ("42", 7)
    run, code = service.review(service.ReviewOrder.opened(target, _settings(ci)), reviewer)
    assert code == 0 and len(env.gitlab.diff_notes()) == len(run.to_post) > 0


def test_fail_on_gives_exit_1_and_incomplete_gives_exit_3(env: Env) -> None:
    ci = _ci_env(env)
    s = _settings(ci, fail_on="major")
    target = Target("gitlab", "grp/proj", 7)
    _, code = service.review(service.ReviewOrder.opened(target, s, dry_run=True), reviewer)
    assert code == 1
    env.gitlab.faults.append(Fault("POST", r"/draft_notes$", 500, times=10**6))
    run, code = service.review(service.ReviewOrder.opened(target, s), reviewer)
    assert code == 3 and not run.complete  # incomplete wins over findings


def test_usage_errors_are_one_line_and_name_the_fix() -> None:
    with pytest.raises(UsageError, match="--project"):
        target_of(mr=1, pr=None, project=None, repo=None, env={})
    with pytest.raises(UsageError, match="--mr IID or --pr N"):
        target_of(mr=None, pr=None, project=None, repo=None, env={})
    with pytest.raises(UsageError, match="not both"):
        target_of(mr=1, pr=2, project="p", repo="o/r", env={})
    with pytest.raises(UsageError, match="OWNER/NAME"):
        open_forge(Target("github", "../etc", 1), Settings(github_token=TOKEN))


def test_pr_number_comes_from_the_actions_event_payload(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "opened", "pull_request": {"number": 17}}))
    assert _pr_from_event({"GITHUB_EVENT_PATH": str(event)}) == 17
    event.write_text(json.dumps({"action": "push"}))
    assert _pr_from_event({"GITHUB_EVENT_PATH": str(event)}) is None


class Recording(Engines):
    """The listener's engines with the scripted reviewer: the settings of each job kept."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[Settings] = []

    def reviewer(self, settings: Settings) -> Reviewer:
        self.made.append(settings)
        return reviewer


def test_the_listeners_runner_posts_and_raises_when_incomplete(env: Env, tmp_path: Path) -> None:
    engines = Recording()
    history = HistoryStore.open(tmp_path / "queue.sqlite")
    runner = ForgeRunner(Trust({"gitlab_token": TOKEN}), engines,  # the job names the URL
                         history=history)
    job = Job(1, "gitlab", "42", 7, env.head, env.gitlab.url, "d1", 0.0)
    assert runner(job, threading.Event()) == JobOutcome.done("review exit code 0")
    assert [n for n in env.gitlab.diff_notes()]  # posted
    env.repo.write({"src/app.py": "rewritten\n"})
    env.gitlab.push(env.repo.commit("push"))
    env.gitlab.faults.append(Fault("POST", r"/draft_notes$", 500, times=10**6))
    with pytest.raises(IncompleteReview) as err:
        runner(Job(2, "gitlab", "42", 7, env.gitlab.head, env.gitlab.url, "d2", 0.0),
               threading.Event())
    assert err.value.exit_code == 3 and TOKEN not in str(err.value)
    assert len(engines.made) == 2 and engines._engine is None  # the scripted reviewer
    # each attempt is in the history, the incomplete one with why
    second, first = history.recent()
    assert (first.outcome, first.source, first.head_sha) == \
        (ReviewOutcome.COMPLETE, "listener", env.head)
    assert first.findings_posted == len(env.gitlab.diff_notes()) > 0
    assert second.outcome is ReviewOutcome.INCOMPLETE and "500" in second.reason


def test_one_listener_applies_each_projects_own_target_branch_settings(tmp_path: Path) -> None:
    """Two projects, one listener: each review runs with its project's `.reviewbot.toml` from
    the target branch (the merge request's own copy is the author's and ignored)."""
    from tests.forges.fake_gitlab import FakeGitLab
    from tests.forges.gitlab_support import scenario
    from tests.forges.gitrepo import Repo

    engines = Recording()
    runner = ForgeRunner(Trust({"gitlab_token": TOKEN}), engines)
    outcomes = []
    for name, file in (("lenient", 'fail_on = "never"\nexclude = ["docs/*"]\n'),
                       ("strict", 'fail_on = "minor"\n')):
        repo = Repo(tmp_path / name)
        repo.write({".reviewbot.toml": f"[reviewbot]\n{file}"})
        base, head = scenario(repo)  # commits the file on main, then the feature branch
        repo.write({".reviewbot.toml": '[reviewbot]\nfail_on = "never"\nexclude = ["*"]\n'})
        head = repo.commit("the author relaxes the review")
        with FakeGitLab(repo, base=base, head=head, token=TOKEN) as gitlab:
            job = Job(1, "gitlab", "42", 7, head, gitlab.url, "d1", 0.0)
            outcomes.append(runner(job, threading.Event()))
    lenient, strict = engines.made
    assert (lenient.fail_on, lenient.exclude) == ("never", ("docs/*",))
    assert (strict.fail_on, strict.exclude) == ("minor", ())
    assert outcomes == [JobOutcome.done("review exit code 0"), JobOutcome.done("review exit code 1")]


def test_a_projects_file_cannot_point_the_listener_at_another_server(tmp_path: Path) -> None:
    """A project's target-branch file is read per job, but never sets where secrets go: a
    `base_url` there fails the job as a usage error, before any model or review request."""
    from reviewbot.errors import UsageError
    from tests.forges.fake_gitlab import FakeGitLab
    from tests.forges.gitlab_support import scenario
    from tests.forges.gitrepo import Repo

    engines = Recording()
    repo = Repo(tmp_path / "hostile")
    repo.write({".reviewbot.toml": '[reviewbot]\nbase_url = "http://evil.example/v1"\n'})
    base, head = scenario(repo)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as gitlab:
        with pytest.raises(UsageError, match="base_url"):
            ForgeRunner(Trust({"gitlab_token": TOKEN}), engines)(
                Job(1, "gitlab", "42", 7, head, gitlab.url, "d1", 0.0), threading.Event())
        assert not [r for r in gitlab.requests if r.method != "GET"]  # nothing posted
    assert engines.made == []
