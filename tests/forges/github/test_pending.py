"""The bot's pending review on the fake GitHub: only its own is deleted or submitted, and a
failure is one line naming the step."""

from __future__ import annotations

import pytest

from reviewbot.errors import ForgeError
from reviewbot.forges.github.pending import drop_pending, publish_pending
from tests.forges.fake_github import MARIA, TS, FakeGitHub
from tests.forges.github_support import fake_github, finding, forge  # noqa: F401 - fixture "fake"

APP = "src/app.py"


def _hold_two(fake: FakeGitHub) -> None:
    """The bot's pending review of two comments, beside Maria's pending one and a submitted one."""
    f = forge(fake)
    f.post(f.fetch(), [finding(APP, 5), finding(APP, 6)], hold=True)
    for state, user in (("PENDING", MARIA), ("COMMENTED", MARIA)):
        fake.reviews.append({"id": fake.next_id(), "user": user, "body": "", "state": state,
                             "commit_id": fake.pulls[7].head, "number": 7,
                             "submitted_at": None if state == "PENDING" else TS,
                             "html_url": "http://github.invalid/review",
                             "pull_request_url": f"{fake.repo_url()}/pulls/7"})


def _states(fake: FakeGitHub) -> list[tuple[str, str]]:
    return sorted((r["user"]["login"], r["state"]) for r in fake.reviews)


def test_drop_pending_deletes_the_bots_own_pending_review_alone(fake: FakeGitHub) -> None:
    _hold_two(fake)
    f = forge(fake)
    drop_pending(f.pull(), f.me())
    assert _states(fake) == [("maria", "COMMENTED"), ("maria", "PENDING")]
    assert fake.review_comments == []


def test_publish_pending_submits_the_bots_review_and_counts_its_comments(fake: FakeGitHub) -> None:
    _hold_two(fake)
    f = forge(fake)
    assert publish_pending(f.pull(), f.me()) == 2
    assert _states(fake) == [("maria", "COMMENTED"), ("maria", "PENDING"),
                             ("reviewbot[bot]", "COMMENTED")]
    assert len(fake.submitted()) == 2
    assert publish_pending(f.pull(), f.me()) == 0  # nothing left waiting


@pytest.mark.parametrize("step, method, path, says", [
    (drop_pending, "DELETE", r"/reviews/\d+$", "deleting the earlier pending review"),
    (publish_pending, "POST", r"/reviews/\d+/events$", "publishing the pending review"),
])
def test_a_refused_step_is_a_forge_error_naming_it(fake: FakeGitHub, step, method: str,
                                                   path: str, says: str) -> None:
    _hold_two(fake)
    f = forge(fake)
    fake.fail_next(method, path, 404)
    with pytest.raises(ForgeError, match=f"GitHub {says} failed: HTTP 404") as caught:
        step(f.pull(), f.me())
    assert fake.token not in str(caught.value)
