"""What an (already-quantized) model holds: reports and quantization parameters."""
