"""The zoo's vision half (``zoo_tier.py``): timm CNNs and vision transformers by name,
torchvision detectors, a segmenter, optical flow and a video network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.core.zoo_tier import check_architecture, measured, record, worker, zoo_root
from tests.helpers.zoo import ZOO

__all__ = ["measured", "worker", "zoo_root"]  # the module's fixtures
pytestmark = [pytest.mark.slow_tier, pytest.mark.timeout(1200)]
pytest.importorskip("timm")


@pytest.mark.parametrize("arch", [a for a in ZOO if a.kind != "hf"], ids=lambda a: a.name)
def test_a_vision_architecture_gets_no_wrong_verdict(
    arch: Any, zoo_root: Path, worker: Any, measured: Any
) -> None:
    wrong = check_architecture(arch, zoo_root, worker, measured)
    record(arch, wrong, zoo_root)
    assert not wrong, "\n".join(wrong)
