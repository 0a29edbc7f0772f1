"""Calibration and evaluation data sources."""
