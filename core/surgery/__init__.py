"""Graph surgery: the fix ladder's fourth rung — edit the exported ONNX with onnx-graphsurgeon
(fold/simplify through onnxslim, extract, replace a subgraph by a plugin node, rewrite domains,
cut outputs, set dims) and the built-in pattern rewrites. Each step is typed, replayable from a
steps file and written down as the onnx-graphsurgeon script that does the same."""
