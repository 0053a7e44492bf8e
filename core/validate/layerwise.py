"""Layer-wise comparison in bounded memory: intermediates are marked as outputs in chunks.

Polygraphy's "mark all outputs" keeps every activation alive at once (its issue #3161: >60 GB).
Here the probe points are split into chunks whose activations fit a budget (sizes from shape
inference with the real input shapes); each chunk runs the candidate and the reference, is
reduced to a few statistics per tensor and dropped before the next one starts.

The reference is PyTorch eager (module outputs captured by forward hooks, mapped to ONNX tensors
by :mod:`mapping`) or, without a torch model, ONNX Runtime with graph optimizations off.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deploylens.core.model.dtypes import tensor_bytes
from deploylens.core.validate.compare import compare, judge_scale
from deploylens.core.validate.mapping import Call, ModuleMapping, map_calls
from deploylens.core.validate.records import LayerResult, Layerwise, Unmapped
from deploylens.core.validate.tolerances import Tolerances

if TYPE_CHECKING:  # onnx and onnxruntime: not in the CLI's import of this module
    from deploylens.core.validate.shared_weights import SharedWeights

DEFAULT_BUDGET_MB = 256.0
Progress = Callable[[float, str], None]


@dataclass
class Probe:
    """One compared tensor: where it comes from in ONNX and, in torch mode, which module."""

    tensor: str
    node: str
    op_type: str
    index: int  # topological position of the producing node
    module: str = ""
    note: str = ""


def onnx_probes(model: Any) -> list[Probe]:
    """Every float tensor produced by a node (ONNX-only mode)."""
    types = _elem_types(model)
    float_types = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16
    graph_inputs = {i.name for i in model.graph.input}
    probes = []
    for i, node in enumerate(model.graph.node):
        for out in node.output:
            if out and out not in graph_inputs and types.get(out, 1) in float_types:
                probes.append(Probe(out, node.name, node.op_type, i))
    return probes


def module_probes(model: Any, calls: list[Call]) -> tuple[list[Probe], ModuleMapping]:
    """One probe per ONNX tensor: a parent module whose output is its last child's (``layer4``
    and ``layer4.1`` and ``layer4.1.relu#1``) is one row, named by the innermost call, the
    others listed in its note — not the same tensor compared three times."""
    mapping = map_calls(model.graph, calls)
    by_tensor: dict[str, list[Call]] = {}
    for call in calls:
        tensor = mapping.tensors.get(call.key)
        if tensor is not None:
            by_tensor.setdefault(tensor, []).append(call)
    probes = []
    for tensor, same in by_tensor.items():
        inner = max(same, key=lambda c: c.path.count(".") + (1 if c.path else 0))
        i = mapping.producers[inner.key]
        node = model.graph.node[i]
        note = mapping.notes.get(inner.key, "")
        outer = [c.key for c in same if c is not inner]
        if outer:
            note = "; ".join(filter(None, [note, "also the output of " + ", ".join(outer)]))
        probes.append(Probe(tensor, node.name, node.op_type, i, inner.key, note))
    return probes, mapping


def _elem_types(model: Any) -> dict[str, int]:
    graph = model.graph
    types = {}
    for info in [*graph.value_info, *graph.output, *graph.input]:
        if info.type.HasField("tensor_type"):
            types[info.name] = info.type.tensor_type.elem_type
    return types


def activation_bytes(model: Any, feeds: dict[str, np.ndarray]) -> dict[str, int]:
    """Activation sizes for these feeds, by shape inference (unknown sizes are left out)."""
    import onnx

    from deploylens.core.model.summary import describe_type  # onnx: not in the CLI's import

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.initializer[:]  # weights are not needed to infer shapes, and may be large
    init_names = {t.name for t in model.graph.initializer}
    for value in probe.graph.input:
        if value.name in feeds and value.name not in init_names:
            dims = value.type.tensor_type.shape.dim
            for dim, size in zip(dims, feeds[value.name].shape, strict=False):
                dim.Clear()
                dim.dim_value = int(size)
    for tensor in model.graph.initializer:  # keep their shapes as inputs so inference works
        info = probe.graph.input.add()
        info.CopyFrom(
            onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims)
        )
    try:
        inferred = onnx.shape_inference.infer_shapes(probe, data_prop=True)
    except Exception:  # sizes are an optimisation: chunk by count instead
        return {}
    sizes = {}
    for info in inferred.graph.value_info:
        _, _, shape = describe_type(info.type)
        dims = [d for d in shape or [] if isinstance(d, int)]
        if shape is None or len(dims) != len(shape):
            continue  # symbolic or unknown dims: chunking assumes the largest known size
        size = tensor_bytes(info.type.tensor_type.elem_type, math.prod(dims))
        if size is not None:
            sizes[info.name] = size
    return sizes


def chunks(
    probes: list[Probe], sizes: dict[str, int], budget_bytes: float
) -> Iterator[list[Probe]]:
    """Consecutive probes whose distinct tensors fit the budget (always at least one)."""
    known = [s for s in sizes.values() if s > 0]
    unknown_size = max(known) if known else budget_bytes / 16
    current: list[Probe] = []
    seen: set[str] = set()
    used = 0.0
    for probe in probes:
        size = 0.0 if probe.tensor in seen else sizes.get(probe.tensor, unknown_size)
        if current and used + size > budget_bytes:
            yield current
            current, seen, used = [], set(), 0.0
            size = sizes.get(probe.tensor, unknown_size)
        current.append(probe)
        seen.add(probe.tensor)
        used += size
    if current:
        yield current


class _Enough(Exception):
    """Raised from a hook to stop the forward pass once every wanted output is captured."""


class TorchCapture:
    """Forward hooks on every submodule: the call order, and the outputs of chosen calls.

    Outputs are kept in memory up to ``hold`` bytes; past that they are written to ``spill`` as
    ``.npy`` files as they are produced (read back memory-mapped, one chunk at a time), so big
    models never hold them all at once and small ones never touch the disk.
    """

    def __init__(self, module: Any) -> None:
        self.module = module
        self.names = {id(m): name for name, m in module.named_modules() if name}
        self.types = {name: type(m).__name__ for name, m in module.named_modules() if name}

    def run(
        self,
        feeds: dict[str, np.ndarray],
        keep: set[str] | None = None,
        spill: Path | None = None,
        keep_all: bool = False,
        hold: float = 0.0,
    ) -> tuple[list[Call], dict[str, Any], Any]:
        """(the calls in order, the kept outputs by call, the forward's own result — None when
        it stopped once every kept output was in). With ``spill``, outputs past the first
        ``hold`` bytes go to disk (vit_b_16's fit in 256 MB: writing and mapping them back cost
        ~0.4 s of CPU when all were spilled)."""
        from deploylens.core.pytorch.call import call_torch

        calls: list[Call] = []
        seen: dict[str, int] = {}
        kept: dict[str, Any] = {}
        held = 0
        self.not_one_tensor: dict[str, str] = {}

        def hook(mod: Any, _args: Any, output: Any) -> None:
            nonlocal held
            path = self.names.get(id(mod))
            if path is None:
                return
            call = Call(path, seen.get(path, 0), self.types[path])
            seen[path] = call.index + 1
            calls.append(call)
            if keep_all or (keep is not None and call.key in keep):
                tensor = _only_tensor(output)
                if tensor is None:
                    self.not_one_tensor[call.key] = _what(output)
                else:
                    array = tensor.detach().cpu().numpy()
                    if spill is None or held + array.nbytes <= hold:
                        held += array.nbytes
                        kept[call.key] = array.copy()  # in-place ops later would change it
                    else:
                        target = spill / f"{len(kept)}.npy"
                        np.save(target, array)
                        kept[call.key] = target
                if keep is not None and len(kept) == len(keep):
                    raise _Enough  # the rest of the forward pass is not needed

        handles = [m.register_forward_hook(hook) for name, m in self.module.named_modules() if name]
        output = None
        try:
            output = call_torch(self.module, feeds)
        except _Enough:
            pass
        finally:
            for handle in handles:
                handle.remove()
        return calls, kept, output


def _only_tensor(output: Any) -> Any:
    """The module's output when it is one tensor (or a container of exactly one): a list of
    several has no single ONNX tensor to compare with, and its first element is not it."""
    leaves = _tensor_leaves(output)
    return leaves[0] if len(leaves) == 1 else None


def _tensor_leaves(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _tensor_leaves(item)]
    return []


def _what(output: Any) -> str:
    count = len(_tensor_leaves(output))
    return (f"returns {count} tensors ({type(output).__name__}): no one ONNX tensor holds them"
            if count else "returns no tensor")  # fmt: skip


def _session(data: bytes, optimized: bool, extensions: bool, weights: SharedWeights) -> Any:
    import onnxruntime as ort

    from deploylens.core.ort_session import session_options

    options = weights.add_to(session_options(optimized, extensions))
    options.enable_cpu_mem_arena = False  # one run per session: give memory back when it ends
    # nor repack the weights for faster repeated GEMMs: vit_b_16's session took 0.2-0.3 s of CPU
    # more to build with packing than it saved in its one run (the output is the same to
    # rounding: packed and plain GEMMs sum in another order)
    options.add_session_config_entry("session.disable_prepacking", "1")
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def compare_layers(
    model: Any,
    feeds: dict[str, np.ndarray],
    tolerances: Tolerances,
    torch_module: Any = None,
    plugins: list[Any] | None = None,
    budget_mb: float = DEFAULT_BUDGET_MB,
    progress: Progress | None = None,
    scratch: str | None = None,
    torch_output: Callable[[Any], None] | None = None,
    mapped: dict[str, np.ndarray] | None = None,
) -> Layerwise:
    """Compare every probe point; returns the per-node table, first divergence and unmapped.

    ``torch_output`` receives the hooked forward pass's own result, so a caller comparing the
    model's outputs on the same batch does not run PyTorch a second time (vit_b_16: 0.5 s).
    ``mapped``: the weights ``model`` refers NOWHERE for (``read_mapped``), by name."""
    from deploylens.core.ort_session import prepare_for_ort
    from deploylens.core.validate.shared_weights import share_weights

    started = time.perf_counter()
    model, extensions = prepare_for_ort(model, plugins or [])
    weights = share_weights(model, mapped)  # one copy of the weights for every chunk's sessions
    report = progress or (lambda _f, _m: None)
    capture: TorchCapture | None = None
    mapping = ModuleMapping(style="onnx-only")
    sizes = activation_bytes(weights.light, feeds)
    budget = budget_mb * 1024 * 1024
    spill = None  # over the budget, torch outputs past it go to disk as they are produced
    if torch_module is not None and (sum(sizes.values()) > budget or not sizes):
        spill = Path(tempfile.mkdtemp(prefix="deploylens-layers-", dir=scratch))
    reference: dict[str, Any] = {}
    try:
        if torch_module is not None:
            report(0.0, "layer-wise: running PyTorch with hooks")
            capture = TorchCapture(torch_module)
            # One pass keeps every call's output; the mapping needs the whole call list first.
            calls, reference, output = capture.run(feeds, spill=spill, keep_all=True, hold=budget)
            if torch_output is not None:
                torch_output(output)
            del output
            probes, mapping = module_probes(model, calls)
            for key, why in capture.not_one_tensor.items():  # nothing to compare it with
                mapping.unmapped.setdefault(key, why)
            probes = [p for p in probes if p.module not in capture.not_one_tensor]
            for key in set(reference) - {p.module for p in probes}:
                if isinstance(reference[key], Path):
                    reference[key].unlink()
                del reference[key]
        else:
            probes = onnx_probes(model)
        parts = list(chunks(probes, sizes, budget))
        rows: list[LayerResult] = []
        peak_chunk = 0
        for n, part in enumerate(parts):
            report(n / len(parts), f"layer-wise: chunk {n + 1} of {len(parts)}")
            names = list(dict.fromkeys(p.tensor for p in part))
            peak_chunk = max(peak_chunk, sum(sizes.get(t, 0) for t in names))
            data = weights.model_with_outputs(names)
            session = _session(data, True, extensions, weights)
            got = dict(zip(names, session.run(names, feeds), strict=True))
            del session
            if capture is not None:
                pairs = [(p, got[p.tensor], _load(reference.get(p.module))) for p in part]
            else:
                ref = _session(data, False, extensions, weights).run(names, feeds)
                ref_by_name = dict(zip(names, ref, strict=True))
                pairs = [(p, got[p.tensor], ref_by_name[p.tensor]) for p in part]
            del data
            for probe, g, w in pairs:
                if w is None and probe.module:
                    mapping.unmapped[probe.module] = "PyTorch kept no tensor of it to compare"
                    continue
                row = _row(probe, g, w, tolerances)
                if row.reason.startswith("shape") and probe.module:  # not its tensor after all
                    mapping.unmapped[probe.module] = (
                        f"its output is not {probe.tensor}'s shape ({row.reason}): not mapped"
                    )
                    continue
                rows.append(row)
            del got, pairs
    finally:
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)
    rows.sort(key=lambda r: r.index)
    _propagate(model, rows)
    first = next((r for r in rows if not r.passed), None)
    return Layerwise(
        mode="torch modules" if capture is not None else "onnx tensors",
        mapping=mapping.style,
        compared=len(rows),
        mapped_calls=len(mapping.tensors),
        unmapped=[Unmapped(k, v) for k, v in mapping.unmapped.items()],
        first_diverging=first,
        layers=rows,
        chunks=len(parts),
        largest_chunk_mb=peak_chunk / 1024 / 1024,
        budget_mb=budget_mb,
        seconds=time.perf_counter() - started,
    )


def _load(value: Any) -> np.ndarray | None:
    result: np.ndarray | None = np.load(value, mmap_mode="r") if isinstance(value, Path) else value
    return result


# The statistics a layer row takes over from the tensor comparison.
STAT_FIELDS = ("passed", "max_abs", "mean_abs", "max_rel", "rel_l2", "cosine", "within", "nan")


def _row(probe: Probe, got: np.ndarray, want: np.ndarray | None, tol: Tolerances) -> LayerResult:
    nan = float("nan")
    if want is None:
        stats: dict[str, Any] = dict.fromkeys(STAT_FIELDS, nan)
        stats.update(passed=False, within=0.0, nan=0, reason="the module produced no tensor")
    else:
        got = np.asarray(got)
        if got.shape != want.shape and got.size == want.size:
            got = got.reshape(want.shape)  # e.g. a flatten the exporter folded into a reshape
        c = compare(probe.tensor, got, want, tol)
        stats = {name: getattr(c, name) for name in STAT_FIELDS}
        stats["passed"], stats["reason"] = layer_agrees(c, tol)
    return LayerResult(**asdict(probe), **stats, error_in=nan, jump=nan)


def layer_agrees(c: Any, tol: Tolerances) -> tuple[bool, str]:
    """Whether an intermediate tensor agrees, judged as an output is (``judge_scale``): element
    tolerances, and where a few elements miss them, the error at the tensor's own scale — deep
    in a network a few elements of a right ResNet-50's tensors missed an element tolerance
    (rows red at rel L2 1e-6, cosine 1, 99.99 % within) while a wrong weight or FP16 moves the
    whole tensor. A tensor all zero on both sides has nothing to compare: it does not diverge."""
    if c.reason.startswith("shape") or c.reason == "no batch was compared":
        return False, c.reason
    judge_scale(c, tol)
    if c.inconclusive:
        return True, "all zero on both sides: nothing to compare"
    return c.passed, c.reason


def _propagate(model: Any, rows: list[LayerResult]) -> None:
    """Fill ``error_in``/``jump``: the error each node receives versus the error it leaves."""
    by_tensor: dict[str, float] = {}
    measured: dict[str, float] = {}
    for row in rows:
        if math.isfinite(row.rel_l2):
            measured[row.tensor] = max(measured.get(row.tensor, 0.0), row.rel_l2)
    incoming: dict[int, float] = {}
    for i, node in enumerate(model.graph.node):
        error_in = max((by_tensor.get(name, 0.0) for name in node.input if name), default=0.0)
        incoming[i] = error_in
        for out in node.output:
            by_tensor[out] = measured.get(out, error_in)
    for row in rows:
        row.error_in = incoming.get(row.index, 0.0)
        row.jump = row.rel_l2 - row.error_in if math.isfinite(row.rel_l2) else math.nan
