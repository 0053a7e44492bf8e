"""Data folders: images through a preprocessing spec (checked against torchvision's own
transforms on the same PIL images), arrays, batching, and the errors for bad folders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from deploylens.core.data.preprocess import batches, load_image, parse_preprocess
from deploylens.core.errors import UserError


def write_images(folder: Path, count: int, size: tuple[int, int] = (300, 260)) -> list[Path]:
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        path = folder / f"img{i}.png"
        Image.fromarray(pixels).save(path)
        paths.append(path)
    return paths


def test_imagenet_preset_matches_torchvision_transforms(tmp_path: Path) -> None:
    from torchvision import transforms

    (path,) = write_images(tmp_path, 1)
    spec = parse_preprocess("imagenet")
    ours = load_image(path, spec)
    reference = transforms.Compose(
        [
            transforms.Resize(256, interpolation=transforms.InterpolationMode.BILINEAR),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    )(Image.open(path).convert("RGB"))
    assert ours.shape == (3, 224, 224)
    np.testing.assert_allclose(ours, reference.numpy(), atol=1e-5)
    assert parse_preprocess(spec.to_spec()) == spec  # the spec line round-trips


def test_layout_order_and_bad_specs(tmp_path: Path) -> None:
    (path,) = write_images(tmp_path, 1, (8, 6))
    rgb = load_image(path, parse_preprocess("layout=NHWC"))
    bgr = load_image(path, parse_preprocess("layout=NHWC,order=BGR"))
    assert rgb.shape == (6, 8, 3) and np.array_equal(rgb[..., ::-1], bgr)
    assert rgb.max() <= 1.0
    for bad in ("resize=big", "layout=CHWN", "mean", "std=0/1/1", "gamma=2"):
        with pytest.raises(UserError):
            parse_preprocess(bad)
    with pytest.raises(UserError, match="larger than the image"):
        load_image(path, parse_preprocess("crop=64x64"))


def test_batches_from_images_and_arrays(tmp_path: Path) -> None:
    write_images(tmp_path / "images", 5, (40, 40))
    inputs = [("image", [None, 3, 32, 32])]
    spec = parse_preprocess("resize=32,crop=32")
    got = list(batches(tmp_path / "images", inputs, 2, spec))
    assert [b["image"].shape for b in got] == [(2, 3, 32, 32)] * 2 + [(1, 3, 32, 32)]
    assert len(list(batches(tmp_path / "images", inputs, 2, spec, limit=1))) == 1
    arrays = tmp_path / "arrays"
    arrays.mkdir()
    np.save(arrays / "a.npy", np.zeros((4, 3, 32, 32), np.float32))  # 4 samples with a batch axis
    np.savez(arrays / "b.npz", image=np.ones((3, 32, 32), np.float32))  # one sample
    shapes = [b["image"].shape for b in batches(arrays, inputs, 8)]
    assert shapes == [(5, 3, 32, 32)]  # the file's samples one by one, re-batched
    assert [b["image"].shape for b in batches(arrays, inputs, 2)] == [(2, 3, 32, 32)] * 2 + [
        (1, 3, 32, 32)
    ]
    np.savez(arrays / "c.npz", other=np.ones(3))
    with pytest.raises(UserError, match="no array for input 'image'"):
        list(batches(arrays, inputs, 8))
    with pytest.raises(UserError, match="wants shape"):
        list(batches(tmp_path / "images", inputs, 2, parse_preprocess("resize=30,crop=30")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="has no images"):
        list(batches(tmp_path / "empty", inputs, 1))


def test_validate_with_an_image_folder(samples: Path, tmp_path: Path) -> None:
    from tests.core.test_validate import run_validate

    write_images(tmp_path / "images", 3, (48, 40))
    result = run_validate(
        str(samples / "small_cnn.dynamo.onnx"), "--torch", "sample:small_cnn",
        "--inputs", str(tmp_path / "images"), "--preprocess", "resize=32,crop=32x32",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "image [1, 3, 32, 32]" in result.stdout
    bad = run_validate(str(samples / "small_cnn.dynamo.onnx"), "--inputs", str(tmp_path / "no"))
    assert bad.returncode != 0 and "does not exist" in bad.stderr
