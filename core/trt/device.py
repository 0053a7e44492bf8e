"""GPU buffers for TensorRT without pycuda: through PyTorch's CUDA allocator, which every GPU
workstation that runs TensorRT's Python API in practice also has. One small surface (allocate,
upload, download, stream, synchronize) so the adapter and the calibrator can be contract-tested
with a recording fake."""

from __future__ import annotations

from typing import Any

import numpy as np

from deploylens.core.errors import UserError


class TorchDevice:
    def __init__(self) -> None:
        try:
            import torch
        except ModuleNotFoundError:
            raise UserError(
                "Running or calibrating a TensorRT engine needs GPU buffers; DeployLens gets them "
                "from PyTorch's CUDA build, which is not installed.",
                "pip install torch (a CUDA build)",
            ) from None
        if not torch.cuda.is_available():
            raise UserError("No CUDA device is visible to PyTorch: TensorRT engines run on a GPU.")
        self._torch = torch
        self._buffers: dict[str, Any] = {}
        self._stream = torch.cuda.Stream()

    def buffer(self, name: str, nbytes: int) -> int:
        """A device buffer of at least ``nbytes`` kept under ``name``; its address."""
        current = self._buffers.get(name)
        if current is None or current.numel() < nbytes:
            current = self._torch.empty(max(nbytes, 1), dtype=self._torch.uint8, device="cuda")
            self._buffers[name] = current
        return int(current.data_ptr())

    def upload(self, name: str, array: np.ndarray) -> int:
        array = np.ascontiguousarray(array)
        address = self.buffer(name, array.nbytes)
        source = self._torch.from_numpy(array.reshape(-1).view(np.uint8))
        with self._torch.cuda.stream(self._stream):
            self._buffers[name][: array.nbytes].copy_(source, non_blocking=False)
        return address

    def download(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        data = self._buffers[name][: out.nbytes].cpu().numpy()
        out.reshape(-1).view(np.uint8)[:] = data
        return out

    @property
    def stream_handle(self) -> int:
        return int(self._stream.cuda_stream)

    def synchronize(self) -> None:
        self._stream.synchronize()
