"""Forge adapters: GitLab, GitHub, local."""
