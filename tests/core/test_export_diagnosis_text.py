"""Where a dynamo export failure came from, read out of torch's own report text. The texts are
shaped like torch 2.14's (the T5 encoder's decomposition failure in the model zoo is the real
case: tests/core/test_zoo_text.py); a finding that names no source leaves the user in torch's
internals."""

from __future__ import annotations

from deploylens.core.export.diagnose import diagnose, summary_line

HEAD = (
    "Failed to decompose the FX graph for ONNX compatibility. This is step 2/3 of exporting "
    "the model to ONNX.\n\n## Exception summary\n\n"
)
DECOMPOSE = HEAD + (
    "<class 'ValueError'>: Cannot view a tensor with shape torch.Size([s43, s53, 4, 8]) and "
    "strides (32*s53, 8, 8*s53, 1) as a tensor with shape (s43, s53, 32)!\n\n"
    "While executing %view_4 : [num_users=1] = call_function[target=torch.ops.aten.view.default]"
    "\nOriginal traceback:\n"
    'File "/env/lib/python3.11/site-packages/transformers/models/t5/modeling_t5.py", '
    "line 1131, in forward\n    encoder_outputs = self.encoder(\n"
    '  File "/env/lib/python3.11/site-packages/transformers/models/t5/modeling_t5.py", '
    "line 368, in forward\n    attn_output = attn_output.reshape(*input_shape, -1)\n"
    "Use tlparse to see full graph.\n"
)


def test_a_decomposition_failure_names_the_models_line() -> None:
    first, where = summary_line(DECOMPOSE)
    assert first.startswith("ValueError: Cannot view a tensor")
    assert where == "transformers/models/t5/modeling_t5.py:368 in forward"
    [finding] = diagnose(RuntimeError(DECOMPOSE), "dynamo", 18)
    assert finding.kind == "torch_export"
    assert finding.source == "transformers/models/t5/modeling_t5.py:368 in forward"


def test_caused_by_wins_and_no_summary_gives_nothing() -> None:
    text = HEAD + (
        "<class 'torch._dynamo.exc.Unsupported'>: data-dependent branch\n"
        "  Caused by: (net.py:12 in forward)\n"
        "Original traceback:\n"
        'File "/x/other.py", line 3, in forward\n'
    )
    assert summary_line(text) == ("Unsupported: data-dependent branch", "net.py:12 in forward")
    assert summary_line("RuntimeError: something else entirely") == ("", "")
