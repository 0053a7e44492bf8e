"""The plugin creators an installed TensorRT's registry holds, asked live: the fix for a "plugin
not found" then says what this TensorRT really ships (TensorRT-RTX registers ROIAlign_TRT
version 2 and nothing of the classic plugin library's other 46 names), instead of the classic
library's documented list, which a TensorRT-RTX user cannot load."""

from __future__ import annotations

from typing import Any

from deploylens.core.support.result import RegisteredPlugin

# Creators TensorRT registers for its own use, never what an ONNX node names
INTERNAL = ("MyelinWeightsTransformPlugin",)


def registered_plugins(trt: Any) -> list[RegisteredPlugin] | None:
    """Each creator of ``trt``'s registry (``all_creators`` from TensorRT 10, the creator list
    before), or None when this module has no registry to ask (a stand-in, an old binding)."""
    try:
        registry = trt.get_plugin_registry()
        creators = getattr(registry, "all_creators", None)
        if creators is None:
            creators = registry.plugin_creator_list
        found = {
            RegisteredPlugin(str(c.name), str(c.plugin_version), str(c.plugin_namespace or ""))
            for c in creators
        }
    except Exception:  # whatever the binding lacks, the answer is "cannot say"
        return None
    return sorted((p for p in found if p.name not in INTERNAL), key=lambda p: (p.name, p.version))
