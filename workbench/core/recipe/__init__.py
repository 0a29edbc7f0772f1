"""What to quantize and how: typed specs, recipes, presets, the hardware they adapt to."""
