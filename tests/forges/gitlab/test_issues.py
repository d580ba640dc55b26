"""The issues a merge request links, in memory over a stand-in for python-gitlab's list call:
closing issues first, then related ones, each once; only the project's own; never a
confidential one, nor one whose confidentiality GitLab did not state; at most MAX_ISSUES."""

from __future__ import annotations

from typing import Any

import pytest
from gitlab.exceptions import GitlabListError

from reviewbot.context import MAX_ISSUES
from reviewbot.errors import ForgeError
from reviewbot.forges.gitlab.issues import linked


def _issue(iid: object, project: object = 42, confidential: object = False,
           title: str = "t") -> dict[str, object]:
    return {"iid": iid, "project_id": project, "confidential": confidential, "title": title,
            "description": f"body {iid}"}


class _Lists:
    """`gl.http_list` as linked() calls it: one list per merge request path."""

    def __init__(self, closes: object, related: object) -> None:
        self.answers = {"closes_issues": closes, "related_issues": related}
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def http_list(self, path: str, **kwargs: Any) -> object:
        self.asked.append((path, kwargs))
        answer = self.answers[path.rsplit("/", 1)[1]]
        if isinstance(answer, Exception):
            raise answer
        return answer


def _linked(lists: _Lists) -> list[tuple[str, str, str]]:
    found = linked(lists, lambda what: f"/projects/42/merge_requests/7/{what}", "42")  # type: ignore[arg-type]
    return [(i.ref, i.title, i.body) for i in found]


def test_closing_issues_come_first_then_related_ones_each_once() -> None:
    lists = _Lists([_issue(3, title="closes")], [_issue(1), _issue(3, title="again")])
    assert _linked(lists) == [("#3", "closes", "body 3"), ("#1", "t", "body 1")]
    assert [kwargs["get_all"] for _, kwargs in lists.asked] == [False, False]  # one page each


@pytest.mark.parametrize("hidden", [
    _issue(2, confidential=True), _issue(2, confidential=None),
    {k: v for k, v in _issue(2).items() if k != "confidential"},  # not stated: not shown
    _issue(2, project=99),  # another project's #2 is not this project's #2
    _issue("2"), _issue(None), "#2", None])
def test_what_may_not_be_shown_or_is_not_an_issue_is_left_out(hidden: object) -> None:
    assert _linked(_Lists([hidden], [])) == []


def test_at_most_max_issues() -> None:
    many = [_issue(n) for n in range(1, 3 * MAX_ISSUES)]
    assert len(_linked(_Lists(many, many))) == MAX_ISSUES


def test_an_answer_that_is_not_a_list_links_nothing() -> None:
    assert _linked(_Lists({"message": "404 Not found"}, "oops")) == []


def test_a_failed_list_is_a_forge_error_naming_what_was_asked() -> None:
    failed = GitlabListError("403 Forbidden", response_code=403)
    with pytest.raises(ForgeError, match="closes issues"):
        _linked(_Lists(failed, []))
