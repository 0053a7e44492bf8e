"""Reading ONNX models: loading without weights, summaries, and (later) the graph IR."""
