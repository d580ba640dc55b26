"""Talking to the bot: notes addressed to it, who may command it, and its answers in threads."""
