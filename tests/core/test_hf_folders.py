"""``hf:DIR`` held to the standard of the older inputs (issue 63): an encoder-decoder's export
runs on its own inputs and validates (Optimum's axis names: the decoder's tokens have their
own length), a folder whose weights lack part of the backbone is refused naming how many and
which (a new task head starting random is said), and a hostile header or config ends in one
sentence naming the file and the field. Every folder is written by the test itself with
``save_pretrained`` (tiny configs, random weights) or by hand."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import onnx
import pytest

from deploylens.core.errors import UserError
from deploylens.core.pytorch.hf_checks import check_config, read_header
from tests.core.test_cli import DEPLOYLENS

transformers = pytest.importorskip("transformers")


def _bart(folder: Path) -> Path:
    import torch

    torch.manual_seed(0)
    config = transformers.BartConfig(
        vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64,
    )  # fmt: skip
    transformers.BartModel(config).save_pretrained(folder)
    return folder


def _bert(folder: Path) -> Path:
    import torch

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64,
    )  # fmt: skip
    transformers.BertModel(config).save_pretrained(folder)
    return folder


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DEPLOYLENS, *argv], capture_output=True, text=True, timeout=600)


def test_an_encoder_decoder_exports_runs_and_validates(tmp_path: Path) -> None:
    """The issue's miss: decoder_input_ids got the encoder's axis name, ONNX Runtime refused
    the file on its own inputs (encoder 16 tokens, decoder 4), and export said ``ok: true``
    over 0 compared outputs. Now: Optimum's names, and PASS over both outputs."""
    folder = _bart(tmp_path / "bart")
    out = tmp_path / "bart.onnx"
    done = run("export", f"hf:{folder}", "--out", str(out), "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["ort"]["ok"] and report["ort"]["agrees"] and report["ort"]["compared"] == 2
    assert report["verdict"]["evidence"]["count"] == 2 and report["verdict"]["exit_code"] == 0
    axes = {
        i.name: [d.dim_param for d in i.type.tensor_type.shape.dim]
        for i in onnx.load(str(out), load_external_data=False).graph.input
    }
    assert axes["input_ids"] == ["batch_size", "sequence_length"]
    assert axes["decoder_input_ids"] == ["batch_size", "decoder_sequence_length"]
    checked = run("validate", str(out), "--torch", f"hf:{folder}")
    assert checked.returncode == 0 and checked.stdout.startswith("PASS"), checked.stdout[-2000:]


def test_a_smoke_test_that_could_not_run_is_never_ok() -> None:
    """The verdict over the export's smoke test: failed on the export's own inputs is a FAIL
    (exit 1), could not run for want of a kernel is INCONCLUSIVE (exit 3), never PASS."""
    from deploylens.core.export.result import ExportResult, OrtSmoke
    from deploylens.core.export.settings import ExportSettings
    from deploylens.core.pytorch.source import ModelSource

    def verdict(smoke: OrtSmoke) -> tuple[str, int]:
        result = ExportResult(ModelSource("hf", "x"), ExportSettings(), "", "", "m.onnx", ok=True,
                              actual_opset=18, ort=smoke)  # fmt: skip
        found = result.verdict()
        assert '"verdict"' in result.to_json()
        return found.severity, found.exit_code

    assert verdict(OrtSmoke(False, "node x (Gather): Shape mismatch")) == ("fail", 1)
    assert verdict(OrtSmoke(False, "NOT_IMPLEMENTED: no kernel", unavailable=True)) == ("warn", 3)
    assert verdict(OrtSmoke(True, compared=0, agrees=False)) == ("warn", 3)
    assert verdict(OrtSmoke(True, compared=2, agrees=True)) == ("pass", 0)


def _drop_weights(folder: Path, count: int | None) -> int:
    """Rewrites the folder's safetensors without its first ``count`` tensors (all: None)."""
    from safetensors.torch import load_file, save_file

    file = folder / "model.safetensors"
    tensors = load_file(str(file))
    gone = sorted(tensors)[: len(tensors) if count is None else count]
    save_file({k: v for k, v in tensors.items() if k not in gone}, str(file),
              metadata={"format": "pt"})  # fmt: skip
    return len(tensors)


@pytest.mark.parametrize("dropped", [16, None])
def test_missing_backbone_weights_are_refused(tmp_path: Path, dropped: int | None) -> None:
    """A folder lacking 16 of its 39 tensors, or holding none, exported and validated with PASS
    before (the missing parts random, transformers' report swallowed)."""
    folder = _bert(tmp_path / "bert")
    total = _drop_weights(folder, dropped)
    done = run("export", f"hf:{folder}", "--out", str(tmp_path / "m.onnx"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    said = done.stderr.splitlines()[0]
    assert said.startswith("deploylens: error: hf:bert: its safetensors lack")
    assert f"lack {dropped or total} of the {total} weights" in said
    assert "embeddings." in said  # the first names
    assert not (tmp_path / "m.onnx").exists()


def test_a_new_task_head_starting_random_is_said(tmp_path: Path) -> None:
    folder = _bert(tmp_path / "bert")
    done = run("export", f"hf:{folder}", "--task", "text-classification",
               "--out", str(tmp_path / "c.onnx"))  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the task head (classifier.bias, classifier.weight) is not in bert's weights" in (
        done.stdout
    )


def _safetensors(header: dict | bytes, data: bytes = b"", length: int | None = None) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


GOOD = {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}
HOSTILE_HEADERS: dict[str, tuple[dict | bytes, bytes, int | None, str]] = {
    "huge shape": ({"w": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 16]}},
                   b"\0" * 16, None, "needs"),
    "offsets past the file": ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}},
                              b"\0" * 8, None, "outside"),
    "overlapping": ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
                    b"\0" * 12, None, "same bytes"),
    "2^63 header length": (GOOD, b"\0" * 16, 2**63, "header claims"),
    "100 MB header": (GOOD, b"\0" * 16, 100_000_001, "header claims"),
    "truncated": (GOOD, b"", 10_000, "truncated"),
    "unknown dtype": ({"w": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 2]}},
                      b"\0" * 2, None, "dtype"),
    "negative dimension": ({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}},
                           b"\0" * 16, None, "shape"),
    "not json": (b"{not json", b"", None, "not JSON"),
    "a list": (b"[1, 2]", b"", None, "not a JSON object"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE_HEADERS))
