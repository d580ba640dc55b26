"""Measuring a running backend: check, load bench, model integrity."""
