"""The banners' colours, one set for every panel: a verdict reads the same everywhere (green
passes, red fails, amber warns, grey is waiting)."""

from __future__ import annotations

OK_STYLE = "background:#c8e6c9; color:#1b5e20; padding:6px"
BAD_STYLE = "background:#ffcdd2; color:#b71c1c; padding:6px"
WARN_STYLE = "background:#ffe0b2; color:#8a4b00; padding:6px"
IDLE_STYLE = "background:#eeeeee; color:#424242; padding:6px"
BOLD = "; font-weight:bold"  # a verdict banner (Validate, Export) adds it
# a job's verdict (core/results.py: Verdict.severity) → its banner
VERDICT_STYLES = {"pass": OK_STYLE, "warn": WARN_STYLE, "fail": BAD_STYLE}
