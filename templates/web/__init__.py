"""The listener's HTML pages (jinja2, autoescaped): reviewbot.webhook.dashboard."""
