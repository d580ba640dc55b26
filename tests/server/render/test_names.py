"""The affinity header as each config names it: nginx lower-cases a request header and turns
its dashes into underscores behind `$http_`; HAProxy matches the name itself."""

from __future__ import annotations

from reviewbot_server.render.names import AFFINITY_HEADER, AFFINITY_NGINX_VAR


def test_nginx_names_the_header_by_its_rule() -> None:
    assert AFFINITY_HEADER == "X-Reviewbot-Review"
    assert AFFINITY_NGINX_VAR == "$http_x_reviewbot_review"
