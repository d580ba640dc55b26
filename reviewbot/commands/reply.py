"""`reviewbot reply`: answer one note on a merge request, as the listener does for a note
event (from a laptop, a CI job or a test)."""

from __future__ import annotations

import json

import click

from reviewbot import config
from reviewbot.commands.forge import forge_order
from reviewbot.commands.review import engine_options
from reviewbot.conversation.learnings import LearningStore
from reviewbot.engine.passes import Passes


@click.command()
@click.option("--mr", type=click.IntRange(min=1), required=True, help="GitLab merge request IID.")
@click.option("--project", help="GitLab project ID or path (default: $CI_MERGE_REQUEST_PROJECT_ID).")
@click.option("--note", "note_id", type=click.IntRange(min=1), required=True,
              help="The id of the note to answer.")
@click.option("--gitlab-url", help="GitLab URL (default: $CI_SERVER_URL or https://gitlab.com).")
@click.option("--gitlab-token", help="GitLab token (default: $REVIEWBOT_GITLAB_TOKEN, $GITLAB_TOKEN).")
@click.option("--ca-file", help="A CA bundle to verify TLS with (a private CA).")
@click.option("--db", metavar="PATH|URL",
              help="Keep dismissals as learnings in this database (the listener's --db or "
                   "its postgresql:// queue URL).")
@engine_options
def reply(mr: int, project: str | None, note_id: int, db: str | None, config_path: str | None,
          **flags: object) -> None:
    """Answer a note addressed to the bot, or run the command it gives. Prints what was done
    as JSON; exit 0 when done (or when the note was not for the bot), 3 when no usable
    answer came back."""
    from reviewbot import service
    from reviewbot.engine.build import make_engine

    order = forge_order(flags, config_path, mr=mr, pr=None, project=project, repo=None)
    config.check_paths(order.settings)

    def passes() -> Passes:  # made only when a question needs the model
        return make_engine(order.settings).passes

    store = LearningStore.open(db) if db else None
    response = service.answer(order, note_id, passes, lambda: make_engine(order.settings).review,
                              store)
    click.echo(json.dumps({"action": response.action, "detail": response.detail}))
