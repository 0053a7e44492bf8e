"""The architecture zoo: every verdict DeployLens gives on the model families engineers ship,
each checked against an independent answer (issue 43).

    python bench/zoo.py [--only bert,detr] [--exporters dynamo,torchscript] [--work DIR]
                        [--json PATH]

Each architecture of ``tests/helpers/zoo.py`` (tiny config, random weights, built here) goes
through the CLI as a user runs it: ``export`` with both exporters, ``validate --torch`` of the
right export (must PASS), of the same export ``--layerwise`` (no diverging node) and of a copy
with one weight perturbed (must FAIL), ``support`` on three targets (``trt-rtx`` — the live
parser —, ``trt-rtx-measured`` and the ``trt-10.1`` table), ``build --build --target-cc sm89``
and ``surgery --fold``. The answers each is checked against (``tests/helpers/zoo_truth.py``):
the exported file run by ONNX Runtime against the model rebuilt by its own library and
flattened by torch's pytree; a plain ``tensorrt_rtx`` parse and build; onnxslim's fold.

A cell is ✓ (right), ✗ (wrong: the reason follows), "refused: …" (the tool declined and named
the cause) or "traceback". Each command's wall and CPU seconds (process tree) are in the JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import run_measured  # noqa: E402

from tests.helpers import zoo_truth  # noqa: E402
from tests.helpers.zoo import ZOO, Architecture, spec_of  # noqa: E402

BIN = Path(sys.executable).parent
CLI = [str(BIN / "deploylens")]
EXPORTERS = ("dynamo", "torchscript")
SUPPORT = ("trt-rtx", "trt-rtx-measured", "trt-10.1")


@dataclass
class Cell:
    state: str  # "right" | "wrong" | "refused" | "traceback" | "skipped"
    text: str  # what the tool said (its first line), or why the cell is wrong
    wall_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def mark(self) -> str:
        return {"right": "✓", "wrong": "✗", "refused": "refused", "traceback": "traceback",
                "skipped": "–"}[self.state]  # fmt: skip


@dataclass
class Row:
    name: str
    family: str
    spec: str
    cells: dict[str, Cell] = field(default_factory=dict)


def cli(*args: str, timeout: float = 900) -> tuple[int, dict[str, Any] | None, str, Any]:
    """A ``deploylens`` command with ``--json``: (rc, its JSON or None, its text, the run)."""
    run = run_measured([*CLI, *args], timeout=timeout)
    text = run.stdout.strip()
    data = None
    try:
        start = text.index("{")
        data = json.loads(text[start:])
    except ValueError:
        pass
    return run.rc, data, (text or run.stderr.strip())[-2000:], run


def _traceback(run: Any) -> bool:
    return "Traceback (most recent call last)" in run.stderr + run.stdout


def _cell(state: str, text: str, run: Any) -> Cell:
    if _traceback(run):
        tail = (run.stderr or run.stdout).strip().splitlines()[-1:]
        return Cell("traceback", tail[0][:200] if tail else "", run.wall_s, run.cpu_s)
    return Cell(state, text[:300], run.wall_s, run.cpu_s)


def export_cell(arch: Architecture, spec: str, exporter: str, out: Path) -> tuple[Cell, bool]:
    """The export's verdict against the independent check; (cell, the file is right)."""
    extra = [f"--input={i}" for i in arch.inputs] + (["--trust"] if arch.kind == "python" else [])
    rc, data, text, run = cli("export", spec, "--exporter", exporter, "--out", str(out),
                              *extra, "--json")  # fmt: skip
    if data is None:
        return _cell("wrong", f"no JSON (rc {rc}): {text[-200:]}", run), False
    if not data.get("ok"):
        findings = data.get("findings") or []
        first = findings[0] if findings else {}
        named = first.get("operator") or first.get("source")
        parts = (first.get("operator"), first.get("source"), first.get("message"))
        why = " ".join(p for p in parts if p)
        state = "refused" if named and rc == 1 else "wrong"
        return _cell(state, why.strip() if named else f"no cause named: {why.strip()}", run), False
    agrees, why = zoo_truth.independent_agreement(arch, spec, out)
    smoke = data.get("ort") or {}
    said_agree = smoke.get("agrees") and rc == 0
    if said_agree == agrees:
        return _cell("right", f"{'PASS' if agrees else 'FAIL'} ({why})", run), agrees
    said = "PASS" if said_agree else "FAIL: " + "; ".join(smoke.get("disagreements") or [])[:200]
    return _cell("wrong", f"tool {said}, truth: {why}", run), agrees


