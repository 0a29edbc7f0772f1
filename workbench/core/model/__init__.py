"""Loading a model and preparing it for quantization, one preparation step per module."""
