"""A member's rebuttal in a bot thread, answered by the real model (`realmodel`): the guided
`reply` call comes back as a verdict and a body that is an answer, posted in the thread."""

from __future__ import annotations

import json
import re

from tests.conftest import VllmServer
from tests.forges.fake_gitlab import DEV_TOKEN
from tests.forges.gitlab.test_threads import _reply, _say, _threads
from tests.forges.gitlab_support import Env, env_fixture  # noqa: F401


def test_a_rebuttal_gets_a_verdict_and_an_answer(env: Env, real_server: VllmServer) -> None:
    thread = _threads(env.gitlab)[0]
    rebuttal = ("@reviewbot I don't think this is a problem: this line only changes a label, "
                "and nothing reads it. Can you explain why it matters?")
    note = _say(env.gitlab, DEV_TOKEN, rebuttal, thread)
    proc = _reply(env, real_server, note,  # type: ignore[arg-type]  # it has a base_url
                  env_vars={"REVIEWBOT_TEMPERATURE": "0", "REVIEWBOT_MAX_CONTEXT": "16384"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["action"] == "answered" and out["detail"] in ("keep", "withdraw", "fixed"), out
    answer = thread["notes"][-1]
    assert answer["author"]["username"] == "reviewbot"
    words = re.findall(r"[A-Za-z]{2,}", answer["body"].split("<!--")[0])
    assert len(words) >= 5, answer["body"]  # prose, not an empty or a cut call
    assert rebuttal not in answer["body"]
    assert (thread["notes"][0]["resolved"]) == (out["detail"] != "keep")