def validate_cells(arch: Architecture, spec: str, model: Path, work: Path) -> dict[str, Cell]:
    from tests.helpers.perturb import perturb_first_weight

    trust = ["--trust"] if arch.kind == "python" else []
    cells = {}
    rc, data, text, run = cli("validate", str(model), "--torch", spec, *trust, "--json")
    verdict = text.splitlines()[0] if text else ""
    if rc == 0 and data is not None:
        cells["validate"] = _cell("right", "PASS", run)
    else:
        why = _validate_reason(data) or verdict
        cells["validate"] = _cell("wrong", f"rc {rc}: {why}", run)
    rc, data, text, run = cli("validate", str(model), "--torch", spec, "--layerwise", *trust,
                              "--json")  # fmt: skip
    layers = (data or {}).get("layerwise") or {}
    first = layers.get("first_diverging")
    if rc == 0 and data is not None and first is None:
        cells["layerwise"] = _cell(
            "right", f"{layers.get('compared', 0)} tensors, none diverges", run
        )
    else:
        where = f"first diverging {first['node']} rel L2 {first['rel_l2']:.3g}" if first else ""
        cells["layerwise"] = _cell("wrong", f"rc {rc}: {where or _validate_reason(data)}", run)
    broken = work / f"{model.stem}.perturbed.onnx"
    node = perturb_first_weight(model, broken, feeds=example_feeds(model, arch, spec))
    rc, data, text, run = cli("validate", str(broken), "--torch", spec, *trust, "--json")
    if rc == 1:
        cells["perturbed"] = _cell("right", f"FAIL ({node} perturbed)", run)
    else:
        cells["perturbed"] = _cell("wrong", f"rc {rc} with {node} perturbed", run)
    return cells


def _validate_reason(data: dict[str, Any] | None) -> str:
    if not data:
        return ""
    reasons = [f"{o['name']}: {o['reason']}" for o in data.get("outputs", []) if not o["passed"]]
    return "; ".join([*data.get("problems", []), *reasons])[:300]


def support_cells(model: Path, parsed: tuple[bool, str]) -> dict[str, Cell]:
    targets = [a for t in SUPPORT for a in ("--target", t)]
    rc, data, text, run = cli("support", str(model), *targets, "--json")
    cells: dict[str, Cell] = {}
    if data is None:
        return {t: _cell("wrong", f"no JSON (rc {rc}): {text[-200:]}", run) for t in SUPPORT}
    live = data.get("tensorrt_rtx") or {}
    measured = (data.get("measured") or {}).get("trt-rtx-measured") or {}
    table = next((r for r in data.get("targets", []) if r.get("target") == "trt-10.1"), {})
    said = {
        "trt-rtx": ("OK" if live.get("supported") else "BLOCKED",
                    _first_blocker(live.get("findings") or [])),
        "trt-rtx-measured": (
            {True: "OK", False: "BLOCKED", None: "INCONCLUSIVE"}[measured.get("ok")],
            _first_blocker(measured.get("blocked") or []),
        ),
        "trt-10.1": (_support_state(table), _first_blocker(table.get("blockers") or [])),
    }  # fmt: skip
    for target in SUPPORT:
        state, blocker = said[target]
        text_said = state + (f": {blocker}" if state == "BLOCKED" else "")
        right = (
            (state == "OK") == parsed[0]
            if target == "trt-rtx"
            else (state != "BLOCKED" if parsed[0] else state != "OK")
        )
        why = "" if right else f" — TensorRT-RTX parse {'OK' if parsed[0] else parsed[1]}"
        cells[target] = _cell("right" if right else "wrong", text_said + why, run)
    return cells


