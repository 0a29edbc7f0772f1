"""Measuring a quantized model: per-unit error, evaluation, task metrics, cost, sensitivity sweep, executors."""
