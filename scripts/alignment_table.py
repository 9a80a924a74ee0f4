"""The alignment table of docs/alignment.md: every method on the same gold pairs, in one run.

The settings are chosen on the development half (the layer, head, extraction rule and position,
unshifted or Shift-Att, of the best attention map) and the figures reported on the test half: the
last layer's mean cross-attention, the settings chosen on dev, Shift-Att (of both), gradient x
input, integrated gradients, the head guided alignment trained (for a run that used it), the run's
alignment layer (for a run `seq2seq align-train` fitted one: its seconds are its fitting's plus its
aligning's), and eflomal trained on the run's training pairs plus the pairs aligned (it draws its
own seed: the median of `--eflomal-runs`, 5 by default, with their range). Each AER
with its 95% bootstrap interval over sentences. With --reverse-run (a run
translating the other way), the two directions' word scores combined (mean, harmonic mean,
product), each run read with its guided head (or the head chosen on dev) and, where both runs
have an alignment layer, with their layers, by the extraction rule the development half chooses.

    python -m scripts.alignment_table --run runs/multi30k-en-fr --data-dir ../shared/corpora/multi30k

`--figure` keeps the table as docs/figures/alignment.json (the run's code committed first).
"""

import argparse
import json
import time
from pathlib import Path

from scripts import figures
from scripts.common import REPO, cpu
from seq2seq.alignment.aligner import SETTINGS, layer_method
from seq2seq.alignment.aligner import load as load_aligner
from seq2seq.alignment.api import COMBINATIONS, align, head_scores, symmetrized
from seq2seq.alignment.baseline import eflomal_with_corpus
from seq2seq.alignment.methods import Method
from seq2seq.alignment.pharaoh import read_links
from seq2seq.alignment.runs import dev_head
from seq2seq.alignment.score import score
from seq2seq.atomic import write_atomic
from seq2seq.decoding.attention import cross_layers
from seq2seq.runs.files import read_metrics
from seq2seq.runs.load import load_run
from seq2seq.runs.recipe import run_trained_head, stored_languages

GOLD = REPO / "data" / "alignment"


def half(name: str, gold_dir: Path) -> tuple[list[str], list[str], list]:
    read = lambda suffix: (gold_dir / f"{name}.{suffix}").read_text(encoding="utf-8").splitlines()  # noqa: E731
    return read("en"), read("fr"), read_links(gold_dir / f"{name}.align")


RULES = [("argmax", 0.5), ("intersect", 0.5), ("grow", 0.5)]
RULES += [("threshold", t) for t in (0.2, 0.3, 0.4, 0.5)]


def best_head(model, tokenizer, dev) -> tuple[str, int, int | None, tuple[str, float], float]:
    """The (method, layer, head, extraction rule) whose attention, shifted or not, has the lowest
    AER on the development half."""
    best = None
    for shifted in (False, True):
        for rule, threshold in RULES:
            table, _ = head_scores(
                model, tokenizer, *dev[:2], dev[2], shifted=shifted, rule=rule, threshold=threshold
            )
            for (layer, head), result in table.items():
                if best is None or result.aer < best[4]:
                    best = ("shift" if shifted else "attention", layer, head, (rule, threshold), result.aer)
    return best


def both_directions(forward, reverse, pairs) -> tuple[list, list]:
    """`pairs` aligned by (model, tokenizer, method) `forward` and, turned round, by `reverse`."""
    (model, tokenizer, method), (back_model, back_tokenizer, back_method) = forward, reverse
    ahead = align(model, tokenizer, pairs[0], pairs[1], method)
    return ahead, align(back_model, back_tokenizer, pairs[1], pairs[0], back_method)


def guided_or(run: Path, model, method: Method | None) -> Method | None:
    """The head the run's --guided-alignment trained, or `method` for a run trained without."""
    trained = run_trained_head(run, cross_layers(model))
    return method if trained is None else Method(*trained)


def rule_name(rule: tuple[str, float]) -> str:
    return f"{rule[0]} {rule[1]}" if rule[0] in ("threshold", "mass") else rule[0]


LAYER_RULES = [("mass", t) for t in (0.1, 0.2, 0.3, 0.4, 0.5)] + [("intersect", 0.5), ("grow", 0.5)]


