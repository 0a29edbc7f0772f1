"""Searching recipes: mixed-precision autotune."""
