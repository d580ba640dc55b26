"""Tests (a package, mirroring the source layout: imports are absolute, no sys.path edits)."""
