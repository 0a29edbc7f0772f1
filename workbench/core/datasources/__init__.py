"""Kinds of calibration / evaluation data; :func:`workbench.core.data.open_data` picks one."""
