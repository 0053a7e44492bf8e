"""Derive ``tensorrt_onnx_operators.json`` from onnx-tensorrt's ``operators.md`` tables.

    python resources/support/build_tensorrt_table.py ../shared/artifacts/onnx-tensorrt-operators-md

Source: https://github.com/onnx/onnx-tensorrt (Apache-2.0), ``operators.md`` (5.1-7.1) and
``docs/operators.md`` (7.2.1+). The JSON keeps, per TensorRT version, the supported flag, types
and restriction text of every operator row, the opset range the document states, the branch and
the commit it was read from.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RANGE = re.compile(r"inclusive range of opset (\d+) to opset (\d+)", re.IGNORECASE)
UP_TO = re.compile(r"up to opset (\d+)", re.IGNORECASE)


def parse_table(text: str) -> dict[str, dict[str, str]]:
    ops: dict[str, dict[str, str]] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None if not line.strip() else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            if cells and "operator" in cells[0].lower():
                header = [c.lower() for c in cells]
            continue
        if set(cells[0]) <= {"-", ":", ""}:
            continue
        row = dict(zip(header, cells, strict=False))
        name = cells[0].strip("` ")
        supported = (row.get("supported") or row.get("supported?") or "").upper()
        types = row.get("supported types", "")
        notes = row.get("restrictions") or row.get("notes") or ""
        ops[name] = {
            "supported": supported[:1] if supported else "?",
            "types": types,
            "restrictions": notes,
        }
    return ops


def commits_from_manifest(manifest: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in manifest.read_text().splitlines():
        match = re.match(r"\| (operators_[\w.\-]+\.md) \| ([0-9a-f]{7,40}) \|", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def build(folder: Path) -> dict[str, object]:
    manifest = folder.parent / "MANIFEST.md"
    commits = commits_from_manifest(manifest) if manifest.exists() else {}
    versions: dict[str, object] = {}
    for path in sorted(folder.glob("operators_*.md")):
        branch = path.stem.removeprefix("operators_")
        version = branch.removesuffix("-GA")
        text = path.read_text(encoding="utf-8")
        if match := RANGE.search(text):
            opset = [int(match.group(1)), int(match.group(2))]
        elif match := UP_TO.search(text):
            opset = [1, int(match.group(1))]
        else:
            opset = [1, 0]
        versions[version] = {
            "branch": branch,
            "commit": commits.get(path.name, ""),
            "opset_range": opset,
            "ops": parse_table(text),
        }

    def key(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in version.split("."))

    ordered = dict(sorted(versions.items(), key=lambda kv: key(kv[0])))
    return {
        "source": "https://github.com/onnx/onnx-tensorrt operators.md / docs/operators.md",
        "license": "Apache-2.0 (onnx/onnx-tensorrt); derived table, rows unchanged",
        "note": "Newest table is 10.1; newer TensorRT versions fall back to it with a warning.",
        "versions": ordered,
    }


if __name__ == "__main__":
    out = HERE / "tensorrt_onnx_operators.json"
    out.write_text(json.dumps(build(Path(sys.argv[1])), indent=1, sort_keys=False) + "\n")
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
