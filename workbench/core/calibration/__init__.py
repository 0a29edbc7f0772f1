"""Running samples through the instrumented model into streaming observers."""