def reverse_rows(run: Path, reverse_run: Path, model, tokenizer, chosen: Method, dev, test) -> list:
    """Test rows of the two directions together: each run read with its guided head (else the head
    chosen on dev: the forward run's by the table's search, the reverse run's by `align`'s), and
    where both have one, with their alignment layers; for each combination of
    the scores (mean, harmonic mean, product) the extraction rule chosen on dev; the pair of
    combination and rule best on dev is marked."""
    back_model, back_tokenizer = load_run(reverse_run)
    behind = guided_or(reverse_run, back_model, None)
    if behind is None:  # an unguided reverse run: the head its development half chooses, as align reads it
        found = dev_head(reverse_run, back_model, back_tokenizer, "intersect")
        behind = chosen if found is None else found[0]
    readings = [("the two heads", guided_or(run, model, chosen), behind, RULES)]
    layers = layer_method(run), layer_method(reverse_run)
    if None not in layers:
        readings.append((f"the two alignment layers{together(run)}", *layers, LAYER_RULES))
    rows = []
    for reading, ahead, behind, rules in readings:
        forward, reverse = (model, tokenizer, ahead), (back_model, back_tokenizer, behind)
        on_dev = both_directions(forward, reverse, dev)
        on_dev_aer = {(r, how): dev_aer(on_dev, dev[2], r, how) for r in rules for how in COMBINATIONS}
        best = {how: min(rules, key=lambda rule: on_dev_aer[rule, how]) for how in COMBINATIONS}
        overall = min(best, key=lambda how: on_dev_aer[best[how], how])
        start = time.perf_counter()
        on_test = both_directions(forward, reverse, test)
        aligned = time.perf_counter() - start + fitted(run, ahead)
        if not (ahead.name == "layer" and together(run)):  # layers fitted together: one fitting's seconds
            aligned += fitted(reverse_run, behind)
        for how, rule in best.items():
            start = time.perf_counter()
            found = symmetrized(*on_test, *rule, how)
            label = f"both directions, {reading}, {how}, {rule_name(rule)} (chosen on dev: dev AER "
            label += f"{on_dev_aer[rule, how]:.3f}{'; the best on dev' if how == overall else ''})"
            seconds = aligned + time.perf_counter() - start
            rows.append((label, score([a.links for a in found], test[2]), seconds))
    return rows


def dev_aer(on_dev: tuple, gold: list, rule: tuple[str, float], how: str) -> float:
    """The AER of two directions' alignments of the development half, combined `how`."""
    return score([a.links for a in symmetrized(*on_dev, *rule, how)], gold).aer


def together(run: Path) -> str:
    """How the run's layer was fitted, where `align-train --reverse-run` fitted it with another."""
    weight = json.loads((run / SETTINGS).read_text(encoding="utf-8")).get("agreement")
    return "" if weight is None else f", fitted together with the reverse run's, agreement {weight:g}"


