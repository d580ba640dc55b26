"""Webhook listener."""
