"""int8 decoding on the CPU: PyTorch's dynamic quantization of the linear layers, applied once to a
loaded model (`seq2seq translate/evaluate --quantize int8`).

Why dynamic: the weights are quantized once here (int8, one scale per output channel), the
activations at every call from their own range, so no calibration data is needed and the run
directory stays as trained. It runs on fbgemm's int8 GEMM, fast on AVX2 CPUs that have no native
bf16. What it costs: one activation scale per call covers every row of the batch, so a sentence's
output can change slightly with the sentences it is batched with (CTranslate2 scales each row).

Which layers: every `nn.Linear` (attention projections, feed-forward, the RNN's attention and output
layers), plus the output projection. That projection is the embedding matrix used through
`F.linear` (tied), about 40% of a decoder step's multiply-adds at 8000 pieces, so it gets its own
int8 copy as `model.generator` while the embedding lookups keep the fp32 matrix. The GRU/LSTM cells
stay fp32 (the recurrence is where rounding accumulates), as do LayerNorms and attention itself.
"""

import copy
import warnings

import torch
from torch import nn

from seq2seq.errors import Seq2SeqError

QUANTIZATIONS = ("int8",)
ENGINES = ("x86", "fbgemm")  # PyTorch's int8 GEMM backends for x86 CPUs, best first


def quantize(model: nn.Module, quantization: str) -> nn.Module:
    """A copy of `model` (either architecture, on the CPU) with int8 linear layers, for decoding
    only; `model` itself is left as it was."""
    if quantization not in QUANTIZATIONS:
        raise Seq2SeqError(f"unknown quantization {quantization!r}; use one of {', '.join(QUANTIZATIONS)}")
    if next(model.parameters()).device.type != "cpu":
        raise Seq2SeqError("--quantize int8 runs on the CPU only; add --device cpu")
    engine = next((e for e in ENGINES if e in torch.backends.quantized.supported_engines), None)
    if engine is None:
        raise Seq2SeqError("this PyTorch build has no x86 int8 engine (fbgemm); decode without --quantize")
    torch.backends.quantized.engine = engine
    model = copy.deepcopy(model).eval()
    if model.generator is None:  # tied: the projection reads the embedding matrix
        model.generator = tied_projection(model.embed)
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():  # torch.ao's deprecation notices name its successor, torchao
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}, torch.qint8, inplace=True)


def tied_projection(embed: nn.Embedding) -> nn.Linear:
    """The output projection of a tied model as a layer of its own: (D) -> (V), no bias."""
    V, D = embed.weight.shape
    linear = nn.Linear(D, V, bias=False)
    linear.weight = embed.weight  # shared until quantize_dynamic packs its own int8 copy
    return linear
