"""ONNX domain names as the tool spells them: the default domain is "ai.onnx", never ""."""

from __future__ import annotations

DEFAULT_DOMAIN = "ai.onnx"


def domain_name(domain: str) -> str:
    return domain or DEFAULT_DOMAIN