def _support_state(report: dict[str, Any]) -> str:
    if report.get("ok"):
        return "OK"
    return "INCONCLUSIVE" if report.get("inconclusive") else "BLOCKED"


def _first_blocker(blockers: list[Any]) -> str:
    if not blockers:
        return ""
    first = blockers[0]
    if isinstance(first, dict):
        keys = ("op_type", "op", "node", "cell", "reason", "message", "desc")
        return " ".join(str(first[k]) for k in keys if first.get(k))[:200]
    return str(first)[:160]


def build_cell(model: Path, shapes: dict[str, list[int]], truth: tuple[bool, str]) -> Cell:
    profiles = []
    for name, shape in shapes.items():
        dims = "x".join(str(d) for d in shape)
        profiles += ["--profile", f"{name}:{dims}/{dims}/{dims}"]
    engine = model.with_suffix(".plan")
    rc, _, text, run = cli("build", str(model), "--build", "--target-cc", "sm89", *profiles,
                              "--engine", str(engine), "--json")  # fmt: skip
    built = rc == 0 and engine.is_file()
    if built == truth[0]:
        return _cell("right", "built" if built else f"refused as the raw build: {text[-160:]}", run)
    return _cell("wrong", f"tool {'built' if built else 'failed: ' + text[-160:]}, "
                          f"raw script {'built' if truth[0] else truth[1]}", run)  # fmt: skip


