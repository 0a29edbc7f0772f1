"""Files: atomic writes, external data kept in the user's file, model saving, tensor sizes."""
