"""The worker subprocess: runs slow or crash-prone jobs away from the GUI.

Everything in this package is stdlib-only at import time and keeps to Python 3.9 syntax
(``ruff.toml`` here enforces it), because it runs in whatever interpreter the user selected.
"""
