"""What the PyTorch exporters can translate — the one module that touches private torch APIs.

Every private name used here is listed in ``PRIVATE_APIS``; when one moves, the exporter shows
as "unknown" with the reason, never a crash. Checked against torch 2.14 (tests/core/
test_support_torch.py runs per installed torch version).
"""

from __future__ import annotations

from typing import Any

PRIVATE_APIS = (
    "torch.onnx._internal.torchscript_exporter.registration.registry"
    " (.all_functions(), .is_registered_op(name, opset), .get_function_group(name))",
    "torch.onnx._internal.exporter._registration.ONNXRegistry.from_torchlib() (.functions)",
)
TORCHSCRIPT_OPSETS = range(7, 21)  # the TorchScript exporter's supported opsets
DYNAMO_MIN_OPSET = 18  # the dynamo exporter raises lower requests to 18


def base_name(qualified: str) -> str:
    """``aten::add.Tensor`` → ``aten::add``."""
    namespace, _, rest = qualified.partition("::")
    return f"{namespace}::{rest.split('.')[0]}" if rest else qualified


def torchscript_symbolics() -> dict[str, Any]:
    """{op: [opsets with a symbolic]} from the TorchScript exporter's registry."""
    try:
        import torch
        from torch.onnx._internal.torchscript_exporter import registration

        registry = registration.registry
        ops: dict[str, list[int]] = {}
        for name in sorted(registry.all_functions()):
            opsets = [o for o in TORCHSCRIPT_OPSETS if registry.is_registered_op(name, o)]
            if opsets:
                ops[name] = opsets
        return {
            "available": True,
            "torch": torch.__version__,
            "opsets": list(TORCHSCRIPT_OPSETS),
            "ops": ops,
        }
    except ImportError as exc:
        return {"available": False, "reason": f"torch is not importable here: {exc}"}
    except Exception as exc:  # a moved private API: unknown, not a crash
        return {
            "available": False,
            "reason": f"this torch's TorchScript registry is not readable: {exc}",
        }


def dynamo_translations() -> dict[str, Any]:
    """{aten op: [overloads]} that torchlib translates for the dynamo exporter."""
    try:
        import torch
        from torch.onnx._internal.exporter import _registration

        try:  # torchlib registers torchvision's ops (nms, roi_align, deform_conv2d) only then
            import torchvision  # noqa: F401
        except Exception:  # absent or broken torchvision: its ops simply stay unlisted
            pass
        registry = _registration.ONNXRegistry.from_torchlib()
        ops: dict[str, list[str]] = {}
        for key in registry.functions:
            if isinstance(key, str) and "::" in key:
                ops.setdefault(base_name(key), []).append(key)
        return {
            "available": True,
            "torch": torch.__version__,
            "min_opset": DYNAMO_MIN_OPSET,
            "opset": int(getattr(registry, "opset_version", DYNAMO_MIN_OPSET)),
            "ops": {k: sorted(v) for k, v in sorted(ops.items())},
        }
    except ImportError as exc:
        return {"available": False, "reason": f"torch is not importable here: {exc}"}
    except Exception as exc:
        return {
            "available": False,
            "reason": f"this torch's dynamo registry is not readable: {exc}",
        }
