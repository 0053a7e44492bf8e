"""The op-plugin contract and loader (entry-point group ``deploylens.plugins``).

A plugin handles torch op(s) the exporters cannot translate, and brings what the rest of the
chain needs: a TorchScript symbolic, a dynamo custom translation, the ONNX op it emits, an
ONNX Runtime reference implementation for validation, and a TensorRT plugin reference. The
built-ins register exactly like third-party plugins; a broken one is listed as "could not be
loaded" with its error and never breaks the app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

GROUP = "deploylens.plugins"
ORT_PYOP_DOMAIN = "ai.onnx.contrib"  # onnxruntime-extensions registers Python ops only here


@dataclass
class OpPlugin:
    name: str
    description: str
    torch_ops: list[str]  # e.g. ["aten::asinh"]
    onnx_ops: list[str]  # what it emits: "Asinh" or "custom::deform_conv2d"
    register_torchscript: Callable[[int], None] | None = None  # (opset) -> None
    unregister_torchscript: Callable[[int], None] | None = None
    custom_translation: Callable[[], dict[Any, Any]] | None = None  # dynamo table
    custom_opsets: dict[str, int] = field(default_factory=dict)
    min_opset: int = 1
    register_ort_reference: Callable[[], None] | None = None  # registers PyOps
    ort_domain_rewrite: dict[str, str] = field(default_factory=dict)  # for validation copies
    tensorrt_plugin: dict[str, str] | None = None  # name, version, library
    exporters: tuple[str, ...] = ("torchscript", "dynamo")

    def tensorrt_plugin_for(self, op: str) -> dict[str, str] | None:
        """The TensorRT plugin that implements ``op`` (an op type of ``onnx_ops``). One named
        after one of the plugin's own ops is that op's only (surgery_nodes' ModulatedDeformConv2d
        is not LayerNormalization's plugin); one named otherwise covers every op it emits."""
        ref = self.tensorrt_plugin
        if not ref:
            return None
        own = {entry.rpartition("::")[2] for entry in self.onnx_ops}
        if ref.get("name") in own and ref.get("name") != op:
            return None
        return ref


def plugin_entries() -> dict[str, str]:
    """Entry-point name → ``module:attr`` as this environment declares them.

    The app passes this to a worker running in another interpreter (the user's training env),
    whose metadata does not list DeployLens's plugins.
    """
    return {entry.name: entry.value for entry in entry_points(group=GROUP)}


def _load_entry(value: str) -> Any:
    import importlib

    module, _, attribute = value.partition(":")
    target: Any = importlib.import_module(module)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def load_plugins(
    entries: dict[str, str] | None = None,
) -> tuple[dict[str, OpPlugin], dict[str, str]]:
    """(plugins by name, load errors by entry-point name)."""
    plugins: dict[str, OpPlugin] = {}
    errors: dict[str, str] = {}
    for name, value in {**plugin_entries(), **(entries or {})}.items():
        try:
            plugin = _load_entry(value)
            if not isinstance(plugin, OpPlugin):
                raise TypeError(f"{value} is a {type(plugin).__name__}, not an OpPlugin")
            plugins[plugin.name] = plugin
        except Exception as exc:  # contained: a plugin never breaks the app
            errors[name] = f"could not be loaded: {type(exc).__name__}: {exc}"
    return plugins, errors


def plugins_for(op: str, plugins: dict[str, OpPlugin]) -> list[OpPlugin]:
    return [p for p in plugins.values() if op in p.torch_ops or op in p.onnx_ops]
