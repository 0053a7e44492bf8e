"""A small CNN trained here, in seconds on the CPU, on scikit-learn's bundled digits (1,797 8×8
images ship inside the package: no download), so INT8/FP16 accuracy figures are real top-1 on a
held-out split — not random-weight noise. Used by the sensitivity tests and bench."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HELD_OUT = 297  # the last images, never trained on


def digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    images = (data.images / 16.0).astype(np.float32)[:, None, :, :]  # (n, 1, 8, 8) in [0, 1]
    return images, data.target.astype(np.int64)


def train_and_export(folder: Path, epochs: int = 12, seed: int = 0) -> dict[str, Path]:
    """Train, export (TorchScript exporter, dynamic batch) and write the data folders:
    ``calib`` (200 training images), ``eval`` (the held-out images) and ``labels.npy``."""
    import torch

    torch.manual_seed(seed)
    images, labels = digits()
    train_x, train_y = torch.from_numpy(images[:-HELD_OUT]), torch.from_numpy(labels[:-HELD_OUT])
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(32 * 4 * 4, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    )  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(train_x), generator=generator)
        for start in range(0, len(order), 64):
            batch = order[start : start + 64]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(train_x[batch]), train_y[batch])
            loss.backward()
            optimizer.step()
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    onnx_path = folder / "digits_cnn.onnx"
    torch.onnx.export(model, (train_x[:1],), str(onnx_path), dynamo=False, opset_version=17,
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})  # fmt: skip
    calib, held = folder / "calib", folder / "eval"
    calib.mkdir(exist_ok=True)
    held.mkdir(exist_ok=True)
    for index in range(200):
        np.save(calib / f"{index:04d}.npy", images[index])
    for index, image in enumerate(images[-HELD_OUT:]):
        np.save(held / f"{index:04d}.npy", image)
    np.save(folder / "labels.npy", labels[-HELD_OUT:])
    return {"model": onnx_path, "calib": calib, "eval": held, "labels": folder / "labels.npy"}


def accuracy(model: str | Path, folder: Path, labels: np.ndarray) -> float:
    """Top-1 on the held-out images, computed here with ONNX Runtime (independent of the tool)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    images = np.stack([np.load(p) for p in sorted(folder.glob("*.npy"))])
    logits = session.run(None, {session.get_inputs()[0].name: images})[0]
    return float((logits.argmax(axis=1) == labels).mean())