def test_every_hostile_header_is_one_sentence(tmp_path: Path, case: str) -> None:
    header, data, length, said = HOSTILE_HEADERS[case]
    file = tmp_path / "model.safetensors"
    file.write_bytes(_safetensors(header, data, length))
    with pytest.raises(UserError) as caught:
        read_header(file)
    assert said in caught.value.message and "model.safetensors" in caught.value.message


def test_empty_and_good_headers(tmp_path: Path) -> None:
    file = tmp_path / "model.safetensors"
    file.write_bytes(b"")
    with pytest.raises(UserError, match="not a safetensors file"):
        read_header(file)
    file.write_bytes(_safetensors({**GOOD, "__metadata__": {"format": "pt"}}, b"\0" * 16))
    assert read_header(file)["w"].shape == (2, 2)


def test_sizes_per_stage_are_checked_each() -> None:
    """SegFormer gives its heads per stage ([1, 2]): each a size, none refused for being a list."""
    check_config({"num_attention_heads": [1, 2], "hidden_sizes": [8, 16]}, "segformer/config.json")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"num_attention_heads": 0}, "num_attention_heads is 0"),
        ({"hidden_size": -32}, "hidden_size is -32"),
        ({"vocab_size": 10**12}, "vocab_size"),
        ({"num_hidden_layers": "2"}, "num_hidden_layers is '2'"),
        ({"num_attention_heads": 3}, "not divisible by num_attention_heads 3"),
        ({"text_config": {"hidden_size": 0}}, "(text_config): hidden_size is 0"),
        ({"intermediate_size": True}, "intermediate_size is True"),
        ({"num_attention_heads": [1, 0]}, "num_attention_heads is [1, 0]"),
        ({"num_attention_heads": []}, "num_attention_heads is []"),
    ],
)
def test_config_sizes_are_checked(change: dict, said: str) -> None:
    config = {"hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 2, **change}
    with pytest.raises(UserError) as caught:
        check_config(config, "bert/config.json")
    assert said in caught.value.message and "bert/config.json" in caught.value.message
