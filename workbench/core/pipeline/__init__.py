"""The quantize pipeline of passes, and project files that replay it."""
