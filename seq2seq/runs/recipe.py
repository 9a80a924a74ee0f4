"""What a run recorded of its recipe that its readers need: its languages (serving it, its model
card, its test split) and its guided alignment (the head `align` reads). Read from config.json's
"train" section field by field, so a run of an older recipe is still served, aligned and exported."""

from pathlib import Path

from seq2seq.errors import Seq2SeqError
from seq2seq.fields import check
from seq2seq.runs.files import CONFIG, load_config

# the guided alignment fields of a recipe, as a run that recorded none (imported, or older) trained
GUIDANCE = {"guided_alignment": None, "guided_layer": None, "guided_position": "output"}


def train_section(run_dir: Path) -> tuple[dict, Path]:
    """config.json's "train" section, and the file's path (to name in an error)."""
    values = load_config(run_dir).get("train")
    where = Path(run_dir) / CONFIG
    if not isinstance(values, dict):
        raise Seq2SeqError(f"{where} has no 'train' section; {run_dir} is not a run this version wrote")
    return values, where


def stored_languages(run_dir: Path) -> tuple[str, str, str]:
    """(corpus, src, tgt) as the run recorded them."""
    values, where = train_section(run_dir)
    recorded = []
    for name in ("corpus", "src", "tgt"):
        if name not in values:
            raise Seq2SeqError(f"{where}: the 'train' section has no {name}")
        try:
            check(name, values.get(name), str, f"{where}: the 'train' section")
        except ValueError as e:
            raise Seq2SeqError(str(e)) from None
        recorded.append(values[name])
    return tuple(recorded)


def stored_guidance(run_dir: Path) -> dict:
    """The guided alignment fields of the recipe a run recorded; a run imported from elsewhere, or
    written before they existed, trained without guidance."""
    values, _ = train_section(run_dir)
    return {name: values.get(name, default) for name, default in GUIDANCE.items()}


def supervised_layer(layer: int | None, n_layers: int) -> int:
    """The decoder layer (1-based) a guide supervises: `layer`, or by default the penultimate
    (Garg et al.), the only one of a one-layer decoder."""
    return layer or max(n_layers - 1, 1)


def trained_head(
    n_layers: int,
    guided_alignment: str | None = None,
    guided_layer: int | None = None,
    guided_position: str = "output",
) -> tuple[str, int, int] | None:
    """How to read the head a recipe's --guided-alignment trained (its fields, as
    `stored_guidance` gives them), as an alignment `Method`'s name, layer and head: the first head of
    the supervised layer, unshifted where it was supervised at the position that predicts a piece,
    shifted by one (Shift-Att) where the piece is the decoder's input; None for a run trained
    without guidance."""
    if guided_alignment is None:
        return None
    name = "shift" if guided_position == "input" else "attention"
    return name, supervised_layer(guided_layer, n_layers), 1


def run_trained_head(run_dir: Path, n_layers: int) -> tuple[str, int, int] | None:
    """`trained_head` of the recipe the run recorded, for its model of `n_layers` cross-attention
    layers (which a run that recorded no guided layer is read by)."""
    return trained_head(n_layers, **stored_guidance(run_dir))
