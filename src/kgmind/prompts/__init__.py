"""Prompts as data (English + Chinese twins), the LLM output schemas and their tolerant parsers."""
