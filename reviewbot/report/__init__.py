"""Renderers of a review result."""
