"""Validation: do PyTorch, ONNX Runtime (and TensorRT) compute the same numbers?"""
