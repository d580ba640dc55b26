"""The balancer and service configs come from templates (server/reviewbot_server/templates/): their
output is held byte for byte against the files the f-string renderers wrote before the move
(tests/server/render/golden/), for one card, a TP=4 plan and a four-machine plan, with and without
the API-key check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import Plan, plan
from reviewbot_server.render.balancers import LbSettings, haproxy_cfg, nginx_conf
from reviewbot_server.render.serve import systemd_text

GOLDEN = Path(__file__).with_name("golden")
PLANS: dict[str, Callable[[], Plan]] = {
    "one-card": lambda: plan("1xRTX4090", load_model("Qwen2.5-Coder-7B")),
    "tp4": lambda: plan("4xT10", load_model("Qwen3.5-35B-A3B"), quantization="gptq",
                        tensor_parallel_size=4),
    "four-nodes": lambda: plan("2xA10", load_model("Qwen2.5-Coder-7B"), nodes=4),
}
RENDERERS: dict[str, Callable[[Plan], str]] = {
    "nginx.conf": nginx_conf,
    "keyless.nginx.conf": lambda p: nginx_conf(p, LbSettings(require_key=False)),
    "haproxy.cfg": haproxy_cfg,
    "keyless.haproxy.cfg": lambda p: haproxy_cfg(p, LbSettings(require_key=False)),
    "systemd": systemd_text,
}


@pytest.mark.parametrize("name", PLANS)
@pytest.mark.parametrize("kind", RENDERERS)
def test_rendered_configs_are_byte_identical_to_the_golden_files(name: str, kind: str) -> None:
    expected = (GOLDEN / f"{name}.{kind}").read_text(encoding="utf-8")
    assert RENDERERS[kind](PLANS[name]()) == expected


def test_a_model_name_cannot_break_out_of_its_line() -> None:
    """The plan's model name is the one free text in these files: a newline in it must not
    start a directive of its own."""
    p = PLANS["one-card"]()
    from dataclasses import replace

    evil = replace(p, model=replace(p.model, name="m\n    include /etc/shadow;"))
    for kind, render in RENDERERS.items():
        text = render(evil)
        assert "\n    include /etc/shadow;" not in text, kind
