"""Configuration is complete and strict: mistakes are exit 2 at once, before any model time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reviewbot.config import Settings, check_paths, parse_text, resolve
from reviewbot.diff import parse
from reviewbot.engine.build import make_engine
from reviewbot.errors import ContextTooSmall, UsageError
from tests.engine.test_orchestrator import make_diff
from tests.fake_openai import FakeOpenAI, Reply


@pytest.mark.parametrize("key,value,field", [
    ("FAIL_ON", "major", "fail_on"), ("EXCLUDE", "docs/*,*.snap", "exclude"),
    ("MODE", "full", "mode"), ("OUTPUT", "json", "output"), ("MAX_CONTEXT", "8192", "max_context"),
])
def test_every_key_has_a_reviewbot_variable(key: str, value: str, field: str) -> None:
    s = resolve({}, env={f"REVIEWBOT_{key}": value}, file_values={})
    got = getattr(s, field)
    assert got == (tuple(value.split(",")) if isinstance(got, tuple) else type(got)(value))


def test_top_level_keys_beside_a_table_are_an_error() -> None:
    with pytest.raises(UsageError, match="both at the top level"):
        parse_text('mode = "full"\n[reviewbot]\nfail_on = "major"\n', "x.toml")


def test_a_fractional_integer_is_an_error() -> None:
    with pytest.raises(UsageError, match="max_context"):
        parse_text("max_context = 65536.5\n", "x.toml")


@pytest.mark.parametrize("url", ["not-a-url", "ftp://host/v1", "http://127.0.0.1:99999/v1",
                                 "http:///v1"])
def test_a_malformed_base_url_is_exit_2_at_once(url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    proc = subprocess.run([sys.executable, "-m", "reviewbot", "review", "--diff", "-",
                           "--base-url", url, "--no-progress"], input=make_diff(files=1).decode(),
                          capture_output=True, text=True, timeout=30, env=env)
    assert proc.returncode == 2 and "base_url" in proc.stderr, proc.stderr


def test_paths_are_checked_before_the_review(tmp_path: Path) -> None:
    for bad in ({"tokenizer": str(tmp_path / "none.json")},
                {"prompts_dir": str(tmp_path / "none")},
                {"output_file": str(tmp_path / "no" / "such" / "out.json")}):
        with pytest.raises(UsageError):
            check_paths(Settings(**bad))  # type: ignore[arg-type]
    check_paths(Settings(output_file=str(tmp_path / "out.json")))


def test_a_401_says_the_api_key_was_rejected() -> None:
    with FakeOpenAI(lambda b, n: Reply(status=401, error="bad key"), max_model_len=8000) as srv:
        engine = make_engine(resolve({"base_url": srv.base_url, "max_output_tokens": 256},
                                     env={}, file_values={}))
        result = engine.review(parse(make_diff(files=1)))
    assert not result.complete and "rejected the API key" in result.stats.errors[0]


def test_samples_need_a_temperature_above_zero() -> None:
    """vLLM answers 400 to n > 1 at temperature 0: say so before any model time is spent."""
    import pytest

    from reviewbot.config import resolve
    from reviewbot.errors import UsageError

    with pytest.raises(UsageError, match="samples > 1 needs a temperature above 0"):
        resolve({"samples": 3, "temperature": 0.0}, env={}, file_values={})
    assert resolve({"samples": 3, "temperature": 0.5}, env={}, file_values={}).samples == 3


def test_every_key_refused_in_a_file_names_a_flag_that_exists() -> None:
    """"set X or its flag" named flags that did not exist (--ca-file, --ssl-verify)."""
    from reviewbot.commands.review import review
    from reviewbot.config import FLAG_OF, NOT_FROM_FILES

    opts = {o for p in review.params for o in [*getattr(p, "opts", []),
                                                 *getattr(p, "secondary_opts", [])]}
    for name in sorted(NOT_FROM_FILES):
        with pytest.raises(UsageError) as info:
            parse_text(f'{name} = "x"', ".reviewbot.toml")
        message = str(info.value)
        for flag in FLAG_OF.get(name, "").split("/"):
            if flag:
                assert flag in opts and flag in message, (name, flag)
        if name not in FLAG_OF:
            assert " or --" not in message, message


def test_ca_file_and_ssl_verify_have_flags(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "review", "--mr", "1", "--project", "g/p",
         "--ca-file", str(tmp_path / "missing.pem"), "--no-ssl-verify", "--config", "/dev/null"],
        capture_output=True, text=True, timeout=60,
        env={**env, "REVIEWBOT_GITLAB_TOKEN": "t0k3n-xyz"}, check=False)
    assert proc.returncode == 2 and "missing.pem" in proc.stderr, proc.stderr


@pytest.mark.parametrize("flags,env", [
    (["--temperature", "-1"], {}), (["--temperature", "nan"], {}),
    ([], {"REVIEWBOT_REQUEST_TIMEOUT": "nan"}), ([], {"REVIEWBOT_MAX_DIFF_MB": "-1"}),
    ([], {"REVIEWBOT_MAX_DIFF_MB": "0.000001"}), ([], {"REVIEWBOT_REVIEW_TIMEOUT": "inf"}),
    (["--concurrency", "100000"], {}), (["--samples", "1000"], {}),
    (["--max-context", "10"], {}), ([], {"REVIEWBOT_RETRIES": "-2"}),
])
def test_out_of_range_values_are_usage_errors_before_any_request(flags: list[str],
                                                                 env: dict[str, str]) -> None:
    """The server URL leads nowhere: a refusal here never reached it (exit 2, not 3)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "review", "--diff", "-", "--base-url",
         "http://127.0.0.1:9/v1", "--config", "/dev/null", *flags],
        input=make_diff(files=1).decode(), capture_output=True, text=True, timeout=60,
        env={**clean, **env}, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "must be between" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv,message", [
    (["--pr", "3", "--repo", "org/app"], "no GitHub token"),
    (["--pr", "3", "--repo", "not a repo"], "OWNER/NAME"),
    (["--pr", "3", "--repo", "org/app/extra"], "OWNER/NAME"),
    (["--pr", "3", "--repo", "org/.."], "OWNER/NAME"),
])
def test_github_usage_errors_are_exit_2(argv: list[str], message: str) -> None:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("REVIEWBOT_", "GITHUB", "GITLAB", "CI_"))}
    token = {} if message == "no GitHub token" else {"GITHUB_TOKEN": "t0k3n-abc"}
    proc = subprocess.run([sys.executable, "-m", "reviewbot", "review", "--config", "/dev/null",
                           "--base-url", "http://127.0.0.1:9/v1", *argv], capture_output=True,
                          text=True, timeout=60, env={**clean, **token}, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", ["api_key", "gitlab_token", "github_token"])
def test_a_token_pasted_with_its_line_end_is_named(name: str) -> None:
    with pytest.raises(UsageError, match=f"{name} holds a space, newline") as info:
        resolve({name: "glpat-abcdefghijklmnop\n"}, env={}, file_values={})
    assert "abcdefgh" not in str(info.value)  # the token itself is never said


def test_the_gitlab_api_path_is_not_the_instance_url() -> None:
    with pytest.raises(UsageError, match="without /api/v4"):
        resolve({"gitlab_url": "https://gitlab.example.com/api/v4/"}, env={}, file_values={})


def test_a_url_with_a_password_is_refused_without_saying_it() -> None:
    with pytest.raises(UsageError, match="gitlab_url must be an http") as info:
        resolve({"gitlab_url": "ftp://user:hunter2secret@host"}, env={}, file_values={})
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("argv,option", [
    (["review", "--mr", "-3"], "--mr"), (["review", "--pr", "0"], "--pr"),
    (["reply", "--mr", "0", "--note", "1"], "--mr"),
    (["webhook", "--port", "99999"], "--port"), (["server", "up", "--port", "70000"], "--port"),
])
def test_numbers_out_of_range_are_usage_errors(argv: list[str], option: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    proc = subprocess.run([sys.executable, "-m", "reviewbot", *argv], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 2 and option in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_context_too_small_names_the_setting_to_raise() -> None:
    with FakeOpenAI(lambda b, n: Reply(tool_args={"summary": "", "findings": []}),
                    max_model_len=300) as srv:
        engine = make_engine(resolve({"base_url": srv.base_url, "max_output_tokens": 64,
                                      "max_context": 300}, env={}, file_values={}))
        with pytest.raises(ContextTooSmall, match=r"give --max-context at least \d+"):
            engine.review(parse(make_diff(files=1)))


def test_findings_format_is_one_of_the_four_modes() -> None:
    with pytest.raises(UsageError, match="findings_format must be one of tool, reason, two-step, json, not 'xml'"):
        resolve({}, env={}, file_values=parse_text('findings_format = "xml"', ".reviewbot.toml"))
    assert resolve({"findings_format": "json"}, env={}, file_values={}).findings_format == "json"
