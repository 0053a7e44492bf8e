"""Widgets and helpers every panel may use (no panel imports another panel)."""
