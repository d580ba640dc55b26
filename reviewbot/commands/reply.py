"""`reviewbot reply`: answer one comment on a merge or pull request, as the listener does for a
note or comment event (from a laptop, a CI job or a test)."""

from __future__ import annotations

import json

import click

from reviewbot import config
from reviewbot.commands.options import database_option, engine_options, secret_option
from reviewbot.conversation.learnings import LearningStore
from reviewbot.engine.passes import Passes
from reviewbot.errors import UsageError
from reviewbot.flow.trust import cli_order


@click.command()
@click.option("--mr", type=click.IntRange(min=1), help="GitLab merge request IID.")
@click.option("--project", help="GitLab project ID or path (default: $CI_MERGE_REQUEST_PROJECT_ID).")
@click.option("--note", "note_id", type=click.IntRange(min=1),
              help="GitLab: the id of the note to answer.")
@click.option("--pr", type=click.IntRange(min=1), help="GitHub pull request number.")
@click.option("--repo", help="GitHub OWNER/NAME (default: $GITHUB_REPOSITORY).")
@click.option("--comment", "comment_id", type=click.IntRange(min=1),
              help="GitHub: the id of the review comment to answer.")
@click.option("--issue-comment", "issue_comment_id", type=click.IntRange(min=1),
              help="GitHub: the id of a comment on the pull request's conversation instead.")
@click.option("--gitlab-url", help="GitLab URL (default: $CI_SERVER_URL or https://gitlab.com).")
@secret_option("--gitlab-token", "REVIEWBOT_GITLAB_TOKEN")
@click.option("--github-url", help="GitHub API URL (default: $GITHUB_API_URL).")
@secret_option("--github-token", "GITHUB_TOKEN")
@click.option("--ca-file", help="A CA bundle to verify TLS with (a private CA).")
@database_option("Keep dismissals as learnings in this database (the listener's --db or "
                 "its queue URL)")
@engine_options
def reply(mr: int | None, project: str | None, note_id: int | None, pr: int | None,
          repo: str | None, comment_id: int | None, issue_comment_id: int | None,
          db: str | None, config_path: str | None, **flags: object) -> None:
    """Answer a note or comment addressed to the bot, or run the command it gives. Prints what
    was done as JSON; exit 0 when done (or when it was not for the bot), 3 when no usable
    answer came back."""
    from reviewbot.engine.build import make_engine
    from reviewbot.flow import service
    from reviewbot.forges.github.threads import ISSUE

    if (mr is None) == (pr is None):
        raise UsageError("give exactly one of --mr (with --note) or --pr (with --comment or "
                         "--issue-comment)")
    comment = note_id if mr is not None else comment_id or issue_comment_id
    if comment is None or (pr is not None and (note_id or (comment_id and issue_comment_id))) \
            or (mr is not None and (comment_id or issue_comment_id)):
        raise UsageError("--mr takes --note; --pr takes one of --comment or --issue-comment")
    order = cli_order(flags, config_path, mr=mr, pr=pr, project=project, repo=repo)
    config.check_paths(order.settings)

    def passes() -> Passes:  # made only when a question needs the model
        return make_engine(order.settings).passes

    store = LearningStore.open(db) if db else None
    response = service.answer(order, comment, passes, lambda: make_engine(order.settings).review,
                              store, ISSUE if issue_comment_id else None)
    click.echo(json.dumps({"action": response.action, "detail": response.detail}))
