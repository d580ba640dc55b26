"""Keeping instances up: the supervisor, its canary, specs and status app."""
