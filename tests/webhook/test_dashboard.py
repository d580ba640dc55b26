"""`/dashboard` of a real listener that reviewed with the production runner (the fake GitLab
over HTTP, a fake model server): the page shows the failure first, the review with its
tokens, the plots, and renders in a real headless Chromium, where a hostile MR title is text."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from reviewbot.webhook.dashboard import safe_link
from tests.fake_openai import FakeOpenAI
from tests.forges.gitlab.test_cli import one_finding_per_anchor
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401
from tests.webhook.webhook_support import ADMIN_TOKEN, gitlab_event, wait_for, webhook_process

DASHBOARD_TOKEN = "d4e5f60718293a4b5c6d7e8f90a1b2c3"
HOSTILE = '<img src=x onerror="document.title=1"><script>document.title="owned"</script>&amp;'


def _basic(token: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"team:{token}".encode()).decode()}


def _chromium(page: Path, out: Path) -> str:
    """The DOM after Chromium parsed and ran the page (no network), and a screenshot."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is installed by scripts/setup.sh (scripts/system-packages.sh)"
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={out / 'profile'}", "--proxy-server=127.0.0.1:9"]
    shot = subprocess.run([*flags, f"--screenshot={out / 'dashboard.png'}",
                           "--window-size=1200,1400", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert (out / "dashboard.png").stat().st_size > 10_000, shot.stderr[-2000:]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout


def test_the_dashboard_of_a_real_listener_run_renders_with_hostile_text_as_text(
        env: Env, tmp_path: Path) -> None:
    env.gitlab.title = HOSTILE
    listener_env = {"REVIEWBOT_WEBHOOK_FORGE_URLS": env.gitlab.url,
                    "REVIEWBOT_GITLAB_TOKEN": TOKEN, "REVIEWBOT_MAX_CONTEXT": "16000",
                    "REVIEWBOT_DASHBOARD_TOKEN": DASHBOARD_TOKEN}
    with FakeOpenAI(one_finding_per_anchor, max_model_len=16000) as model:
        listener_env["REVIEWBOT_BASE_URL"] = model.base_url
        with webhook_process(tmp_path / "queue.sqlite", listener_env, "--max-attempts", "1",
                             runner=None) as proc:
            for iid in (7, 8):  # !8 does not exist: its review fails
                headers, body = gitlab_event(path="grp/proj", iid=iid, sha=env.head)
                body = body.replace(b"https://gitlab.example.com", env.gitlab.url.encode())
                sent = httpx.post(f"{proc.url}/webhook/gitlab", content=body, headers=headers)
                assert sent.status_code == 202, sent.text
            wait_for(lambda: {j["state"] for j in httpx.get(
                f"{proc.url}/jobs", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
            ).json()["jobs"]} == {"done", "failed"}, timeout=120)
            url = f"{proc.url}/dashboard"
            refused = [httpx.get(url), httpx.get(url, headers=_basic("wrong-" + DASHBOARD_TOKEN))]
            page = httpx.get(url, headers=_basic(DASHBOARD_TOKEN))
            admin = httpx.get(url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert [r.status_code for r in refused] == [401, 401]
    assert refused[0].headers["www-authenticate"].startswith("Basic")
    assert page.status_code == admin.status_code == 200, page.text
    assert "script-src" not in page.headers["content-security-policy"]  # no script at all
    assert "default-src 'none'" in page.headers["content-security-policy"]
    html = page.text
    assert DASHBOARD_TOKEN not in html and ADMIN_TOKEN not in html and TOKEN not in html
    saved = tmp_path / "dashboard.html"
    saved.write_text(html)

    dom = _chromium(saved, tmp_path)
    assert "<title>reviewbot: reviews</title>" in dom  # no script of the title's ran
    assert "<img" not in dom and "<script" not in dom  # no element of the title's was made
    assert '&lt;img src=x onerror="document.title=1"&gt;&lt;script&gt;' in dom  # it is text
    assert "&amp;amp;" in dom  # escaped once more, not decoded
    attention = dom[dom.index('id="attention"'):dom.index("Reviews per day")]
    # the change was never read: it is known by the hook's project id alone
    assert "42!8" in attention and "failed" in attention and "404" in attention
    assert "!7" not in attention
    recent = dom[dom.index('id="recent"'):]
    assert "42!7</a>" in recent and "complete" in recent and "42!8</td>" in recent
    assert 'href="http://gitlab.example/grp/proj/-/merge_requests/7"' in recent
    assert dom.count("<rect") >= 14 + 1  # a bar a day, and one a project


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JAVASCRIPT:x", "data:text/html,x",
                                 "//evil.example/x", ""])
def test_only_http_links_are_links(url: str) -> None:
    assert safe_link(url) == ""
    assert safe_link("https://gitlab.example/g/p/-/merge_requests/7").startswith("https://")


def test_the_board_puts_a_change_whose_latest_attempt_failed_first(tmp_path: Path) -> None:
    """Without a listener: a change retried to success leaves the list; one whose last try failed
    stays; the times' median and p95 count complete reviews only."""
    from reviewbot.conversation.learnings import FindingOutcome, LearningStore
    from reviewbot.history import Change, HistoryStore, ReviewOutcome, ReviewRecord
    from reviewbot.webhook.dashboard import build

    store = HistoryStore.open(tmp_path / "h.sqlite")
    now = 1_800_000_000.0

    def add(number: int, at: float, outcome: ReviewOutcome, seconds: float) -> None:
        r = ReviewRecord.of(Change("gitlab", "grp/a", number), "listener", "full", at, outcome)
        store.add(ReviewRecord(**{**vars(r), "finished_at": at + seconds}))

    add(1, now - 300, ReviewOutcome.FAILED, 1)
    add(1, now - 200, ReviewOutcome.COMPLETE, 10)  # retried: fine now
    add(2, now - 150, ReviewOutcome.COMPLETE, 20)
    add(2, now - 100, ReviewOutcome.INCOMPLETE, 99)  # its latest attempt
    for i in range(3, 21):
        add(i, now - 50, ReviewOutcome.COMPLETE, float(i))
    learnings = LearningStore.open(tmp_path / "h.sqlite")
    learnings.record("grp/a", "!1", ["f1", "f2"], FindingOutcome.ACCEPTED)
    learnings.record("grp/a", "!2", ["f3"], FindingOutcome.DISMISSED)
    board = build(store, learnings, now)
    assert [(r.number, r.outcome) for r in board.attention] == [(2, ReviewOutcome.INCOMPLETE)]
    assert board.median_s == 11.5 and 19 < board.p95_s <= 20  # 3..20, 10 and 20
    assert sum(b.value for b in board.per_day) == 22 and board.per_day[-1].height == 100
    (project,) = board.projects
    assert (project.reviews, project.failed, project.accepted, project.dismissed) == \
        (22, 1, 2, 1)


def test_200k_rows_and_30_dashboard_loads_at_once_leave_every_delivery_answered(
        tmp_path: Path) -> None:
    """14 days of 200,000 reviews: /dashboard took 9 s and answered 503, and 12 loads at
    once made 1 of 5 webhook deliveries answer 503. The board is now summed by the database,
    built in a thread of its own and shared by the loads that come while it is fresh."""
    import sqlite3
    import time
    from concurrent.futures import ThreadPoolExecutor

    from reviewbot.history import COLUMNS, Change, HistoryStore, ReviewOutcome, ReviewRecord

    db = tmp_path / "queue.sqlite"
    HistoryStore.open(db)  # its tables
    now = time.time()
    rows = []
    for i in range(200_000):
        at = now - (i % (14 * 86400))
        r = ReviewRecord.of(Change("gitlab", f"grp/p{i % 300}", i % 5000), "listener", "full",
                            at, ReviewOutcome.FAILED if i % 97 == 0 else ReviewOutcome.COMPLETE)
        rows.append(tuple(getattr(r, c) for c in COLUMNS))
    with sqlite3.connect(db) as conn:
        conn.executemany(f"INSERT INTO reviews ({', '.join(COLUMNS)}) VALUES "
                         f"({', '.join('?' for _ in COLUMNS)})", rows)
    env = {"REVIEWBOT_DASHBOARD_TOKEN": DASHBOARD_TOKEN}
    with webhook_process(db, env) as proc, ThreadPoolExecutor(40) as pool:
        loads = [pool.submit(httpx.get, f"{proc.url}/dashboard", headers=_basic(DASHBOARD_TOKEN),
                             timeout=60) for _ in range(30)]
        deliveries = []
        for iid in range(1, 6):
            headers, body = gitlab_event(path="grp/proj", iid=iid, sha=f"{iid:040x}")
            deliveries.append(pool.submit(httpx.post, f"{proc.url}/webhook/gitlab",
                                          content=body, headers=headers, timeout=60))
        answered = [d.result().status_code for d in deliveries]
        pages = [load.result() for load in loads]
    assert answered == [202] * 5
    assert {p.status_code for p in pages} == {200}
    assert "grp/p1" in pages[0].text  # the projects' sums are there
