"""Data tables for op support (derived from third-party documents, with attribution)."""
