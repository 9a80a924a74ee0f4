"""A run's alignment layer (layer.py): fitted to the run's training pairs and eflomal's links of
them (`seq2seq align-train`), kept in the run (aligner.safetensors, aligner.json), and read back
by `seq2seq align`, which aligns with it by default once it is there.

Its threshold is chosen on the shipped gold set's development half where the run translates its
languages (en->fr, or fr->en: the gold pairs turned round) and the source tree is at hand, else
0.5; aligner.json says which."""

import json
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from seq2seq.alignment.layer import AlignLayer, frozen_states, teacher_distribution, train_layer
from seq2seq.alignment.words import piece_words, split_words
from seq2seq.atomic import write_atomic, write_with
from seq2seq.errors import Seq2SeqError, first_line
from seq2seq.fields import check
from seq2seq.runs.identity import stale, weights_digest
from seq2seq.runs.tensor_file import read_tensors

WEIGHTS, SETTINGS = "aligner.safetensors", "aligner.json"
GOLD = Path(__file__).resolve().parents[2] / "data" / "alignment"  # the shipped gold set (source tree)
TEACHER = "eflomal, grow-diag-final-and"
THRESHOLDS = tuple(round(0.1 * k, 1) for k in range(1, 10))


def examples_of(model, tokenizer, sources: list[str], targets: list[str], links=None) -> list:
    """Each pair's frozen states and pieces' words (and with `links`, its teacher distribution);
    pairs with a side of no pieces are None."""
    src_ids, tgt_ids = tokenizer.encode(sources), tokenizer.encode(targets, "target")
    limit = model.cfg.max_positions - 1
    src_ids, tgt_ids = [s[:limit] for s in src_ids], [t[:limit] for t in tgt_ids]
    states = frozen_states(model, src_ids, tgt_ids)
    out = []
    for n, (s, t, state) in enumerate(zip(src_ids, tgt_ids, states, strict=True)):
        if not s or not t:
            out.append(None)
            continue
        words = piece_words(tokenizer.id_pieces(s)), piece_words(tokenizer.id_pieces(t))
        dist = None if links is None else teacher_distribution(*words, links[n])
        out.append((*state, words, dist))
    return out


def word_mass(layer: AlignLayer, example) -> np.ndarray:
    """(target words, source words) the mass each target word's pieces give each source word."""
    from seq2seq.alignment.extract import word_scores

    *states, (source_words, target_words), _ = example
    with torch.no_grad():
        pieces = layer(*states).exp()[:, :-1].numpy()  # NULL's share left out
    return word_scores(pieces, source_words, target_words)


def teacher(pairs: list[tuple[str, str]], langs: tuple[str, str], say) -> tuple[list[str], list[str], list]:
    """`pairs` (raw lines) split as the gold set's words (`split_words`) and eflomal's links of them
    (both directions, symmetrized)."""
    from seq2seq.alignment.baseline import eflomal_links

    sources = [" ".join(split_words(s, langs[0])) for s, _ in pairs]
    targets = [" ".join(split_words(t, langs[1])) for _, t in pairs]
    start = time.perf_counter()
    links = [x.sure for x in eflomal_links(sources, targets)]
    say(f"eflomal's links of {len(pairs)} pairs ({time.perf_counter() - start:.0f} s)")
    return sources, targets, links


def fit(model, tokenizer, pairs: list[tuple[str, str]], langs: tuple[str, str], epochs: int, log=None):
    """The layer fitted to `pairs` (raw lines) and eflomal's links of them, and the threshold;
    `log(message)` says each step."""
    say, began = log or (lambda message: None), time.perf_counter()
    sources, targets, links = teacher(pairs, langs, say)
    start = time.perf_counter()
    examples = [e for e in examples_of(model, tokenizer, sources, targets, links) if e is not None]
    say(f"the model's states of {len(examples)} pairs ({time.perf_counter() - start:.0f} s)")
    training = [(*e[:3], e[4]) for e in examples]
    layer = train_layer(model.cfg.d_model, training, epochs, log=epoch_line(epochs, say))
    seconds = round(time.perf_counter() - began, 1)
    return layer, settings_of(layer, (model, tokenizer), langs, len(examples), epochs, seconds=seconds)


def fit_together(forward, reverse, pairs: list[tuple[str, str]], langs, epochs: int, weight: float, log=None):
    """Two layers fitted together (agreement.py): `forward` and `reverse` each (model, tokenizer)
    of a run and of its reverse run, `pairs` (raw lines) in the forward run's languages `langs`;
    each layer with its threshold chosen as `fit` chooses it. A pair either side reads as no
    pieces, or whose words the two runs count apart (a line cut at a model's limit), is left out."""
    from seq2seq.alignment.agreement import train_together

    say, began = log or (lambda message: None), time.perf_counter()
    sources, targets, links = teacher(pairs, langs, say)
    start = time.perf_counter()
    ahead = examples_of(*forward, sources, targets, links)
    behind = examples_of(*reverse, targets, sources, [{(j, i) for i, j in x} for x in links])
    examples = [(a, b) for a, b in zip(ahead, behind, strict=True) if counted_alike(a, b)]
    say(f"the two models' states of {len(examples)} pairs ({time.perf_counter() - start:.0f} s)")
    d_models = forward[0].cfg.d_model, reverse[0].cfg.d_model
    layers = train_together(d_models, examples, epochs, weight, log=epoch_line(epochs, say))
    seconds = round(time.perf_counter() - began, 1)
    return [
        (layer, settings_of(layer, run, read, len(examples), epochs, agreement=weight, seconds=seconds))
        for layer, run, read in zip(layers, (forward, reverse), (langs, langs[::-1]), strict=True)
    ]


