"""Sizing: hardware and model catalogs, memory, topology, the planner and its notes."""
