"""Timeline ↔ graph selection and the latency overlay, through ONNX Runtime's optimized node
names when the profile has them (``relu_nchwc`` ran ``node_Conv_27`` + ``node_relu``)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deploylens.core.trace.ort_names import alias_of, ort_aliases, remap_latency

if TYPE_CHECKING:
    from deploylens.gui.graph.panel import GraphPanel
    from deploylens.gui.timeline.panel import TimelinePanel


class GraphLink:
    """Owned by the main window; ``_linking`` keeps one side's selection from bouncing back."""

    def __init__(
        self, graph: GraphPanel, timeline: TimelinePanel, message: Callable[[str], None]
    ) -> None:
        self.graph, self.timeline, self.message = graph, timeline, message
        self._linking = False
        self._for: tuple[Any, Any] | None = None  # weak refs: (trace, graph model)
        self._aliases: dict[str, list[str]] = {}

    def aliases(self) -> dict[str, list[str]]:
        """Optimized ORT names of the open trace resolved against the open graph, once per
        (trace, model) pair."""
        trace, model = self.timeline.trace, self.graph.model
        if trace is None or model is None or trace.meta.get("format") != "onnxruntime":
            return {}
        if self._for is None or self._for[0]() is not trace or self._for[1]() is not model:
            self._aliases = ort_aliases(trace, model.ir.proto)
            self._for = (weakref.ref(trace), weakref.ref(model))
        return self._aliases

    def timeline_to_graph(self, nodes: list[str]) -> None:
        """A timeline event selects its ONNX node (the first candidate the graph has)."""
        if self._linking or self.graph.model is None:
            return
        aliases = self.aliases()
        candidates = [node for name in nodes for node in aliases.get(name, [name])]
        self._linking = True
        try:
            if not candidates:
                self.message(f"{nodes[0]} is a layout change ONNX Runtime inserted: no model node")
            elif not any(self.graph.reveal_name(node, quiet=True) for node in candidates):
                self.message(f"No node of this graph matches {nodes[0]}")
        finally:
            self._linking = False

    def graph_to_timeline(self, node: str) -> None:
        if self._linking:
            return
        self._linking = True
        try:
            if not self.timeline.select_node(node):
                for event in alias_of(node, self.aliases()):
                    if self.timeline.select_node(event):
                        break
        finally:
            self._linking = False

    def overlay(self, name: str, values: dict, legend: str, log_scale: bool) -> None:
        if self.graph.path is not None:
            values = remap_latency(values, self.aliases())
            self.graph.overlay(name, values, legend, "sum", log_scale=log_scale)