def settings_of(layer, run: tuple, langs: tuple[str, str], pairs: int, epochs: int, **more) -> dict:
    """What aligner.json keeps of a fitted layer: its threshold chosen on the development half
    (`run`: the model and tokenizer it reads), how it was fitted, and `more`."""
    threshold, dev_aer = choose_threshold(layer, *run, langs)
    return {
        "threshold": threshold,
        "dev_aer": dev_aer,
        "pairs": pairs,
        "epochs": epochs,
        "teacher": TEACHER,
        **more,
    }


def counted_alike(ahead, behind) -> bool:
    """Both directions' examples of a pair exist and read the same words, turned round."""
    if ahead is None or behind is None:
        return False
    (source, target), (back_source, back_target) = ahead[3], behind[3]
    return (source.max(), target.max()) == (back_target.max(), back_source.max())


def epoch_line(epochs: int, say):
    return lambda epoch, loss: say(f"epoch {epoch} of {epochs}: loss {loss:.3f}")


def choose_threshold(layer, model, tokenizer, langs) -> tuple[float, float | None]:
    """The threshold with the lowest AER on the gold set's development half (its AER), or 0.5 and
    None where the gold set does not fit the run."""
    from seq2seq.alignment.extract import extract
    from seq2seq.alignment.score import score

    half = development_half(langs)
    if half is None:
        return 0.5, None
    sources, targets, gold = half
    masses = [
        None if e is None else word_mass(layer, e) for e in examples_of(model, tokenizer, sources, targets)
    ]
    best = min(
        (score([set() if m is None else extract(m, "mass", t) for m in masses], gold).aer, t)
        for t in THRESHOLDS
    )
    return best[1], round(best[0], 4)


def development_half(langs: tuple[str, str]) -> tuple[list[str], list[str], list] | None:
    """The shipped gold set's development half as a run between `langs` reads it (sources,
    targets, their links; a fr->en run's pairs turned round), or None where it does not fit the
    run or the source tree is not at hand."""
    from seq2seq.alignment.pharaoh import read_links

    if set(langs) != {"en", "fr"} or not (GOLD / "dev.align").is_file():
        return None
    sources, targets = ((GOLD / f"dev.{lang}").read_text(encoding="utf-8").splitlines() for lang in langs)
    gold = read_links(GOLD / "dev.align")
    return sources, targets, gold if langs[0] == "en" else [links.turned() for links in gold]


def save(run: Path, layer: AlignLayer, settings: dict) -> None:
    """The layer into the run, its settings recording the weights it was fitted to."""
    state = {k: v.contiguous() for k, v in layer.state_dict().items()}
    write_with(Path(run) / WEIGHTS, lambda path: save_file(state, str(path)))
    kept = {"config": layer.config, **settings, "weights": weights_digest(run)}
    write_atomic(Path(run) / SETTINGS, (json.dumps(kept, indent=1) + "\n").encode("utf-8"))


def load(run: Path) -> AlignLayer | None:
    """The run's layer (its `threshold` set), or None where it has none, or where its settings
    recorded other weights than the run's (a notice says so)."""
    weights, settings = Path(run) / WEIGHTS, Path(run) / SETTINGS
    if not weights.is_file():
        return None
    config, threshold, fitted_to = read_settings(settings)
    if stale(run, fitted_to, settings, f"seq2seq align-train --run {run}"):
        return None
    try:
        layer = AlignLayer(**config)
        layer.load_state_dict(read_tensors(weights)[0])
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise Seq2SeqError(
            f"{weights}: not an alignment layer ({first_line(e)}); train it again with align-train"
        ) from None
    layer.threshold = threshold
    return layer.eval()


LAYER_CONFIG = {"d_model": (1, 1 << 16), "width": (1, 1 << 16), "heads": (1, 1 << 10)}


def read_settings(path: Path) -> tuple[dict, float, str | None]:
    """aligner.json's layer config, threshold and the weights it was fitted to, each checked: one
    line naming the file and the field otherwise."""
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise Seq2SeqError(
            f"{path}: not readable JSON ({first_line(e)}); fit it again with align-train"
        ) from None
    try:
        if not isinstance(kept, dict) or not isinstance(kept.get("config"), dict):
            raise ValueError(f"{path}: config must be a JSON object")
        config = kept["config"]
        if set(config) != set(LAYER_CONFIG):
            raise ValueError(
                f"{path}: config must hold {', '.join(LAYER_CONFIG)}, not {', '.join(map(str, config))}"
            )
        for name, bounds in LAYER_CONFIG.items():
            check(f"config.{name}", config[name], int, str(path), bounds)
        if config["width"] % config["heads"]:
            raise ValueError(f"{path}: config.width must be a multiple of config.heads")
        check("threshold", kept.get("threshold"), float, str(path), (0.0, 1.0))
        check("weights", kept.get("weights"), str | None, str(path))
    except ValueError as e:
        raise Seq2SeqError(f"{e}; fit it again with align-train") from None
    return config, float(kept["threshold"]), kept.get("weights")


def layer_method(run: Path):
    """The alignment Method that reads the run's layer (`--method layer`), or None where the run
    has none."""
    from seq2seq.alignment.methods import Method

    layer = load(run)
    return None if layer is None else Method("layer", aligner=layer)
