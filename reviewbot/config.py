"""Settings: one frozen value, merged from flags > environment > .reviewbot.toml > defaults.

Which file a review trusts is decided in `reviewbot/flow/trust.py`. Every key is listed in
`docs/configuration.md`; unknown keys and wrong types are usage errors (exit 2).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from reviewbot.choices import CHOICES, ENUMS, FindingsFormat, ReviewMode
from reviewbot.errors import UsageError
from reviewbot.findings import CATEGORIES
from reviewbot.redact import redact, register_secret, register_url
from reviewbot.rules import Rule
from reviewbot.rules import parse as parse_rules
from reviewbot.secrets import require_token_shape
from reviewbot.tree import MAX_FILE_BYTES, WorkingTree


def _env(*names: str) -> dict[str, Any]:
    return {"env": names}


# every number a setting holds: a bad value is exit 2 here, not a failed review (3) later
RANGES: dict[str, tuple[float, float]] = {
    "max_context": (256, 10_000_000), "chunk_tokens": (0, 10_000_000),
    "max_output_tokens": (1, 1_000_000), "concurrency": (0, 256),
    "request_timeout": (0.1, 86_400), "review_timeout": (1, 7 * 86_400),
    "max_diff_mb": (0.01, 1024), "retries": (0, 20), "temperature": (0, 2),
    "context_lines": (0, 100), "surrounding_lines": (0, 10_000),
    "max_enclosing_lines": (0, 100_000), "max_findings_per_chunk": (1, 1000),
    "samples": (1, 16), "max_inline_comments": (0, 1000), "min_confidence": (0, 1),
    "command_min_access": (10, 50), "max_replies_per_thread": (1, 100),
    "max_archive_mb": (0, 100_000), "tree_cache_mb": (0, 10_000_000),
}


@dataclass(frozen=True)
class Settings:
    # backend
    base_url: str = field(default="http://127.0.0.1:8000/v1", metadata=_env("REVIEWBOT_BASE_URL"))
    model: str | None = field(default=None, metadata=_env("REVIEWBOT_MODEL"))
    api_key: str | None = field(default=None, metadata=_env("REVIEWBOT_API_KEY"))
    max_context: int = 65536
    chunk_tokens: int = 24_576  # prompt tokens of one review unit (measured best on the H200: docs/performance.md); 0: as many as the context holds
    max_output_tokens: int = 2048  # room for max_findings_per_chunk findings; a cut call loses them
    concurrency: int = 0  # requests in flight; 0: as many full chunks as the server's KV cache holds
    request_timeout: float = 300.0  # wall-clock seconds per request, however the bytes trickle
    review_timeout: float = 1800.0  # wall-clock seconds per review; then it is incomplete
    max_diff_mb: float = 32.0  # a larger change is refused at once (exit 2), never left running
    retries: int = 4
    priority_scheduling: bool = False  # the server schedules by priority: small reviews first
    tokenizer: str | None = None  # a tokenizer.json: counts when the server has no /tokenize, else texts
    temperature: float = 0.1
    # what to review and how
    exclude: tuple[str, ...] = ()
    fail_on_skipped: bool = False  # a skipped source file (generated marker, …) is incomplete
    review_lock_files: bool = False  # lock files' dependency changes go to the model too
    context_lines: int = 3
    # the code around each hunk, from the file at the head (when the budget has room): its
    # enclosing function or class up to max_enclosing_lines, and at least surrounding_lines
    surrounding_lines: int = 20
    max_enclosing_lines: int = 120
    max_findings_per_chunk: int = 50  # the bound; a chunk may report one per 25 changed lines
    verify: bool = True  # a second pass judges every candidate (it reuses the prompt cache)
    samples: int = 1  # finding passes per chunk (n in one request); ⌈n/2⌉ must agree
    findings_format: FindingsFormat = FindingsFormat.JSON  # docs/precision.md
    prompts_dir: str | None = None
    # what to report: the categories the schema admits; maintainability only at minor or info
    categories: tuple[str, ...] = CATEGORIES
    rules: tuple[Rule, ...] = ()  # [[rules]] paths = [globs], text = "…" (reviewbot.rules)
    linked_issues: bool = True  # forges: does the change do what the issues it closes ask
    sarif_in: tuple[str, ...] = ()  # the team's scanners' results to triage (flag or env only)
    # reporting
    output: str = "text"
    output_file: str | None = None
    fail_on: str = "never"
    # noise control on forges (the CLI outputs keep everything, marked)
    inline_min_severity: str = "major"  # below: the summary note's list, not a thread
    max_inline_comments: int = 10  # per review, ranked by severity × confidence
    min_confidence: float = 0.5  # below: held back, only counted
    # forges
    mode: ReviewMode = ReviewMode.INCREMENTAL
    gitlab_url: str = field(default="https://gitlab.com", metadata=_env("CI_SERVER_URL"))
    gitlab_token: str | None = field(
        default=None, metadata=_env("REVIEWBOT_GITLAB_TOKEN", "GITLAB_TOKEN")
    )
    github_url: str = field(default="https://api.github.com", metadata=_env("GITHUB_API_URL"))
    github_token: str | None = field(default=None, metadata=_env("GITHUB_TOKEN"))
    # whose comments are the bot's when GET /user is refused (an App installation token)
    github_bot_login: str = "github-actions[bot]"
    ssl_verify: bool = True
    ca_file: str | None = None
    # conversation: whose commands and questions the bot takes (GitLab access levels: 30 is
    # Developer, 40 Maintainer), and how often it answers in one thread
    command_min_access: int = 30
    max_replies_per_thread: int = 3
    # `pause`/`ignore` from the change's own author (off: the author cannot switch off the
    # review of their own change), and whether a learning waits for `learnings approve`
    author_commands: bool = False
    author_may_dismiss: bool = False  # the change's author resolving a thread closes it for the gate
    learnings_need_approval: bool = False
    approve_before_publish: bool = False  # findings wait as drafts until a member's `publish`
    # the repository at a merge/pull request's head when no local clone holds it: the forge's
    # archive, up to max_archive_mb unpacked (0: never downloaded), kept in tree_cache (a
    # directory; default ~/.cache/reviewbot/trees) up to tree_cache_mb for later reviews
    max_archive_mb: float = 512.0
    tree_cache: str | None = field(default=None, metadata=_env("REVIEWBOT_TREE_CACHE"))
    tree_cache_mb: float = 4096.0

    def __post_init__(self) -> None:
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise UsageError(f"{name} must be one of {', '.join(choices)}, "
                                 f"not {getattr(self, name)!r}")
        for name, enum in ENUMS.items():  # a string from a flag, a file or the environment
            object.__setattr__(self, name, enum(getattr(self, name)))
        unknown = sorted(set(self.categories) - set(CATEGORIES))
        if unknown or not self.categories:
            raise UsageError(f"categories must be some of {', '.join(CATEGORIES)}"
                             + (f", not {unknown[0]!r}" if unknown else ""))
        for name, (low, high) in RANGES.items():  # nan fails every comparison: refused too
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and low <= value <= high):
                raise UsageError(f"{name} must be between {low:g} and {high:g}, not {value!r}")
        if self.samples > 1 and self.temperature <= 0:
            raise UsageError("samples > 1 needs a temperature above 0 (vLLM refuses n > 1 with "
                             "greedy sampling)")
        if self.max_output_tokens >= self.max_context:
            raise UsageError("max_output_tokens must be smaller than max_context")
        for name in ("api_key", "gitlab_token", "github_token"):
            register_secret(getattr(self, name))
            require_token_shape(name, getattr(self, name))
        for name in ("base_url", "gitlab_url", "github_url"):
            register_url(getattr(self, name))
            _check_url(name, getattr(self, name))

    def __repr__(self) -> str:  # never show secrets, even in a debugger or a traceback
        return f"Settings(base_url={redact(self.base_url)!r}, model={self.model!r}, ...)"


def _check_url(name: str, url: str) -> None:
    """An http(s) URL with a host and a valid port, or exit 2 now (not 3 after retries)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise UsageError(f"{name} is not a valid URL: {redact(url)!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname \
            or any(c.isspace() for c in url):
        raise UsageError(f"{name} must be an http(s) URL with a host, not {redact(url)!r}")
    if name == "gitlab_url" and parts.path.rstrip("/").endswith("/api/v4"):
        raise UsageError("gitlab_url is the instance's address, without /api/v4")


def check_paths(settings: Settings) -> None:
    """Paths the review needs, checked before any model time is spent."""
    if settings.prompts_dir and not Path(settings.prompts_dir).is_dir():
        raise UsageError(f"prompts_dir {settings.prompts_dir} is not a directory")
    if settings.tokenizer and not Path(settings.tokenizer).is_file():
        raise UsageError(f"tokenizer {settings.tokenizer} is not a file")
    if settings.ca_file and not Path(settings.ca_file).is_file():
        raise UsageError(f"ca_file {settings.ca_file} is not a file")
    if settings.output_file:
        folder = Path(settings.output_file).parent
        if not folder.is_dir():
            raise UsageError(f"the folder of output_file {settings.output_file} does not exist")


_FIELDS = {f.name: f for f in fields(Settings)}
# Keys that decide where secrets go, who commands the bot, which of the machine's files are read
# or whose review goes first: never from a file an MR can change
NOT_FROM_FILES = frozenset({"base_url", "api_key", "gitlab_url", "gitlab_token", "github_url",
                            "github_token", "github_bot_login", "ssl_verify", "ca_file",
                            "prompts_dir", "tokenizer", "command_min_access", "author_commands",
                            "tree_cache", "sarif_in", "priority_scheduling"})
# the `reviewbot review` flag of each (the others: the environment only); tests check them
FLAG_OF = {"base_url": "--base-url", "api_key": "--api-key", "gitlab_url": "--gitlab-url",
           "gitlab_token": "--gitlab-token", "github_url": "--github-url",
           "github_token": "--github-token", "ssl_verify": "--ssl-verify/--no-ssl-verify",
           "ca_file": "--ca-file", "tokenizer": "--tokenizer", "sarif_in": "--sarif-in"}


def env_names(name: str) -> tuple[str, ...]:
    """REVIEWBOT_<NAME> for every key, then the key's conventional aliases (CI_SERVER_URL, …)."""
    own = "REVIEWBOT_" + name.upper()
    return (own, *(v for v in _FIELDS[name].metadata.get("env", ()) if v != own))


def _coerce(name: str, value: Any, source: str) -> Any:
    kind = str(_FIELDS[name].type)
    if name == "rules":
        return parse_rules(value, source)
    try:
        if kind.startswith("int"):
            if isinstance(value, (bool, float)):  # 65536.5 is a mistake, not 65536
                raise ValueError
            return int(value)
        if kind.startswith("float"):
            return float(value)
        if kind == "bool":
            if isinstance(value, str):
                if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise ValueError
                return value.lower() in ("1", "true", "yes")
            if not isinstance(value, bool):
                raise ValueError
            return value
        if kind.startswith("tuple"):
            if isinstance(value, str):
                return tuple(v.strip() for v in value.split(",") if v.strip())
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ValueError
            return tuple(value)
        if not isinstance(value, str):
            raise ValueError  # noqa: TRY004 - caught below: every bad value is one UsageError
        return value
    except ValueError:
        raise UsageError(f"{source}: {name} has an invalid value {value!r} ({kind})") from None


CONFIG_FILE = ".reviewbot.toml"


def load_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror}") from None
    return parse_text(text, str(path))


