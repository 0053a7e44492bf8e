"""Which trtexec options exist in which TensorRT release — the table the build settings obey.

Sources: trtexec ``--help`` of each release as documented by NVIDIA, and the migration guides
"Migrating trtexec Usage from TensorRT 8.x to 10.x" and "… 10.x to 11.x"
(docs.nvidia.com/deeplearning/tensorrt/11.4.1/api/migration/tensorrt-10x-to-11x-trtexec.html):
11.x removed every precision flag (``--fp16 --int8 --bf16 --fp8 --int4 --best``), ``--calib``,
the per-layer precision options and precision constraints — networks are always strongly typed,
so ``--stronglyTyped`` is implied; 10.x removed ``--workspace`` (use ``--memPoolSize``),
``--minTiming``, ``--explicitBatch`` and the Caffe/UFF options.

TensorRT-RTX (family ``"rtx"``, spelled ``rtx`` or ``rtx-1.7`` in settings) is a separate product
line: strongly typed like 11.x, built ahead of time for named compute capabilities, and its pip
wheels ship no trtexec (the SDK's ``tensorrt_rtx`` tool is a separate download), so no command
line is made for it — the Python build script is its reproducer.
"""

from __future__ import annotations

from dataclasses import dataclass

FAMILIES = ("8.6", "10", "11")  # classic TensorRT, in release order
RTX = "rtx"  # TensorRT-RTX: its own line, not ordered against the classic releases
RTX_MAJORS = (1,)  # TensorRT-RTX releases this table knows


@dataclass(frozen=True)
class Flag:
    name: str
    since: str  # family where it first exists in this table
    until: str = ""  # last family that has it ("" = still there)
    replacement: str = ""  # what to do instead where it is gone

    def available(self, family: str) -> bool:
        if family == RTX:  # no trtexec ships with TensorRT-RTX's wheels
            return False
        order = FAMILIES.index
        if order(family) < order(self.since):
            return False
        return not self.until or order(family) <= order(self.until)


_PRECISION_11 = "11.x networks are strongly typed: precision comes from the model (Q/DQ nodes)"
FLAGS = {
    f.name: f
    for f in (
        Flag("--onnx", "8.6"),
        Flag("--saveEngine", "8.6"),
        Flag("--minShapes", "8.6"),
        Flag("--optShapes", "8.6"),
        Flag("--maxShapes", "8.6"),
        Flag("--memPoolSize", "8.6"),
        Flag("--builderOptimizationLevel", "8.6"),
        Flag("--timingCacheFile", "8.6"),
        Flag("--tacticSources", "8.6"),
        Flag("--sparsity", "8.6"),
        Flag("--useDLACore", "8.6"),
        Flag("--allowGPUFallback", "8.6"),
        Flag("--hardwareCompatibilityLevel", "8.6"),
        Flag("--versionCompatible", "8.6"),
        Flag("--maxAuxStreams", "8.6"),
        Flag("--profilingVerbosity", "8.6"),
        Flag("--refit", "8.6"),
        Flag("--stripWeights", "10"),
        Flag("--skipInference", "8.6"),
        Flag("--noTF32", "8.6"),
        Flag("--exportLayerInfo", "8.6"),
        Flag("--exportProfile", "8.6"),
        Flag("--exportTimes", "8.6"),
        Flag("--separateProfileRun", "8.6"),
        Flag("--plugins", "8.6", "8.6", "--staticPlugins / --dynamicPlugins"),
        Flag("--staticPlugins", "10"),
        Flag("--stronglyTyped", "10", "10", "always on in 11.x"),
        Flag("--fp16", "8.6", "10", _PRECISION_11),
        Flag("--int8", "8.6", "10", _PRECISION_11),
        Flag("--bf16", "10", "10", _PRECISION_11),
        Flag("--fp8", "10", "10", _PRECISION_11),
        Flag("--best", "8.6", "10", _PRECISION_11),
        Flag("--calib", "8.6", "10", "calibrate offline into a Q/DQ model"),
        Flag("--precisionConstraints", "8.6", "10", _PRECISION_11),
        Flag("--layerPrecisions", "8.6", "10", _PRECISION_11),
        Flag("--layerOutputTypes", "8.6", "10", _PRECISION_11),
        Flag("--workspace", "8.6", "8.6", "--memPoolSize=workspace:N"),
    )
}


NEWEST_MAJOR = 11  # releases past this have flags this table cannot know


def family(version: str) -> str:
    """``"10.16"`` → ``"10"``, ``"8.6.1"`` → ``"8.6"``, ``"11.4"`` → ``"11"``, ``"rtx"`` or
    ``"rtx-1.7"`` → ``"rtx"``; ``ValueError`` for anything else — older than 8.6 (unsupported)
    and newer than 11.x (unknown flags) alike: 12.0 used to pass as 11 while 7.2 was refused."""
    text = version.strip().lower()
    if text == RTX:
        return RTX
    if text.startswith(RTX + "-"):
        parts = text[len(RTX) + 1 :].split(".")
        if all(p.isdigit() for p in parts) and len(parts) <= 4 and int(parts[0]) in RTX_MAJORS:
            return RTX
        raise ValueError(version)
    parts = text.split(".")
    if not all(part.isdigit() for part in parts) or len(parts) > 4:
        raise ValueError(version)
    major = int(parts[0])
    minor = int(parts[1]) if len(parts) > 1 else None
    if major == NEWEST_MAJOR:
        return "11"
    if major in (9, 10):
        return "10"
    if major == 8 and minor == 6:
        return "8.6"
    raise ValueError(version)


def is_rtx(version: str) -> bool:
    """Whether ``version`` names TensorRT-RTX (a malformed one is not)."""
    try:
        return family(version) == RTX
    except ValueError:
        return False


def release_name(version: str) -> str:
    """How a release is named to a user: "TensorRT 10.16", "TensorRT-RTX" (rtx) …"""
    if is_rtx(version):
        release = version.strip()[len(RTX) + 1 :]
        return f"TensorRT-RTX {release}".strip()
    return f"TensorRT {version}"


def flag_table() -> list[dict[str, object]]:
    """The table as rows (for the note, the docs and the panel)."""
    return [
        {
            "flag": f.name,
            **{fam: f.available(fam) for fam in FAMILIES},
            "replacement": f.replacement,
        }
        for f in FLAGS.values()
    ]
