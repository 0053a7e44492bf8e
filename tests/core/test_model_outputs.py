"""Verdicts on the output structures models really return (issue 43): a dict (transformers'
``ModelOutput``, a segmenter's ``OrderedDict``), a detector's ``list[dict]`` whose rows tie,
outputs that are all zero, integer inputs. Every model is built by the test."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from deploylens.core.cli import main
from deploylens.core.pytorch.outputs import flatten, output_names
from deploylens.core.validate.pairing import OutputsComparator, match_rows, pair_outputs
from deploylens.core.validate.tolerances import Tolerances

MODELS = textwrap.dedent(
    '''
    import collections
    import torch


    class Encoder(torch.nn.Module):
        """A dict like transformers' ModelOutput: two tensors and a None that is dropped."""

        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.embed = torch.nn.Embedding(50, 8)
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, input_ids, attention_mask):
            hidden = self.proj(self.embed(input_ids)) * attention_mask.unsqueeze(-1)
            return collections.OrderedDict(
                last_hidden_state=hidden, attentions=None, pooler_output=hidden.mean(1))


    def encoder():
        ids = torch.randint(0, 50, (1, 6))
        return Encoder().eval(), (ids, torch.ones_like(ids))


    def encoder_perturbed():
        model, example = encoder()
        with torch.no_grad():
            model.proj.weight[0] += 0.5
        return model, example


    class Zeros(torch.nn.Module):
        def forward(self, x):
            return x * 0.0


    def zeros():
        return Zeros().eval(), (torch.rand(1, 4),)


    def ids_only():
        return Encoder().eval(), None
    '''
)


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return path


def test_outputs_flatten_as_the_exporters_do() -> None:
    import collections

    import torch

    value = [
        {"boxes": torch.zeros(2, 4), "labels": torch.zeros(2), "scores": torch.ones(2)},
    ]
    leaves = flatten(value)
    assert [p for p, _ in leaves] == ["0.boxes", "0.labels", "0.scores"]
    assert output_names(leaves) == ["boxes", "labels", "scores"]
    named = collections.OrderedDict(a=torch.ones(1), b=None, c=(torch.zeros(1), torch.ones(2)))
    assert [p for p, _ in flatten(named)] == ["a", "c.0", "c.1"]  # None dropped, order kept
    assert output_names(flatten(torch.ones(3))) == []  # a bare tensor keeps the exporter's name
    assert output_names(flatten((torch.ones(1), torch.ones(1)))) == []


def test_outputs_pair_by_name_else_by_position() -> None:
    leaves = [("logits", np.zeros(2)), ("hidden", np.zeros(3))]
    assert pair_outputs(["hidden", "logits"], leaves).torch_index == [1, 0]
    by_position = pair_outputs(["out_a", "out_b"], leaves)
    assert by_position.how == "by position" and by_position.torch_index == [0, 1]
    fewer = pair_outputs(["out_a"], leaves)
    assert fewer.extra == ["hidden"]


def test_detections_in_another_order_are_the_same_set() -> None:
    """A Faster R-CNN export's 100 boxes, 78 of them sharing one score: another order of the
    same rows passes; another row fails; another count is said as a count."""
    rng = np.random.default_rng(0)
    boxes = rng.uniform(0, 100, (100, 4)).astype(np.float32)
    scores = np.full(100, 0.5, np.float32)
    scores[:22] = rng.uniform(0.6, 0.9, 22)
    labels = rng.integers(0, 5, 100)
    order = rng.permutation(100)
    names = ["boxes", "scores", "labels"]
    want: list[tuple[str, np.ndarray]] = [
        ("0.boxes", boxes), ("0.scores", scores), ("0.labels", labels)
    ]  # fmt: skip
    assert match_rows({"boxes": boxes[order], "scores": scores[order], "labels": labels[order]},
                      {"boxes": boxes, "scores": scores, "labels": labels}) is not None  # fmt: skip

    same = OutputsComparator(names, Tolerances())
    same.add([boxes[order], scores[order], labels[order]], want)
    assert all(c.passed for c in same.results()), same.results()
    assert any("compared as a set of 100 rows" in n for n in same.notes)

    moved = boxes[order].copy()
    moved[3] += 7.0
    other = OutputsComparator(names, Tolerances())
    other.add([moved, scores[order], labels[order]], want)
    assert not other.results()[0].passed

    fewer = OutputsComparator(names, Tolerances())
    fewer.add([boxes[:90], scores[:90], labels[:90]], want)
    results = fewer.results()
    assert not results[0].passed
    assert "ONNX Runtime returned 90 where PyTorch returned 100" in results[0].reason


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_a_model_returning_a_dict_exports_and_validates(
    exporter: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every transformers model returns a dict: a right export was "2 outputs where PyTorch
    gave 1" (rc 1). Now it passes, its outputs take the dict's keys, and a perturbed copy of the
    model fails."""
    factories = _write(tmp_path)
    out = tmp_path / f"{exporter}.onnx"
    code = main(["export", f"{factories}:encoder", "--exporter", exporter, "--out", str(out),
                 "--trust", "--json"])  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["ok"] and result["ort"]["agrees"], result
    import onnx

    assert [o.name for o in onnx.load(str(out)).graph.output] == [
        "last_hidden_state", "pooler_output"
    ]  # fmt: skip
    assert main(["validate", str(out), "--torch", f"{factories}:encoder", "--trust"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PASS"), text
    assert "input_ids int64 in [" in text  # the source's own example: ids, not floats
    code = main(["validate", str(out), "--torch", f"{factories}:encoder_perturbed", "--trust"])
    assert code == 1 and capsys.readouterr().out.startswith("FAIL")


@pytest.mark.slow
def test_outputs_all_zero_are_inconclusive_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "outputs DIFFER … max |Δ| 0" (rc 1) for a model whose outputs are all zero: the
    headline, the exit code and the detail now all say inconclusive."""
    factories = _write(tmp_path)
    out = tmp_path / "zeros.onnx"
    code = main(["export", f"{factories}:zeros", "--out", str(out), "--trust"])
    text = capsys.readouterr().out
    assert code == 3 and "INCONCLUSIVE" in text and "DIFFER" not in text, text
    code = main(["validate", str(out), "--torch", f"{factories}:zeros", "--trust"])
    text = capsys.readouterr().out
    assert code == 3 and text.startswith("INCONCLUSIVE") and "FAIL" not in text


@pytest.mark.slow
def test_integer_inputs_follow_their_meaning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--input input_ids:1x6:int64`` drew from [-1, 1] (an embedding's IndexError); validate
    drew ids from 0..9 and said "uniform in [-1, 1]". Ids now stay in the vocabulary, masks are
    ones, the sentence says so, and an index outside the table names the fix."""
    factories = _write(tmp_path)
    out = tmp_path / "ids.onnx"
    code = main(["export", f"{factories}:ids_only", "--input", "input_ids:1x6:int64",
                 "--input", "attention_mask:1x6:int64", "--exporter", "torchscript",
                 "--out", str(out), "--trust", "--script"])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0, text
    assert "torch.randint(0, " in text and "dtype=torch.int64" in text  # the reproducer too
    code = main(["validate", str(out), "--json"])  # ONNX Runtime alone: inputs from the file
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (
        "input_ids integers in [0, 49] (the 50 rows of the embedding it indexes)"
        in (result["inputs_used"])
    )
    assert "attention_mask all 1 (a mask)" in result["inputs_used"]
    code = main(["export", f"{factories}:ids_only", "--input", "input_ids:1x6:int64:60:90",
                 "--input", "attention_mask:1x6:int64", "--out", str(tmp_path / "bad.onnx"),
                 "--trust"])  # fmt: skip
    captured = capsys.readouterr()
    said = captured.err + captured.out
    # the table the input feeds, named with its own size (not the model's smallest table)
    assert code == 1 and "input_ids (values" in said and "feeds the embedding" in said
    assert "of 50 rows" in said and "input_ids:1x6:int64:0:49" in said
    assert "attention_mask (values" not in said  # only the input outside the table
    assert ":LOW:HIGH" in said


def test_an_input_spec_is_checked_where_it_is_typed() -> None:
    from deploylens.core.errors import UserError
    from deploylens.core.pytorch.source import parse_input

    for text, words in (("x:0x3", "between 1 and"), ("x:1x-2", "between 1 and"),
                        ("x:1x3:float99", "unknown dtype"), ("x:1x3:float32:2:1", "is empty"),
                        ("x:1x3:float32:nan:1", "is empty"), ("x", "use NAME:SHAPE")):  # fmt: skip
        with pytest.raises(UserError, match=words):
            parse_input(text)
    spec = parse_input("ids:1x16:int64")
    assert spec.value_range(vocabulary=1000) == (0.0, 999.0)
    assert parse_input("attention_mask:1x16:int64").value_range(1000) == (0.0, 1.0)
