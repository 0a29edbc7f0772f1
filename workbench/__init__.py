"""Workbench: post-training quantization of ONNX models, headless core + CLI + Qt app."""

__version__ = "0.1.0"
