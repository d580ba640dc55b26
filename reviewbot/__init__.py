"""reviewbot: reviews merge/pull requests with the team's own vLLM server."""

__version__ = "0.1.0"
