"""onnxruntime sessions of in-memory models."""
