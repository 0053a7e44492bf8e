"""A seeded fuzz campaign over every reader the CLI has (tests/core/test_fuzz.py runs it in CI).

Each generator builds its own inputs — small real models, traces, engine reports, settings,
arrays and PyTorch archives — and mutates them; ``runner`` feeds each case to the command or
loader that reads it, with a time cap per case and a memory cap per process, and judges the
ending: success, or exit 1 with one sentence naming the file. Never a traceback, a hang, a
MemoryError or a marker file from a hostile pickle.
"""
