"""Export panel: PyTorch → ONNX with diagnosis and fix-its."""