def fold_cell(model: Path, work: Path, feeds: dict[str, Any]) -> Cell:
    """``surgery --fold`` against onnxslim's own fold of the file: as few nodes, and the tool's
    compare verdict (edited vs original) equal to what ONNX Runtime says of onnxslim's fold on
    the same inputs — a fold that changes the model must be said to."""
    out = work / f"{model.stem}.folded.onnx"
    rc, data, text, run = cli("surgery", str(model), "--fold", "--out", str(out), "--no-tensorrt",
                              "--json")  # fmt: skip
    if data is None or not out.is_file():
        return _cell("wrong", f"rc {rc}: {text[-200:]}", run)
    import onnx

    ours = len(onnx.load(str(out), load_external_data=False).graph.node)
    slim_path = work / f"{model.stem}.slim.onnx"
    slim = zoo_truth.slim_fold(model, slim_path)
    slim_same = zoo_truth.same_outputs(model, slim_path, feeds)
    compare = data.get("compare") or {}
    said_same = compare.get("passed", True) is not False and rc == 0
    right = said_same == slim_same and ours <= slim + max(2, slim // 20)
    return _cell("right" if right else "wrong",
                 f"{ours} nodes (onnxslim {slim}), compare {'PASS' if said_same else 'FAIL'}"
                 f", onnxslim's fold {'keeps' if slim_same else 'changes'} the outputs",
                 run)  # fmt: skip


def example_feeds(model: Path, arch: Architecture, spec: str) -> dict[str, Any]:
    """Inputs the independent check feeds (ids within the vocabulary, the factory's example)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    torch_model, example = zoo_truth._torch_model(arch, spec)
    return zoo_truth._inputs(torch_model, session, example)


def example_shapes(model: Path, arch: Architecture, spec: str) -> dict[str, list[int]]:
    """Every input's shape, dynamic ones fixed at what the independent check feeds."""
    return {k: list(v.shape) for k, v in example_feeds(model, arch, spec).items()}


def run_architecture(arch: Architecture, work: Path, exporters: tuple[str, ...]) -> Row:
    folder = work / arch.name
    folder.mkdir(parents=True, exist_ok=True)
    spec = spec_of(arch, work)
    row = Row(arch.name, arch.family, spec if not spec.startswith(("hf:", "/")) else arch.kind)
    print(f"\n== {arch.name} ({arch.family}) {spec}", flush=True)
    for exporter in exporters:
        out = folder / f"{exporter}.onnx"
        cell, right_file = export_cell(arch, spec, exporter, out)
        row.cells[f"export-{exporter}"] = cell
        print(f"  export {exporter}: {cell.mark} {cell.text[:150]}", flush=True)
        if not out.is_file():
            continue
        if right_file:
            for key, value in validate_cells(arch, spec, out, folder).items():
                row.cells[f"{key}-{exporter}"] = value
                print(f"  {key} {exporter}: {value.mark} {value.text[:150]}", flush=True)
        parsed = zoo_truth.rtx_parse(out)
        for key, value in support_cells(out, parsed).items():
            row.cells[f"{key}-{exporter}"] = value
            print(f"  {key} {exporter}: {value.mark} {value.text[:150]}", flush=True)
        shapes = example_shapes(out, arch, spec)
        built = zoo_truth.rtx_build(out, shapes) if parsed[0] else parsed
        row.cells[f"build-{exporter}"] = build_cell(out, shapes, built)
        row.cells[f"fold-{exporter}"] = fold_cell(out, folder, example_feeds(out, arch, spec))
        for key in (f"build-{exporter}", f"fold-{exporter}"):
            print(f"  {key}: {row.cells[key].mark} {row.cells[key].text[:150]}", flush=True)
    return row


def table(rows: list[Row], columns: list[str]) -> str:
    lines = ["| architecture | family | " + " | ".join(columns) + " |",
             "|---|---|" + "---|" * len(columns)]  # fmt: skip
    for row in rows:
        marks = [row.cells[c].mark if c in row.cells else "–" for c in columns]
        lines.append(f"| {row.name} | {row.family} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated architecture names")
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--work", default="", help="keep the exports here (default: a temp dir)")
    parser.add_argument("--json", default="", help="write the cells here")
    args = parser.parse_args()
    chosen = [a for a in ZOO if not args.only or a.name in args.only.split(",")]
    exporters = tuple(e for e in args.exporters.split(",") if e)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="deploylens-zoo-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = []
    for arch in chosen:
        try:
            rows.append(run_architecture(arch, work, exporters))
        except Exception as exc:  # the bench's own check broke: said, and the run goes on
            print(f"  bench error on {arch.name}: {type(exc).__name__}: {exc}", flush=True)
            rows.append(Row(arch.name, arch.family, arch.kind,
                            {"bench": Cell("wrong", f"bench error: {exc}"[:300])}))  # fmt: skip
    columns = sorted({c for row in rows for c in row.cells}, key=_column_order)
    print("\n" + table(rows, columns))
    cells = [c for row in rows for c in row.cells.values()]
    counts = {state: sum(c.state == state for c in cells) for state in
              ("right", "wrong", "refused", "traceback")}  # fmt: skip
    wrong = [(row.name, key, c.text) for row in rows for key, c in row.cells.items()
             if c.state in ("wrong", "traceback")]  # fmt: skip
    cpu, wall = sum(c.cpu_s for c in cells), time.perf_counter() - started
    print(f"\n{len(rows)} architectures, {len(cells)} cells: {counts}; "
          f"CLI CPU {cpu:.0f} s, wall {wall:.0f} s")  # fmt: skip
    for name, key, text in wrong:
        print(f"  ✗ {name} {key}: {text}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(
            {"rows": [asdict(r) for r in rows], "counts": counts}, indent=1))  # fmt: skip
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if counts["wrong"] or counts["traceback"] else 0


def _column_order(column: str) -> tuple[int, str]:
    kinds = ["export", "validate", "layerwise", "perturbed", *SUPPORT, "build", "fold"]
    exporter = column.rpartition("-")[2]
    for i, kind in enumerate(kinds):
        if column.startswith(kind + "-") and not (kind == "trt-rtx" and "measured" in column):
            return i * 2 + (exporter == "torchscript"), column
    return 99, column


if __name__ == "__main__":
    raise SystemExit(main())
