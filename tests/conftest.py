"""Pytest fixtures and hooks shared by the whole suite; the helpers are in tests/helpers/."""
