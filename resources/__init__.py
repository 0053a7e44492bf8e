"""Bundled resources: samples, data tables (with attribution), icons."""
