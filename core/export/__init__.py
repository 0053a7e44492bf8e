"""PyTorch → ONNX export: model sources, settings, running the exporters, diagnosis, fixes."""
