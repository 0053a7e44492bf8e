"""Dock panels: one module per panel."""
