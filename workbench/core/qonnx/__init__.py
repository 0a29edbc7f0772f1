"""QONNX: reading, writing, and QDQ <-> QONNX conversion."""