def fitted(run: Path, method: Method) -> float:
    """The seconds `align-train` took to fit the run's layer (0 for a method that needs none)."""
    if method.name != "layer":
        return 0.0
    return json.loads((run / SETTINGS).read_text(encoding="utf-8")).get("seconds", 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--data-dir")
    parser.add_argument("--gold-dir", type=Path, default=GOLD)
    parser.add_argument(
        "--test-set",
        default="test",
        help="report on GOLD_DIR/NAME.{en,fr,align}; settings still chosen on dev",
    )
    parser.add_argument("--steps", type=int, default=32, help="integrated gradients' steps")
    parser.add_argument(
        "--eflomal-runs", type=int, default=5, help="eflomal takes no seed: its median of N runs (0: none)"
    )
    parser.add_argument("--no-ig", action="store_true", help="skip integrated gradients (slow on a CPU)")
    parser.add_argument("--reverse-run", type=Path, help="a run translating the other way")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--figure", action="store_true", help="write docs/figures/alignment.json")
    args = parser.parse_args()
    figure = "alignment" if args.test_set == "test" else f"alignment-{args.test_set}"
    commit = figures.clean_commit(figures.DEPENDS[figure]) if args.figure else None
    print(cpu())
    model, tokenizer = load_run(args.run)
    dev, test = half("dev", args.gold_dir), half(args.test_set, args.gold_dir)
    name, layer, head, rule, dev_aer = best_head(model, tokenizer, dev)
    dev_method = Method(name, layer, head)
    chosen = f"layer {layer} head {head or 'mean'}, {rule_name(rule)}"
    shown = {"attention": "attention", "shift": "Shift-Att"}[name]
    print(f"chosen on dev: {shown}, {chosen} (dev AER {dev_aer:.3f})")
    argmax = ("argmax", 0.5)
    methods = {  # name -> (method, extraction rule)
        "attention, last layer, mean of heads, argmax": (Method("attention"), argmax),
        f"{shown}, {chosen} (chosen on dev)": (Method(name, layer, head), rule),
        "Shift-Att, last layer, mean of heads, argmax": (Method("shift"), argmax),
        f"{'attention' if name == 'shift' else 'Shift-Att'}, {chosen}": (
            Method("attention" if name == "shift" else "shift", layer, head),
            rule,
        ),
        "gradient x input, argmax": (Method("gradxinput"), argmax),
    }
    if not args.no_ig:
        label = f"integrated gradients ({args.steps} steps), argmax"
        methods[label] = (Method("ig", steps=args.steps), argmax)
    trained = run_trained_head(args.run, cross_layers(model))
    if trained is not None:  # the head that guided alignment trained, read where it was trained
        where, layer_trained, head_trained = trained
        head_name = f"the guided head (layer {layer_trained} head {head_trained})"
        for extraction in (argmax, rule):
            if (Method(*trained), extraction) in methods.values():  # the head dev chose: its row
                continue
            label = f"{where}, {head_name}, {rule_name(extraction)}"
            methods[label] = (Method(*trained), extraction)
    rows, fitting = [], {}
    aligner = load_aligner(args.run)
    if aligner is not None:  # the run's alignment layer, at the threshold chosen on dev
        fitting = json.loads((args.run / SETTINGS).read_text(encoding="utf-8"))
        fits = f"{fitting['pairs']} pairs, {fitting['epochs']} epochs{together(args.run)}"
        chosen_on = f"chosen on dev: dev AER {fitting['dev_aer']:.3f}"
        label = f"the alignment layer ({fits}), mass {aligner.threshold:g} ({chosen_on})"
        methods[label] = (Method("layer", aligner=aligner), ("mass", aligner.threshold))
    for name, (method, (extraction, threshold)) in methods.items():
        start = time.perf_counter()
        found = align(model, tokenizer, test[0], test[1], method, extraction, threshold)
        seconds = (
            time.perf_counter() - start + (fitting.get("seconds", 0.0) if method.name == "layer" else 0.0)
        )
        rows.append((name, score([a.links for a in found], test[2]), seconds))
    if args.reverse_run is not None:
        rows += reverse_rows(args.run, args.reverse_run, model, tokenizer, dev_method, dev, test)
    if args.eflomal_runs:
        rows.append(eflomal_row(args.run, test, args.data_dir, args.eflomal_runs))
    width = max(len(name) for name, _, _ in rows)
    print(f"{args.test_set}, {len(test[0])} pairs")
    print(f"{'method':<{width}}  precision  recall    AER  95% interval  seconds")
    for name, r, seconds in rows:
        print(f"{name:<{width}}  {r.precision:9.3f}  {r.recall:6.3f}  {r.aer:5.3f}  "
              f"{r.aer_low:.3f}-{r.aer_high:.3f}  {seconds:7.1f}")  # fmt: skip
    if args.json:
        table = json.dumps([{"method": n, **r.as_json(), "seconds": s} for n, r, s in rows])
        write_atomic(args.json, table.encode("utf-8"))
    if args.figure:
        runs = [args.run] + ([] if args.reverse_run is None else [args.reverse_run])
        keep(figure, rows, test, f"{shown}, {chosen} (dev AER {dev_aer:.3f})", runs, commit)


def translation(run: Path) -> str:
    """The run's translation quality as docs/results.json keeps it (`reproduce_results`): test_2016
    BLEU with beam 5 and the steps trained, or its best validation BLEU where it has no entry."""
    entries = json.loads((REPO / "docs" / "results.json").read_text(encoding="utf-8"))
    entry = entries.get(run.name.removeprefix("multi30k-"))
    if entry is None or entry["config"]["train"]["src"] != stored_languages(run)[1]:
        rows = [row for row in read_metrics(run) if row.get("val_bleu") is not None]
        return f"{run} (best validation BLEU {max(row['val_bleu'] for row in rows):.1f})"
    steps = entry["metrics"][-1]["step"]
    bleu = entry["test"]["test_2016_flickr"]["beam5"]["bleu"]
    return f"{run} (test_2016 BLEU {bleu:.2f} with beam 5, {steps:,} steps)"


def eflomal_row(run: Path, test, data_dir, runs: int) -> tuple[str, object, float]:
    """eflomal's row: it draws its own seed, so its AER moves from run to run; the run of median AER
    of `runs`, the range of all in its name, the seconds of one."""
    results, start = [], time.perf_counter()
    for _ in range(runs):
        links, n_train = eflomal_with_corpus(test[0], test[1], *stored_languages(run), data_dir)
        results.append(score([x.sure for x in links], test[2]))
    results.sort(key=lambda r: r.aer)
    spread = f"AER {results[0].aer:.3f}-{results[-1].aer:.3f}"
    name = f"eflomal ({n_train} training pairs + these; the median of {runs} runs, {spread})"
    return name, results[runs // 2], (time.perf_counter() - start) / runs


def keep(figure: str, rows: list, test, chosen: str, runs: list[Path], commit: str) -> None:
    """The rows as docs/figures/FIGURE.json (alignment: the shipped test half; alignment-NAME: the
    gold set NAME, which nothing was chosen on)."""
    columns = ["method", "precision", "recall", "AER", "95% interval", "seconds"]
    table = [
        [
            n,
            f"{r.precision:.3f}",
            f"{r.recall:.3f}",
            f"{r.aer:.3f}",
            f"{r.aer_low:.3f}-{r.aer_high:.3f}",
            f"{s:.0f}",
        ]
        for n, r, s in rows
    ]
    measured_on = (
        "the shipped gold set's test half" if figure == "alignment" else f"the gold set {figure[10:]}"
    )
    note = (
        f"{' and '.join(map(translation, runs))}; {measured_on} ({len(test[0])} pairs); every setting "
        f"chosen on the shipped set's development half; chosen on dev: {chosen}."
    )
    figures.record(figure, columns, table, note, commit)


if __name__ == "__main__":
    main()
