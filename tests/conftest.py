"""Shared test setup: puts ``tests/`` on ``sys.path`` so test modules can import ``entity_fakes``."""
