"""Run one review against the fake GitLab at argv[1]; the crash test kills this process mid-post."""

from __future__ import annotations

import sys

from reviewbot.flow.posting import review_change_request
from tests.forges.fake_gitlab import State
from tests.forges.gitlab_support import make_forge, reviewer


class _Url(State):
    def __init__(self, url: str) -> None:  # only what make_forge reads
        self.url = url


if __name__ == "__main__":
    review_change_request(make_forge(_Url(sys.argv[1])), reviewer)
