"""What the tests share: paths, the independent trace counter, session stores, CLI and page
runners. Pytest fixtures and hooks live in tests/conftest.py."""
