"""The fake GitLab is strict the way GitLab is: wrong positions get GitLab's own 400s.

This is what makes "zero 400 responses" in the other tests mean something.
"""

from __future__ import annotations

import hashlib
from typing import Any

import gitlab
import pytest
from gitlab.exceptions import GitlabCreateError

from tests.forges.fake_gitlab import INCOMPLETE_ERROR, LINE_CODE_ERROR
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401


def _mr(env: Env) -> Any:
    gl = gitlab.Gitlab(env.gitlab.url, private_token=TOKEN)
    return gl.projects.get(42, lazy=True).mergerequests.get(7, lazy=True)


def _pos(env: Env, **kw: Any) -> dict[str, Any]:
    pos = {"position_type": "text", "base_sha": env.base, "start_sha": env.base,
           "head_sha": env.head, "old_path": "src/app.py", "new_path": "src/app.py"}
    pos.update(kw)
    return {k: v for k, v in pos.items() if v is not None}


BAD = {
    "old_line on an added line": {"new_line": 5, "old_line": 5},
    "only new_line on a context line": {"new_line": 3},
    "only old_line on a context line": {"old_line": 3},
    "a line outside the diff": {"new_line": 20},
    "new_line on a deleted file's line": {"old_path": "docs/removed.md",
                                          "new_path": "docs/removed.md", "new_line": 2},
    "stale head SHA": {"new_line": 5, "head_sha": "0" * 40},
    "old_path = new path on a rename": {"old_path": "src/new_name.py",
                                        "new_path": "src/new_name.py", "new_line": 13},
}


@pytest.mark.parametrize("case", list(BAD))
def test_positions_that_are_not_diff_lines_get_the_line_code_400(env: Env, case: str) -> None:
    with pytest.raises(GitlabCreateError) as err:
        _mr(env).discussions.create({"body": "x", "position": _pos(env, **BAD[case])})
    assert err.value.response_code == 400 and LINE_CODE_ERROR in str(err.value.error_message)


def test_missing_sha_or_path_is_incomplete(env: Env) -> None:
    with pytest.raises(GitlabCreateError) as err:
        _mr(env).draft_notes.create({"note": "x", "position": _pos(env, base_sha="", new_line=5)})
    assert INCOMPLETE_ERROR in str(err.value.error_message)


def test_valid_positions_are_accepted(env: Env) -> None:
    mr = _mr(env)
    sha = hashlib.sha1(b"src/app.py").hexdigest()
    for extra in ({"new_line": 5}, {"old_line": 5}, {"old_line": 3, "new_line": 3},
                  {"new_line": 6, "line_range": {
                      "start": {"line_code": f"{sha}_6_5", "type": "new"},
                      "end": {"line_code": f"{sha}_6_6", "type": "new"}}}):
        mr.discussions.create({"body": "ok", "position": _pos(env, **extra)})
    renamed = _pos(env, old_path="src/old_name.py", new_path="src/new_name.py", new_line=14)
    mr.discussions.create({"body": "ok", "position": renamed})
    assert len(env.gitlab.diff_notes()) == 5


def test_a_line_range_with_a_wrong_line_code_is_refused(env: Env) -> None:
    sha = hashlib.sha1(b"src/app.py").hexdigest()
    bad = {"start": {"line_code": f"{sha}_0_5", "type": "new"},  # "+" line: old part is not 0
           "end": {"line_code": f"{sha}_6_6", "type": "new"}}
    with pytest.raises(GitlabCreateError):
        _mr(env).discussions.create({"body": "x",
                                     "position": _pos(env, new_line=6, line_range=bad)})
