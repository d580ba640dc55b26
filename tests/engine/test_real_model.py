"""The review on real weights: Qwen2.5-Coder-1.5B-Instruct on the vLLM CPU build (`realmodel`).

What a random-weight model can never show: a planted bug found on its line, a summary that
agrees with the findings, a verifier that answers for its candidates.
"""

from __future__ import annotations

from reviewbot.config import resolve
from reviewbot.diff import Side, parse
from reviewbot.engine.build import make_engine
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


def test_the_planted_shell_injection_is_found_on_its_line_and_verified(
        real_server: VllmServer) -> None:
    """Complete, no invalid call, the injection on its added line, a summary that names no
    problem the findings leave out, and a verifier that judged it and kept it."""
    result = _review(real_server, verify=True)
    assert result.complete, result.stats.errors
    assert result.stats.tool_calls_invalid == 0 and result.stats.answers_unusable == 0
    assert result.stats.summary_only == 0, result.summary
    assert result.stats.verify_requests >= 1 and result.stats.verify_failed == 0
    on_line = [f for f in result.findings
               if f.path == "app/backup.py" and f.side is Side.NEW and f.line == INJECTION_LINE]
    assert on_line, [(f.line, f.title) for f in result.findings]

