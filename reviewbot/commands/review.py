"""`reviewbot review`: a local diff or git range, a GitLab MR, or a GitHub PR."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import click

from reviewbot import choices, config, diff, git
from reviewbot.commands.options import database_option, emit, engine_options, secret_option
from reviewbot.context import Context
from reviewbot.diff import ChangeSet
from reviewbot.engine.progress import ChunkProgress
from reviewbot.errors import BackendError, DiffError, UsageError
from reviewbot.flow import gathering
from reviewbot.result import ReviewResult, exit_code
from reviewbot.scanners import read_files


def _read_diff(path: str | None, git_range: str | None, max_mb: float) -> bytes:
    """The diff's bytes, refused beyond `max_mb` before it is parsed (a file or stdin is read
    no further than the limit)."""
    if path and git_range:
        raise UsageError("give either --diff or --git, not both")
    if git_range:
        data = git.from_git(git_range)
    else:
        limit = int(max_mb * 2**20) + 1
        try:
            if path == "-":
                data = sys.stdin.buffer.read(limit)
            else:
                with open(path, "rb") as handle:  # type: ignore[arg-type]
                    data = handle.read(limit)
        except OSError as exc:
            raise DiffError(f"cannot read diff file {path}: {exc.strerror}") from None
    diff.check_raw(data, max_mb)
    return data


T = TypeVar("T")


def _or_report(work: Callable[[], T], changes: ChangeSet, settings: config.Settings) -> T:
    """`work()`; when the model server fails it (exit 3, or 2 for a model it does not serve),
    the report is still written, saying so, before the one-line error: a CI job's Code Quality
    or SARIF artifact is never lost."""
    from reviewbot.report import render

    try:
        return work()
    except BackendError as exc:
        failed = ReviewResult.failed(changes, str(exc))
        emit(render(failed, settings.output, color=_tty(settings)), settings.output_file)
        raise


def _tell_when_written(result: ReviewResult, output_file: str | None) -> None:
    """With the report in a file (a CI artifact), the job log still says what happened."""
    if output_file:
        click.echo(f"{result.summary.rstrip()}\nreport written to {output_file}", err=True)


def _tty(settings: config.Settings) -> bool:
    return settings.output_file is None and sys.stdout.isatty()


def _one_source(local: bool, mr: int | None, pr: int | None, intent: bool,
                db: str | None) -> None:
    """Exactly one thing to review, and only the flags that go with it."""
    if sum([local, mr is not None, pr is not None]) != 1:
        raise UsageError("give exactly one of --diff, --git, --mr or --pr")
    if intent and not local:
        raise UsageError("--title and --description go with --diff or --git (a merge or pull "
                         "request brings its own)")
    if db is not None and local:  # it would record nothing, and say nothing
        raise UsageError("--db records reviews of merge or pull requests (--mr or --pr); a "
                         "review of --diff or --git is not recorded")


@click.command()
@click.option("--diff", "diff_path", metavar="PATH|-", help="A unified diff file, or - for stdin.")
@click.option("--git", "git_range", metavar="RANGE", help="Review `git diff RANGE` of this repo.")
@click.option("--mr", type=click.IntRange(min=1), help="GitLab merge request IID.")
@click.option("--project", help="GitLab project ID or path (default: $CI_MERGE_REQUEST_PROJECT_ID, "
              "then $CI_PROJECT_ID).")
@click.option("--gitlab-url", help="GitLab URL (default: $CI_SERVER_URL or https://gitlab.com).")
@secret_option("--gitlab-token", "REVIEWBOT_GITLAB_TOKEN")
@click.option("--pr", type=click.IntRange(min=1), help="GitHub pull request number.")
@click.option("--repo", help="GitHub OWNER/NAME (default: $GITHUB_REPOSITORY).")
@click.option("--github-url", help="GitHub API URL (default: $GITHUB_API_URL).")
@secret_option("--github-token", "GITHUB_TOKEN")
@click.option("--ca-file", help="Forges: a CA bundle to verify TLS with (a private CA).")
@click.option("--ssl-verify/--no-ssl-verify", default=None,
              help="Forges: verify TLS certificates (default: on; off only for testing).")
@click.option("--mode", type=click.Choice(["full", "incremental"]), help="Re-run scope on a forge.")
@click.option("--dry-run", is_flag=True, help="Print what would be posted; post nothing.")
@click.option("--output", type=click.Choice(choices.OUTPUTS), help="Output format (text).")
@click.option("--output-file", help="Write the output here instead of stdout.")
@click.option("--fail-on", type=click.Choice(choices.FAIL_ON),
              help="Exit 1 when a finding has this severity or higher.")
@click.option("--min-confidence", type=float, help="Forges: hold back findings below (0.5).")
@click.option("--inline-min-severity", type=click.Choice(choices.FAIL_ON[:-1]),
              help="Forges: findings below go to the summary note (major).")
@click.option("--max-inline-comments", type=int, help="Forges: inline threads per review (10).")
@click.option("--title", help="With --diff or --git: the change's title, shown to the model.")
@click.option("--description",
              help="With --diff or --git: the change's description, shown to the model.")
@click.option("--sarif-in", multiple=True, metavar="FILE",
              help="A scanner's SARIF 2.1.0 results to triage (repeatable).")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
@database_option("Forges: record the review in this database's history (the listener's "
                 "--db or its queue URL)")
@engine_options
def review(diff_path: str | None, git_range: str | None, mr: int | None, project: str | None,
           pr: int | None, repo: str | None, dry_run: bool, no_progress: bool,
           title: str | None, description: str | None, config_path: str | None,
           db: str | None, **flags: object) -> None:
    """Review a diff, a git range, a GitLab MR or a GitHub PR."""
    _one_source(bool(diff_path or git_range), mr, pr, title is not None or
                description is not None, db)
    from reviewbot.report.progress import progress as make_progress

    progress = make_progress(enabled=not no_progress)
    if mr is not None or pr is not None:
        _review_change(flags, config_path, mr, pr, project, repo, dry_run, db, progress)
    else:
        _review_local(flags, config_path, diff_path, git_range, title, description, progress)


def _review_change(flags: dict[str, object], config_path: str | None, mr: int | None,
                   pr: int | None, project: str | None, repo: str | None, dry_run: bool,
                   db: str | None, progress: ChunkProgress) -> None:
    """A GitLab MR or a GitHub PR, through the flow's service; exits with its code."""
    from reviewbot.engine.build import make_engine
    from reviewbot.flow import service
    from reviewbot.flow.trust import cli_order
    from reviewbot.history import HistoryStore
    from reviewbot.report import render

    order = cli_order(flags, config_path, mr=mr, pr=pr, project=project, repo=repo,
                      dry_run=dry_run)
    settings = order.settings
    config.check_paths(settings)
    scanner = read_files(settings.sarif_in)

    def reviewer(changes: ChangeSet, context: Context | None = None) -> ReviewResult:
        # made when the review starts: a forge usage error (no token, a bad --repo) is
        # reported before the model server is asked anything
        return make_engine(settings, progress).review(
            changes, replace(context or Context(), scanner=scanner))

    history = HistoryStore.open(db) if db else None
    run, code = _or_report(lambda: service.review(order, reviewer, history=history),
                           ChangeSet(), settings)
    if run.notice:
        click.echo(f"reviewbot: {run.notice}", err=True)
    if dry_run and settings.output == "json":  # exactly what would be posted
        emit(json.dumps(run.to_dict(), indent=2, ensure_ascii=False) + "\n", settings.output_file)
    else:
        emit(render(run.result, settings.output, color=_tty(settings)), settings.output_file)
    _tell_when_written(run.result, settings.output_file)
    raise SystemExit(code)


def _review_local(flags: dict[str, object], config_path: str | None, diff_path: str | None,
                  git_range: str | None, title: str | None, description: str | None,
                  progress: ChunkProgress) -> None:
    """A diff file or a git range of this repository; exits with the review's code."""
    from reviewbot.engine.build import make_engine
    from reviewbot.flow.trust import Trust
    from reviewbot.report import render

    settings = Trust.for_local(flags, config_path, git_range).base()
    config.check_paths(settings)
    scanner = read_files(settings.sarif_in)
    changes = diff.parse(_read_diff(diff_path, git_range, settings.max_diff_mb))
    result = _or_report(
        lambda: make_engine(settings, progress).review(changes, replace(
            gathering.for_local(git_range, title, description), scanner=scanner)),
        changes, settings)
    emit(render(result, settings.output, color=_tty(settings)), settings.output_file)
    _tell_when_written(result, settings.output_file)
    raise SystemExit(exit_code(result.complete, result.worst(), settings.fail_on))
