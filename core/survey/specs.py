"""What ``deploylens survey`` is asked to run: model specs and patterns expanded into the specs
of single models — ``torchvision:*`` (the classifiers), ``torchvision:detection/*`` (a family),
``timm:convnext_*``, plain specs (``hf:DIR``, ``FILE.py:factory``, ``MODEL.onnx``) and
``--from LIST.txt``. The registries are asked only when a pattern names them."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from deploylens.core.errors import UserError
from deploylens.core.files import read_text

LIST_LIMIT = 4 << 20
# torchvision's families by the module its builders live in; "" is the classifiers
TORCHVISION_FAMILIES = ("", "detection", "segmentation", "video", "optical_flow", "quantization")


def expand(patterns: list[str], list_file: str = "") -> list[str]:
    """Every single-model spec the patterns and the list name, in order, each once."""
    given = list(patterns)
    if list_file:
        text = read_text(list_file, "survey list (--from)", limit=LIST_LIMIT)
        given += [line.strip() for line in text.splitlines()
                  if line.strip() and not line.lstrip().startswith("#")]  # fmt: skip
    if not given:
        raise UserError("Give the models to survey: SPEC or PATTERN ... or --from LIST.txt.")
    specs: list[str] = []
    for item in given:
        for spec in _one(item):
            if spec not in specs:
                specs.append(spec)
    return specs


def _one(item: str) -> list[str]:
    if item.startswith("torchvision:") and any(c in item for c in "*?["):
        return [f"torchvision:{name}" for name in torchvision_names(item[len("torchvision:") :])]
    if item.startswith("timm:") and any(c in item for c in "*?["):
        return [f"timm:{name}" for name in timm_names(item[len("timm:") :])]
    return [item]


def torchvision_names(pattern: str) -> list[str]:
    """``*`` the classifiers, ``detection/*`` a family's builders, ``detection/ssd*`` some."""
    try:
        import torchvision.models as models
    except ImportError:
        raise UserError("torchvision:PATTERN needs torchvision: pip install torchvision") from None
    family, _, glob = pattern.rpartition("/")
    if family not in TORCHVISION_FAMILIES:
        raise UserError(
            f"torchvision:{pattern}: no family '{family}' (families: "
            + ", ".join(f or "(classification)" for f in TORCHVISION_FAMILIES)
            + ")."
        )
    module = getattr(models, family) if family else models
    names = sorted(models.list_models(module=module))
    found = [name for name in names if fnmatch.fnmatchcase(name, glob or "*")]
    if not found:
        raise UserError(f"torchvision:{pattern} matches no model ({len(names)} in the family).")
    return found


def timm_names(pattern: str) -> list[str]:
    try:
        import timm
    except ImportError:
        raise UserError("timm:PATTERN needs timm: pip install timm") from None
    found = sorted(timm.list_models(pattern))
    if not found:
        raise UserError(f"timm:{pattern} matches no model.")
    return found


def slug(spec: str) -> str:
    """A file-name-safe name for a spec's outputs (``torchvision:resnet18`` → ``torchvision-
    resnet18``); distinct specs that clash get the caller's index."""
    text = Path(spec.split(":", 1)[1] if spec.startswith("hf:") else spec).name or spec
    if ":" in spec and not spec.startswith("hf:"):
        text = spec.replace(":", "-").replace("/", "-")
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:100] or "model"
