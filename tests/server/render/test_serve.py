"""What `plan` renders for a deployment: systemd units that systemd-analyze verifies (a hostile
model path stays inside its word), the JSON contract and the text that explains every number,
and Helm values."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import plan
from reviewbot_server.render.serve import helm_values, plan_json, plan_text, systemd_units
from tests.server.render.test_balancers import binary


def test_systemd_units_verify(tmp_path: Path) -> None:
    analyze = binary("systemd-analyze")
    p = plan("4xT4", load_model("Qwen2.5-Coder-7B"))
    units = systemd_units(p, vllm_bin="/bin/true")
    assert len(units) == 2
    for name, body in units.items():
        path = tmp_path / name
        path.write_text(body)
        out = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True,
                             check=False)
        assert out.returncode == 0 and "Failed" not in out.stderr, out.stderr
        for needed in ("Restart=always", "LimitNOFILE=", "Environment=CUDA_VISIBLE_DEVICES=",
                       "Environment=NCCL_P2P_DISABLE=1", "EnvironmentFile=", "TimeoutStartSec="):
            assert needed in body
        exec_line = next(x for x in body.splitlines() if x.startswith("ExecStart="))
        words = shlex.split(exec_line.removeprefix("ExecStart="))
        assert json.loads(words[words.index("--hf-overrides") + 1])["rope_parameters"]


def test_a_newline_in_the_model_path_stays_inside_its_execstart_word(tmp_path: Path) -> None:
    analyze = binary("systemd-analyze")
    model = tmp_path / "m\nExecStartPre=touch pwned"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "hidden_size": 1536, "num_attention_heads": 12,
        "num_key_value_heads": 2, "num_hidden_layers": 28, "intermediate_size": 8960,
        "vocab_size": 151936, "max_position_embeddings": 32768}))
    (body,) = systemd_units(plan("1xRTX4090", load_model(str(model))), "/bin/true").values()
    assert not any(x.startswith("ExecStartPre") for x in body.splitlines())
    assert "m\\x0aExecStartPre=touch pwned" in body
    unit = tmp_path / "reviewbot-vllm-8001.service"
    unit.write_text(body)
    out = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0 and "Failed" not in out.stderr, out.stderr


def test_json_contract_and_text_explain_every_number() -> None:
    p = plan("2xA10", load_model("Qwen2.5-Coder-7B"))
    body = plan_json(p)
    assert set(body) >= {"instances", "memory", "max_model_len", "max_concurrent_reviews",
                         "warnings"}
    assert set(body["instances"][0]) >= {"gpus", "host", "port", "argv", "env"}
    text = plan_text(p)
    for phrase in ("× utilization 0.90", "− weights", "− reserve", "KV per token per GPU = 2 × 28",
                   "--max-num-seqs", "--max-num-batched-tokens", "review(s) of 65,536"):
        assert phrase in text


def test_helm_values_carry_the_flags() -> None:
    values = helm_values(plan("1xH100", load_model("Qwen3-Coder-30B-A3B"), quantization="fp8"))
    assert "tensorParallelSize: 1" in values and "--tool-call-parser=qwen3_coder" in values
    assert '"--quantization=fp8"' in values and "modelURL:" in values


def test_helm_values_route_by_review_and_never_point_at_a_local_path(tmp_path: Path) -> None:
    cfg = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_hidden_layers": 28,
           "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944,
           "vocab_size": 152064, "max_position_embeddings": 32768}
    model_dir = tmp_path / "qwen-7b"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(cfg))
    values = helm_values(plan("2xA10", load_model(str(model_dir))))
    assert 'modelURL: "/data/qwen-7b"' in values and str(tmp_path) not in values.split("\n", 2)[2]
    assert 'routingLogic: "session"' in values and 'sessionKey: "x-reviewbot-review"' in values
