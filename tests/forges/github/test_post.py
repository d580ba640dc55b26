"""Posting reviews to the fake GitHub: every kind of line, ranges, suggestions, 422 bisection."""

from __future__ import annotations

import time
from dataclasses import replace

from reviewbot.diff import Side, parse
from reviewbot.forges.github.pending import publish_pending
from reviewbot.forges.markers import decode
from tests.forges.fake_github import FakeGitHub
from tests.forges.github_support import fake_github, finding, forge  # noqa: F401 - fixture "fake"

APP, RENAMED, DELETED, ADDED = "src/app.py", "src/new_name.py", "docs/removed.md", "src/added.py"


def _posted(fake: FakeGitHub) -> dict[tuple[str, int, str], dict]:  # type: ignore[type-arg]
    return {(c["path"], c["line"], c["side"]): c for c in fake.review_comments}


def test_held_for_approval_one_pending_review_and_a_422_offender_probed_out(
        fake: FakeGitHub) -> None:
    """GitHub keeps one pending review per user: after a 422 each comment is tried alone in a
    pending review deleted at once, and the others wait together in one."""
    f = forge(fake)
    req = f.fetch()
    pr = fake.pulls[7]
    wide = parse(fake.repo.git("diff", "-U8", "-M", f"{pr.base}...{pr.head}"))
    good = [finding(APP, n) for n in (3, 5, 6)] + [finding(ADDED, 1)]
    bad = finding(APP, 12)
    out = f.post(replace(req, changes=wide), good[:2] + [bad] + good[2:], hold=True)
    assert out.moved_to_summary == [bad] and out.waiting
    assert sorted(out.posted, key=id) == sorted(good, key=id) and not out.failed
    (pending,) = fake.reviews
    assert pending["state"] == "PENDING" and not fake.submitted()
    assert len(fake.review_comments) == len(good)
    assert publish_pending(f.pull(), f.me()) == len(good)
    assert len(fake.submitted()) == len(good)


