"""Error classes shared by the CLI, the worker and the GUI.

A ``UserError`` is the user's to fix (bad file, impossible setting): it is shown as one sentence,
never with a traceback. Everything else is a bug and keeps its traceback for the details dialog.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input: shown as a message, never as a traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ModelLoadError(UserError):
    """A file that cannot be opened as an ONNX model."""


class ProjectFileError(UserError):
    """A project file that cannot be read or written."""


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    for noise in ("[ONNXRuntimeError] : ", "[ShapeInferenceError] ", "[TypeInferenceError] "):
        text = text.replace(noise, "")
    return text[:300]


def ort_error_text(exc: BaseException) -> str:
    """ONNX Runtime's error as words: ``[ONNXRuntimeError] : 10 : INVALID_GRAPH : Load model
    from m.onnx failed:/onnxruntime_src/…/model.cc:340 onnxruntime::Model::Model(…) This is an
    invalid model…`` → ``invalid graph: This is an invalid model…``."""
    import re

    text = " ".join(str(exc).split())
    match = re.match(r"\[ONNXRuntimeError\] : \d+ : ([A-Z_]+) : (.*)", text)
    code, rest = (match.group(1).replace("_", " ").lower(), match.group(2)) if match else ("", text)
    rest = re.sub(r"^Load model from \S+ failed:", "", rest)
    rest = re.sub(r"^\S*onnxruntime_src\S*:\d+ \S+\(.*?\)\s*", "", rest)
    runs = list(re.finditer(r"Non-zero status code returned while running (\S+) node\. "
                            r"Name:'([^']*)' Status Message: ", rest))  # fmt: skip
    if runs:  # a run's failure: the innermost node (inside an If or Loop), then its kernel's words
        inner = runs[-1]
        said = rest[inner.end() :]
        said = re.sub(r"^\S*onnxruntime_src\S*:\d+ .*?\)\s*(?=\[ONNXRuntimeError\]|\w)", "",
                      said)  # fmt: skip
        said = re.sub(r"^\S+\.(?:h|cc|cpp):\d+ \S+\(.*?\) ", "", said)  # a bare source line
        where = f"{inner.group(2)} " if inner.group(2) else ""
        inside = f" inside {runs[0].group(1)} {runs[0].group(2)}".rstrip() if len(runs) > 1 else ""
        rest = f"node {where}({inner.group(1)}){inside}: {said}"
    rest = re.sub(r"\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ", "", rest)  # a nested one
    return ((f"{code}: " if code else "") + rest.strip())[:400]


def _subject(params: object) -> str:
    """The file a job was reading, as its name (a request's model or path)."""
    if isinstance(params, dict):
        for key in ("model", "path"):
            value = params.get(key)
            if isinstance(value, str) and value:
                return value.replace("\\", "/").rsplit("/", 1)[-1]
    return "the model"


def explain_failure(exc: BaseException, params: object = None) -> UserError | None:
    """A library's exception on a file that library refused (ONNX Runtime, onnx's checker and
    shape inference, a text that is not UTF-8, structure nested too deep, a size that
    overflows) as a sentence naming the file; None for anything else (a bug: it keeps its
    traceback). Raw class names ('Fail: …') never reach the user as the sentence."""
    subject = _subject(params)
    module = type(exc).__module__ or ""
    name = type(exc).__name__
    if module.startswith("onnxruntime"):
        what = "load" if "Load model" in str(exc) else "run"
        return UserError(
            f"ONNX Runtime could not {what} {subject}: {ort_error_text(exc)}",
            "The model is malformed or uses something this ONNX Runtime does not support.",
        )
    if module.startswith("onnx") and name in ("ValidationError", "InferenceError"):
        return UserError(f"{subject} is not a valid ONNX model: {_first_line(exc)}")
    if isinstance(exc, UnicodeError):
        return UserError(f"{subject}: a name or text in it is not UTF-8 ({_first_line(exc)}).")
    if isinstance(exc, RecursionError):
        return UserError(f"{subject} is nested too deeply to read (subgraphs or functions).")
    too_big = ("array is too big", "Maximum allowed dimension", "maximum supported dimension")
    if isinstance(exc, OverflowError | MemoryError) or (
        isinstance(exc, ValueError) and any(sign in str(exc) for sign in too_big)
    ):
        return UserError(
            f"{subject}: a dimension or size in it is too large to handle ({_first_line(exc)})."
        )
    return None
