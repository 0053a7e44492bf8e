"""Importing torchvision without importing TorchDynamo.

torchvision's ``ops/roi_align.py`` imports ``torch._dynamo.utils`` at module level for one
function, ``is_compile_supported``, which it calls only inside ``roi_align`` (and only without
compiled ops, or deterministic on a GPU); every torchvision model module imports
``torchvision.ops``. Importing TorchDynamo for that was ~1.4 s of the CPU of a ~5 s
``validate --torch torchvision:vit_b_16`` here, for a model that is never compiled. torchvision
means it to be lazy too (pytorch/vision#8436: importing dynamo "has undesirable side effects for
eager mode only users"). timm imports TorchDynamo itself (``timm.optim``): not helped here.

While ``import_deferring_dynamo`` imports a module, the name ``torch._dynamo.utils`` resolves to
a stand-in: its ``is_compile_supported`` imports the real module when first called, and any other
attribute imports it at once. The stand-in leaves ``sys.modules`` when the import is done, so
every later import of TorchDynamo (an export, ``torch.compile``) gets the real modules.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

NAME = "torch._dynamo.utils"


class _StandIn(ModuleType):
    """``torch._dynamo.utils`` until something needs more than ``is_compile_supported``."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system's own questions (``__path__``)
            raise AttributeError(name)
        return getattr(_real(), name)


def _real() -> ModuleType:
    if isinstance(sys.modules.get(NAME), _StandIn):
        del sys.modules[NAME]
    return importlib.import_module(NAME)


def is_compile_supported(*args: Any, **kwargs: Any) -> Any:
    """torch's own function, imported on the first call."""
    return _real().is_compile_supported(*args, **kwargs)


@contextmanager
def dynamo_deferred() -> Iterator[None]:
    """Within: ``torch._dynamo.utils`` is the stand-in, unless TorchDynamo is already loaded."""
    if "torch._dynamo" in sys.modules or NAME in sys.modules:
        yield
        return
    stand_in = _StandIn(NAME, "deferred: deploylens.core.pytorch.deferred_dynamo")
    stand_in.is_compile_supported = is_compile_supported  # type: ignore[attr-defined]
    sys.modules[NAME] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(NAME) is stand_in:
            del sys.modules[NAME]


def import_deferring_dynamo(name: str) -> Any:
    """``import name`` (``torchvision``) without importing TorchDynamo for it."""
    with dynamo_deferred():
        return importlib.import_module(name)
