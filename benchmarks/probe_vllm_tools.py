"""Probe how a vLLM server bounds a findings tool call: tool_choice × strict × schema limits.

    python benchmarks/probe_vllm_tools.py --base-url http://127.0.0.1:8000 [--reps 3]

For each variant it sends the same review-shaped request and records latency, finish_reason,
completion tokens, whether a tool call came back, whether its arguments parse and validate,
and how much of the output is whitespace. Results: a table on stdout, JSON with --output.
Findings are in docs/notes-vllm-cpu-probe.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import jsonschema

PATHS = ["src/app.py", "src/util.py"]
FINDING = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "enum": PATHS},
        "line": {"type": "integer", "minimum": 1, "maximum": 40},
        "severity": {"enum": ["info", "minor", "major", "critical"]},
        "title": {"type": "string", "maxLength": 120},
        "body": {"type": "string", "maxLength": 800},
    },
    "required": ["path", "line", "severity", "title", "body"],
    "additionalProperties": False,
}
PARAMETERS = {
    "type": "object",
    "properties": {"findings": {"type": "array", "maxItems": 5, "items": FINDING}},
    "required": ["findings"],
    "additionalProperties": False,
}
DIFF = """--- a/src/app.py
+++ b/src/app.py
@@ -10,3 +10,4 @@ def total(items):
     s = 0
     for i in items:
-        s += i.price
+        s += i.price * i.qty
+    return s / len(items)
"""
MESSAGES = [
    {"role": "system", "content": "You are a code reviewer. Report findings with the tool."},
    {"role": "user", "content": f"Review this diff:\n{DIFF}"},
]


def _schema(variant: str) -> dict[str, object]:
    schema = copy.deepcopy(PARAMETERS)
    item = schema["properties"]["findings"]["items"]  # type: ignore[index]
    if variant == "nolimits":
        for key in ("title", "body"):
            item["properties"][key].pop("maxLength")
    elif variant == "pattern":  # no newline, bounded by the regex itself
        item["properties"]["title"]["pattern"] = r"^[A-Za-z0-9 ,.:'()_-]{1,80}$"
        item["properties"]["body"]["pattern"] = r"^[^\n]{1,400}$"
    elif variant == "pattern_unanchored":
        item["properties"]["title"]["pattern"] = r"[A-Za-z0-9 ,.:'()_-]{1,80}"
        item["properties"]["body"]["pattern"] = r"[^\n]{1,400}"
    elif variant == "maxitems1":
        schema["properties"]["findings"]["maxItems"] = 1  # type: ignore[index]
    return schema


def _tool(schema: dict[str, object], strict: bool | None) -> dict[str, object]:
    function: dict[str, object] = {
        "name": "report_findings",
        "description": "Report the review findings.",
        "parameters": schema,
    }
    if strict is not None:
        function["strict"] = strict
    return {"type": "function", "function": function}


@dataclass
class Result:
    variant: str
    latency_s: float
    status: int
    finish_reason: str | None
    completion_tokens: int | None
    tool_call: bool
    args_null: bool
    args_parse: bool
    args_valid: bool
    n_findings: int | None
    whitespace_frac: float
    error: str = ""


def _request(mode: str, strict: bool | None, schema_variant: str) -> dict[str, object]:
    schema = _schema(schema_variant)
    body: dict[str, object] = {"messages": MESSAGES}
    if mode == "response_format":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "findings", "schema": schema, "strict": True},
        }
        return body
    body["tools"] = [_tool(schema, strict)]
    body["tool_choice"] = (
        {"type": "function", "function": {"name": "report_findings"}}
        if mode == "named"
        else mode
    )
    return body


def _measure(
    client: httpx.Client, url: str, model: str, name: str, body: dict[str, object],
    schema: dict[str, object], max_tokens: int, temperature: float | None,
) -> Result:
    payload = {**body, "model": model, "max_tokens": max_tokens}
    if temperature is not None:
        payload["temperature"] = temperature
    start = time.monotonic()
    resp = client.post(f"{url}/v1/chat/completions", json=payload)
    latency = time.monotonic() - start
    if resp.status_code != 200:
        return Result(name, latency, resp.status_code, None, None, False, False, False, False,
                      None, 0.0, resp.text[:200])
    data = resp.json()
    choice = data["choices"][0]
    message = choice["message"]
    calls = message.get("tool_calls") or []
    raw = calls[0]["function"]["arguments"] if calls else (message.get("content") or "")
    parsed: object = None
    parse_ok = valid = False
    try:
        parsed = json.loads(raw)
        parse_ok = True
        jsonschema.validate(parsed, schema)
        valid = True
    except json.JSONDecodeError:
        pass
    except jsonschema.ValidationError:
        pass
    text = raw or ""
    ws = sum(ch.isspace() for ch in text) / len(text) if text else 0.0
    findings = parsed.get("findings") if isinstance(parsed, dict) else None
    return Result(
        name, round(latency, 2), 200, choice.get("finish_reason"),
        data["usage"]["completion_tokens"], bool(calls), raw.strip() == "null",
        parse_ok, valid, len(findings) if isinstance(findings, list) else None, round(ws, 2),
    )


VARIANTS = [
    # (mode, strict, schema variant)
    ("required", None, "base"), ("required", True, "base"),
    ("named", None, "base"), ("named", True, "base"),
    ("auto", None, "base"), ("auto", True, "base"),
    ("named", True, "nolimits"), ("named", True, "pattern"), ("named", True, "maxitems1"),
    ("response_format", None, "base"), ("response_format", None, "pattern"),
    ("named", True, "pattern_unanchored"), ("response_format", None, "pattern_unanchored"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="server root, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--temperatures", default="0,1", help="comma list; 'default' = unset")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--only", default="", help="comma list of substrings of variant names")
    args = parser.parse_args()
    url = args.base_url.rstrip("/")
    temps = [None if t == "default" else float(t) for t in args.temperatures.split(",")]
    results: list[Result] = []
    with httpx.Client(timeout=300) as client:
        model = args.model or client.get(f"{url}/v1/models").json()["data"][0]["id"]
        only = [o for o in args.only.split(",") if o]
        for mode, strict, variant in VARIANTS:
            for temp in temps:
                name = f"{mode}/strict={strict}/{variant}/T={temp}"
                if only and not any(o in name for o in only):
                    continue
                body = _request(mode, strict, variant)
                for _ in range(args.reps):
                    r = _measure(client, url, model, name, body, _schema(variant),
                                 args.max_tokens, temp)
                    results.append(r)
                    print(json.dumps(asdict(r)), flush=True)
    print()
    print(f"{'variant':48} {'lat p50':>7} {'fin':>10} {'tok':>5} {'call':>4} {'null':>4} "
          f"{'parse':>5} {'valid':>5} {'ws':>4}")
    for name in dict.fromkeys(r.variant for r in results):
        rs = [r for r in results if r.variant == name]
        fins = ",".join(sorted({str(r.finish_reason) for r in rs}))
        print(f"{name:48} {statistics.median(r.latency_s for r in rs):7.2f} {fins:>10} "
              f"{statistics.median(r.completion_tokens or 0 for r in rs):5.0f} "
              f"{sum(r.tool_call for r in rs):>2}/{len(rs)} {sum(r.args_null for r in rs):>4} "
              f"{sum(r.args_parse for r in rs):>5} {sum(r.args_valid for r in rs):>5} "
              f"{statistics.median(r.whitespace_frac for r in rs):4.2f}")
    if args.output:
        args.output.write_text(json.dumps([asdict(r) for r in results], indent=1))


if __name__ == "__main__":
    main()
