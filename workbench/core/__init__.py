"""Headless quantization engine. Never imports Qt (checked by import-linter in CI)."""
