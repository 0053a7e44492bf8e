"""Op support: ONNX spec history, PyTorch exporters, ONNX Runtime kernels, TensorRT parser."""
