"""seq2seq: a small encoder-decoder Transformer translator built around cross-attention.

>>> import seq2seq
>>> model, tokenizer = seq2seq.load_run("runs/multi30k-en-fr")
>>> seq2seq.translate(model, tokenizer, ["The cat sat on the mat."], seq2seq.DecodeOptions()).best
>>> terms = [seq2seq.Terms(include=("chat noir",), avoid=("tapis",))]  # beam search honours them
>>> seq2seq.translate(model, tokenizer, ["The cat sat."], seq2seq.DecodeOptions(), constraints=terms)
>>> request = seq2seq.TranslationRequest(["A DOG RUNS."], avoid=("chien",), confidence=True)
>>> seq2seq.Translator(model, tokenizer).translate(request).best  # what every front door runs
>>> maps = seq2seq.attention(model, tokenizer, "A dog runs.")  # or with a given translation
>>> maps.weights["cross"].shape  # (layers, heads, output pieces + EOS, source pieces + EOS)
>>> seq2seq.check_pairs(model, tokenizer, ["A dog runs."], ["Un chien court."])[0].score  # trust
>>> seq2seq.check_translations(model, tokenizer, ["A dog runs."], ["Un chien."], seq2seq.Calibration.read())

The names below are imported when first used, so `seq2seq --help` does not pay for torch.
"""

import sys
from importlib import import_module

__version__ = "0.1.0"
_PUBLIC = {  # name -> the module that defines it
    "align": "seq2seq.alignment.api",
    "Alignment": "seq2seq.alignment.api",
    "AttentionMaps": "seq2seq.decoding.attention",
    "attention": "seq2seq.decoding.attention",
    "attention_batch": "seq2seq.decoding.attention",
    "Calibration": "seq2seq.trust.calibration",
    "check_pairs": "seq2seq.trust.signals",
    "check_translations": "seq2seq.trust.flags",
    "DecodeOptions": "seq2seq.decoding.search",
    "Glossary": "seq2seq.decoding.terms",
    "Terms": "seq2seq.decoding.terms",
    "translate": "seq2seq.request.translator",
    "translate_document": "seq2seq.request.translator",
    "TranslationRequest": "seq2seq.request.request",
    "Translator": "seq2seq.request.translator",
    "load_run": "seq2seq.runs.load",
    "Seq2SeqError": "seq2seq.errors",
}
__all__ = [*sorted(_PUBLIC), "__version__"]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'seq2seq' has no attribute {name!r}")
    return getattr(import_module(_PUBLIC[name]), name)


# in a notebook an AttentionMaps or an Alignment shows as the offline explorer (IPython's formatters
# are told by name, so neither class imports the views that draw it, and nothing is imported here)
NOTEBOOK_VIEWS = {
    ("seq2seq.decoding.attention", "AttentionMaps"): ("seq2seq.views.explorer", "maps_html"),
    ("seq2seq.alignment.api", "Alignment"): ("seq2seq.alignment.pictures", "notebook_html"),
}


def register_notebook_views(shell) -> None:
    """Tell an IPython shell's HTML formatter how to draw the classes of NOTEBOOK_VIEWS."""
    html = shell.display_formatter.formatters["text/html"]
    for (module, name), (views, function) in NOTEBOOK_VIEWS.items():
        html.for_type_by_name(
            module, name, lambda obj, v=views, f=function: getattr(import_module(v), f)(obj)
        )


def _in_ipython():
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None


if (_shell := _in_ipython()) is not None:
    register_notebook_views(_shell)
