"""The collector pause around bulk builds (a graph's IR, a trace's import) gives back the state
it found: on after, when it was on; off, when a caller (the GUI's own collector) had it off."""

from __future__ import annotations

import gc

import pytest

from deploylens.core.bulk import no_cyclic_collection
from deploylens.core.graph.ir import build_ir
from tests.helpers.onnx_models import chain_model


@pytest.mark.parametrize("enabled", [True, False])
def test_the_pause_restores_what_it_found_even_when_the_build_raises(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with no_cyclic_collection():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError), no_cyclic_collection():
            raise ValueError("a build that fails")
        assert gc.isenabled() is enabled
        ir = build_ir(chain_model(30, dims=(1, 4)).graph)  # pauses inside, as the GUI's does
        assert ir.op_count == 30 and gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
