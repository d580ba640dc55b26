"""The HTTP names both sides use, spelled once on each side since neither imports the other."""

from __future__ import annotations

from reviewbot.headers import AFFINITY_HEADER as client
from reviewbot_server.render.names import AFFINITY_HEADER as server


def test_the_affinity_header_is_spelled_the_same_on_both_sides() -> None:
    assert client == server
