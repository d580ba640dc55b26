"""The issues a merge request links, as GitLab lists them: those it closes on merge (`Closes
#12`, `Fixes group/app#7` in its description and commits), then those it relates to; only its
own project's, which GitLab names by `project_id`, and never a confidential one (its title and
text are for those who may see the issue, not for everyone who reads the merge request)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import gitlab

from reviewbot.context import MAX_ISSUES, LinkedIssue
from reviewbot.forges.gitlab.api import call


def linked(gl: gitlab.Gitlab, mr_path: Callable[[str], str], project_id: str) -> list[LinkedIssue]:
    found: dict[int, LinkedIssue] = {}
    for what in ("closes_issues", "related_issues"):
        items = call(partial(gl.http_list, mr_path(what), get_all=False, per_page=4 * MAX_ISSUES),
                     "listing the merge request's " + what.replace("_", " "))
        for item in items if isinstance(items, list) else []:
            iid = item.get("iid") if isinstance(item, dict) else None
            if isinstance(iid, int) and str(item.get("project_id")) == project_id \
                    and item.get("confidential") is False and iid not in found:
                found[iid] = LinkedIssue(f"#{iid}", str(item.get("title") or ""),
                                         str(item.get("description") or ""))
    return list(found.values())[:MAX_ISSUES]