def parse_text(text: str, source: str) -> dict[str, Any]:
    """The settings a config file's text sets (never the keys in NOT_FROM_FILES)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {source} is not valid TOML: {exc}") from None
    section = data.get("reviewbot", data)
    if not isinstance(section, dict):
        raise UsageError(f"config file {source}: [reviewbot] is not a table")
    if section is not data and set(data) - {"reviewbot"}:
        raise UsageError(f"config file {source}: keys both at the top level and under "
                         f"[reviewbot] ({min(set(data) - {'reviewbot'})!r}); use one")
    unknown = sorted(set(section) - set(_FIELDS))
    if unknown:
        raise UsageError(f"config file {source}: unknown key {unknown[0]!r}")
    refused = sorted(set(section) & NOT_FROM_FILES)
    if refused:
        name = refused[0]
        flag = f" or {FLAG_OF[name]}" if name in FLAG_OF else ""
        raise UsageError(f"config file {source}: {name} cannot be set in a file (it decides where "
                         "secrets go, who commands the bot, which files are read or whose review "
                         f"goes first); set {env_names(name)[0]}{flag} instead")
    return {k: _coerce(k, v, source) for k, v in section.items()}


def local_values(config_path: str | None) -> dict[str, Any]:
    """What a local config file sets: `config_path`, named by the user (theirs, read as they
    say), else the working tree's `.reviewbot.toml` (untrusted: the safe reader), else nothing."""
    if config_path:
        return load_file(Path(config_path))
    if not os.path.lexists(CONFIG_FILE):
        return {}
    text = WorkingTree().read(CONFIG_FILE)
    if text is None:
        raise UsageError(f"config file {CONFIG_FILE} is not a regular file of at most "
                         f"{MAX_FILE_BYTES // 2**20} MiB (a link is not followed)")
    return parse_text(text, CONFIG_FILE)


def resolve(flags: Mapping[str, Any], env: Mapping[str, str] | None = None,
            config_path: str | None = None, *,
            file_values: Mapping[str, Any] | None = None) -> Settings:
    """Merge the four sources. `flags` holds only what the user actually passed (None = unset).

    `file_values` replaces reading a file (a forge's target-branch copy, or {} for none).
    """
    env = os.environ if env is None else env
    values = dict(file_values if file_values is not None else local_values(config_path))
    for name in _FIELDS:
        for var in env_names(name):
            if env.get(var):
                values[name] = _coerce(name, env[var], var)
                break
    for name, value in flags.items():
        if value is not None and value != ():
            values[name] = _coerce(name, value, "--" + name.replace("_", "-"))
    return Settings(**values)
