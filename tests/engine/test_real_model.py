"""The review on real weights: Qwen2.5-Coder-1.5B-Instruct on the vLLM CPU build (`realmodel`).

What a random-weight model can never show: a planted bug found on its line, a summary that
agrees with the findings, a verifier that answers for its candidates, a scanner's real result
told from its noise.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reviewbot.config import resolve
from reviewbot.context import Context, LinkedIssue
from reviewbot.diff import Side, parse
from reviewbot.engine.build import make_engine
from reviewbot.result import IssueVerdict
from reviewbot.scanners import read_sarif
from reviewbot_server import realmodel
from tests.conftest import VllmServer

PLANTED = b"""\
diff --git a/app/backup.py b/app/backup.py
index 1111111..2222222 100644
--- a/app/backup.py
+++ b/app/backup.py
@@ -1,6 +1,6 @@
 import subprocess
 
 
 def backup(path: str) -> None:
-    subprocess.run(["tar", "czf", "/tmp/backup.tgz", path], check=True)
+    subprocess.run(f"tar czf /tmp/backup.tgz {path}", shell=True)
     print("backed up", path)
"""
INJECTION_LINE = 5


def _review(server: VllmServer, **flags: object):  # type: ignore[no-untyped-def]
    settings = resolve({**realmodel.SETTINGS, "base_url": server.base_url, **flags},
                       env={}, file_values={})
    return make_engine(settings).review(parse(PLANTED))


@pytest.mark.timeout(1200)  # a finding and a verification pass at 4-8 tokens/s on 2 cores
def test_the_planted_shell_injection_is_found_on_its_line_and_judged(
        real_server: VllmServer) -> None:
    """Complete, no invalid call, the injection on its added line, a summary that names no
    problem the findings leave out, and a verifier that answered for it: kept, or dropped
    with its reason. Which way is not asserted: this model's verdicts flip with the CPU's
    rounding (the same request kept it in a run alone; in a CI run beside another busy worker
    the verifier dropped every candidate), which is why realmodel.SETTINGS leave verification
    off."""
    result = _review(real_server, verify=True)
    assert result.complete, result.stats.errors
    assert result.stats.tool_calls_invalid == 0 and result.stats.answers_unusable == 0
    assert result.stats.summary_only == 0, result.summary
    assert result.stats.verify_requests >= 1 and result.stats.verify_failed == 0
    judged = result.findings + [d.finding for d in result.dropped if d.stage == "verify"]
    on_line = [f for f in judged
               if f.path == "app/backup.py" and f.side is Side.NEW and f.line == INJECTION_LINE]
    assert on_line, [(f.line, f.title) for f in judged]


SHELL_RUN = b"""\
diff --git a/app.py b/app.py
new file mode 100644
--- /dev/null
+++ b/app.py
@@ -0,0 +1,5 @@
+import subprocess
+
+
+def run(cmd):
+    return subprocess.call(cmd, shell=True)
"""


def test_a_real_bandit_run_is_triaged_and_a_linked_issue_judged(real_server: VllmServer,
                                                                tmp_path: Path) -> None:
    """Bandit's two results on the new file, `import subprocess` (B404) and `shell=True`
    (B602), are each triaged once: confirmed on bandit's own line or dismissed with a reason;
    the linked issue gets a verdict. Which way each goes is not asserted, for the reason the
    test above gives (in CI so far B602 was confirmed and B404 dismissed)."""
    changes = parse(SHELL_RUN)
    (tmp_path / "app.py").write_text("".join(line.text + "\n" for line in
                                             changes.files[0].hunks[0].lines))
    subprocess.run([sys.executable, "-m", "bandit", "-q", "-f", "sarif", "-o", "out.sarif",
                    "app.py"], cwd=tmp_path, timeout=120, check=False)
    scanner = tuple(read_sarif(tmp_path / "out.sarif", tmp_path))
    assert {(r.rule, r.line) for r in scanner} == {("B404", 1), ("B602", 5)}
    settings = resolve({**realmodel.SETTINGS, "base_url": real_server.base_url},
                       env={}, file_values={})
    issue = LinkedIssue("#12", "Run the admin's maintenance commands",
                        "The admin page needs a function that runs a command given as a "
                        "string and returns its exit status.")
    result = make_engine(settings).review(changes, Context(issues=(issue,), scanner=scanner))
    assert result.complete, result.stats.errors
    # a confirmed result is a finding on its line: Bandit's own, or the model's where it had
    # already found something there (free-form JSON found the shell=True itself)
    dismissed = {(d.rule, d.path, d.line) for d in result.scanner_dismissed if d.reason}
    confirmed = {(rule, path, line) for rule, path, line in
                 {("B404", "app.py", 1), ("B602", "app.py", 5)} - dismissed
                 if any((f.path, f.line) == (path, line) for f in result.findings)}
    assert result.stats.scanner_confirmed + len(dismissed) == 2, (confirmed, dismissed)
    assert confirmed | dismissed == {("B404", "app.py", 1), ("B602", "app.py", 5)}
    (check,) = result.issues
    assert check.verdict is not IssueVerdict.UNKNOWN
