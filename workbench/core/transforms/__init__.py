"""Model passes that change float weights before writing: SmoothQuant, bias corrections."""
