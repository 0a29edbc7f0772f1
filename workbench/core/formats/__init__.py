"""Number formats: quantized dtypes, scale / zero_point, quantize / dequantize, MX block formats."""