def test_every_kind_of_line_lands_where_it_should(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    findings = [
        finding(APP, 5),  # added ("line 5 changed")
        finding(APP, 5, Side.OLD),  # removed ("line 5")
        finding(APP, 3),  # context line, new side
        finding(APP, 31),  # "line thirty": second hunk (shifted by one)
        finding(APP, 5, end=6, suggestion="line 5 fixed\nline 5b fixed"),  # range in one hunk
        finding(RENAMED, 13),  # renamed file, new path
        finding(DELETED, 2, Side.OLD),  # deleted file: LEFT on the old path
        finding(ADDED, 3, suggestion="print(os.getcwd())  # ok"),
    ]
    out = f.post(req, findings)
    assert out.posted == findings and not out.moved_to_summary and not out.failed
    assert not fake.statuses(422)
    assert len(fake.reviews) == 1 and fake.reviews[0]["commit_id"] == req.head_sha
    got = _posted(fake)
    assert {(APP, 5, "RIGHT"), (APP, 5, "LEFT"), (APP, 3, "RIGHT"), (APP, 31, "RIGHT"),
            (APP, 6, "RIGHT"), (RENAMED, 13, "RIGHT"), (DELETED, 2, "LEFT"),
            (ADDED, 3, "RIGHT")} == set(got)
    ranges = [c for c in fake.review_comments if c["start_line"] is not None]
    assert [(c["start_line"], c["line"], c["start_side"]) for c in ranges] == [(5, 6, "RIGHT")]
    assert "```suggestion\nline 5 fixed\nline 5b fixed\n```" in ranges[0]["body"]
    assert "```suggestion\nprint(os.getcwd())  # ok\n```" in got[(ADDED, 3, "RIGHT")]["body"]
    for c in fake.review_comments:
        assert decode(c["body"])["kind"] == "finding"


def test_suggestions_only_on_the_right_side(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    out = f.post(req, [finding(APP, 5, Side.OLD, suggestion="nope")])
    assert len(out.posted) == 1
    assert "suggestion" not in fake.review_comments[0]["body"]


def test_range_across_hunks_is_narrowed_to_its_first_line(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    out = f.post(req, [finding(APP, 5, end=31, suggestion="x")])
    assert len(out.posted) == 1 and not fake.statuses(422)
    c = fake.review_comments[0]
    assert (c["line"], c["start_line"]) == (5, None) and "suggestion" not in c["body"]


def test_unanchorable_findings_go_to_the_summary_without_a_request(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    off = [finding("assets/logo.png", 1), finding(APP, 20), finding("nope.py", 1),
           finding(APP, None), finding("docs/README.md", 1)]
    out = f.post(req, off)
    assert out.moved_to_summary == off and not out.posted
    assert not [r for r in fake.requests if r.method == "POST"]


def test_a_422_offender_is_bisected_out_and_the_rest_is_posted(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    pr = fake.pulls[7]
    # our ChangeSet has more context than GitHub's diff: line 12 of app.py looks valid to us
    wide = parse(fake.repo.git("diff", "-U8", "-M", f"{pr.base}...{pr.head}"))
    assert (Side.NEW, 12) in wide.file(APP).commentable
    good = [finding(APP, n) for n in (3, 5, 6, 7, 31)] + [finding(ADDED, 1), finding(ADDED, 2)]
    bad = finding(APP, 12)
    out = f.post(replace(req, changes=wide), good[:3] + [bad] + good[3:])
    assert out.moved_to_summary == [bad]
    assert sorted(out.posted, key=id) == sorted(good, key=id) and not out.failed
    assert len(fake.review_comments) == len(good)
    # GitHub said no to every batch that held the offender: 8 → 4 → 2 → 1
    assert len(fake.statuses(422)) == 4


def test_at_most_30_comments_per_review(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    spots = [(p, n) for p in (RENAMED, APP)
             for s, n in sorted(req.changes.file(p).commentable) if s is Side.NEW]
    findings = [finding(p, n, title=f"t{i}") for i, (p, n) in enumerate(spots * 5)][:70]
    findings = [replace(x, fingerprint=f"fp{i}") for i, x in enumerate(findings)]
    out = f.post(req, findings)
    assert len(out.posted) == 70
    assert [len(r.body["comments"]) for r in fake.requests if r.path.endswith("/reviews")] \
        == [30, 30, 10]


def test_429_with_retry_after_is_retried_and_posts_once(fake: FakeGitHub) -> None:
    fake.fail_next("POST", r"/reviews$", 429, times=2, headers={"Retry-After": "1"})
    f = forge(fake)
    req = f.fetch()
    out = f.post(req, [finding(APP, 5)])
    assert len(out.posted) == 1 and len(fake.review_comments) == 1
    assert [r.status for r in fake.requests if r.path.endswith("/reviews")] == [429, 429, 200]


def test_403_secondary_rate_limit_is_retried(fake: FakeGitHub) -> None:
    fake.fail_next("POST", r"/reviews$", 403, headers={"Retry-After": "1"})
    f = forge(fake)
    out = f.post(f.fetch(), [finding(APP, 5)])
    assert len(out.posted) == 1 and len(fake.review_comments) == 1


def test_500_on_post_is_not_blindly_retried_and_what_landed_counts(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    fake.fail_next("POST", r"/reviews$", 500, after=True)  # applied, but the answer was lost
    out = f.post(req, [finding(APP, 5), finding(APP, 6)])
    assert len(out.posted) == 2 and not out.failed and len(fake.review_comments) == 2
    fake.fail_next("POST", r"/reviews$", 502)  # not applied
    out = f.post(req, [finding(APP, 3)])
    assert out.failed and not out.posted and "HTTP 502" in out.errors[0]
    assert len(fake.review_comments) == 2
    assert len([r for r in fake.requests if r.path.endswith("/reviews")]) == 2


def test_gets_are_retried_on_5xx(fake: FakeGitHub) -> None:
    fake.fail_next("GET", r"/pulls/7$", 503, times=2)
    assert forge(fake).fetch().head_sha == fake.pulls[7].head


def test_preview_is_exactly_what_post_sends(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    findings = [finding(APP, 5, end=6), finding(DELETED, 1, Side.OLD)]
    preview = f.preview(req, findings)
    f.post(req, findings)
    sent = [r.body for r in fake.requests if r.path.endswith("/reviews")]
    assert sent == [{k: v for k, v in p.items()} for p in preview]


def test_an_unknown_422_is_bisected_too(fake: FakeGitHub) -> None:
    fake.fail_next("POST", r"/reviews$", 422, times=1, message="Validation Failed")
    f = forge(fake)
    out = f.post(f.fetch(), [finding(APP, 5), finding(APP, 6), finding(APP, 7)])
    assert len(out.posted) == 3 and not out.moved_to_summary and not out.failed


def test_a_push_between_fetch_and_post_is_a_failure_not_a_bad_position(fake: FakeGitHub) -> None:
    f = forge(fake)
    req = f.fetch()
    fake.repo.write("src/added.py", "changed\n")
    fake.push(7, fake.repo.commit("late push"))  # the fake insists on the current head
    out = f.post(req, [finding(APP, 5), finding(APP, 6)])
    assert len(out.failed) == 2 and not out.moved_to_summary and "HTTP 422" in out.errors[0]
    assert len(fake.statuses(422)) == 1  # no bisection for a review-level error


def test_retry_after_is_honoured(fake: FakeGitHub) -> None:
    fake.fail_next("POST", r"/reviews$", 429, times=2, headers={"Retry-After": "1"})
    f = forge(fake)
    req = f.fetch()
    start = time.monotonic()
    assert len(f.post(req, [finding(APP, 5)]).posted) == 1
    assert time.monotonic() - start >= 2.0  # backoff alone would be ~0.1 s here
