"""Dialogs: preferences, environment, error details."""
