"""Where a PyTorch model comes from and how it is loaded safely (used by export, validate,
profile and support alike)."""
