"""Build the translations of data/trust/ (the natural-error set): held-back sentences translated
by weaker systems this product makes, for annotators to mark (data/trust/GUIDELINES.md):

    python -m scripts.natural_set --data-dir ../shared/corpora/multi30k \
        --quick runs/quick --default runs/multi30k-en-fr-1207a

- Sentences: the development part is val lines 201-450 (lines 1-200 are the alignment gold's),
  the test part test_2016_flickr lines 1-250; nothing else was looked at before choosing them.
- Systems, one a sentence in turn (line k gets SYSTEMS[k % 5]), so each system translates 50
  sentences of each part: the tiny preset's first snapshot (178 steps) and its last (517 steps,
  the end of a 3-minute run), and the 50-minute default run's beam-5 output, samples at
  temperature 1.0 and samples at 1.2 (seeded).
- Written: data/trust/{dev,test}.jsonl, one object a line: id, part, line (1-based in its
  split), system, source, translation, reference (Multi30k's own French, for the annotator's
  help only). Translations are `seq2seq.translate`'s, as `seq2seq translate` prints them.
"""

import argparse
import json
from pathlib import Path

from seq2seq.data.corpus import load_pairs
from seq2seq.decoding.options import DecodeOptions
from seq2seq.request.translator import translate
from seq2seq.runs.load import load_run

PARTS = {"dev": ("val", 200, 250), "test": ("test_2016_flickr", 0, 250)}  # split, skipped, taken
SYSTEMS = {  # name: (which run, its weights, the decoding)
    "tiny-178": ("quick", "snapshots/step-000000178.safetensors", DecodeOptions(beam=5)),
    "tiny-517": ("quick", "model.safetensors", DecodeOptions(beam=5)),
    "default-beam5": ("default", "model.safetensors", DecodeOptions(beam=5)),
    "default-sample-t1.0": ("default", "model.safetensors", DecodeOptions(beam=1, sample=True, seed=1)),
    "default-sample-t1.2": (
        "default",
        "model.safetensors",
        DecodeOptions(beam=1, sample=True, temperature=1.2, seed=2),
    ),
}
KINDS = ("omitted", "added", "mistranslated")
OUT = Path(__file__).resolve().parents[1] / "data" / "trust"


def build(runs: dict[str, Path], data_dir: str | None) -> dict[str, list[dict]]:
    parts = {}
    for part, (split, skip, take) in PARTS.items():
        pairs = load_pairs("multi30k", split, "en", "fr", data_dir)[skip : skip + take]
        rows = [
            {"id": f"{part}-{k + 1:03d}", "part": part, "line": skip + k + 1, "system": list(SYSTEMS)[k % 5],
             "source": s, "reference": t}
            for k, (s, t) in enumerate(pairs)
        ]  # fmt: skip
        parts[part] = rows
    for name, (run, weights, options) in SYSTEMS.items():
        model, tokenizer = load_run(runs[run], weights=weights)
        todo = [r for rows in parts.values() for r in rows if r["system"] == name]
        done = translate(model, tokenizer, [r["source"] for r in todo], options).best
        for row, text in zip(todo, done, strict=True):
            row["translation"] = text
    return parts


def rows(part: str) -> list[dict]:
    return [json.loads(line) for line in (OUT / f"{part}.jsonl").read_text(encoding="utf-8").splitlines()]


def numbered(text: str) -> str:
    return " ".join(f"{i}:{w}" for i, w in enumerate(text.split()))


def sheet(part: str) -> str:
    """What an annotator reads: each item with its words numbered (GUIDELINES.md)."""
    return "".join(
        f"id: {r['id']}\nsource: {numbered(r['source'])}\ntranslation: {numbered(r['translation'])}\n"
        f"reference (help only): {r['reference']}\n\n"
        for r in rows(part)
    )


def marks(name: str) -> dict[str, dict]:
    return {
        m["id"]: m for m in map(json.loads, (OUT / f"{name}.labels.jsonl").read_text("utf-8").splitlines())
    }


def agreement() -> dict[str, tuple[int, int, float]]:
    """On the doubly marked items: for each kind (and "correct", no span at all), the items
    both annotators call so, the items either does, and Cohen's kappa of the two."""
    first, second = marks("dev") | marks("test"), marks("second")
    out = {}
    for kind in ("omitted", "added", "mistranslated", "correct"):
        said = [
            [
                bool(m[kind]) if kind != "correct" else not any(m[k] for k in KINDS)
                for m in (first[i], second[i])
            ]
            for i in second
        ]
        n, both = len(said), sum(a and b for a, b in said)
        observed = sum(a == b for a, b in said) / n
        pa, pb = (sum(s[k] for s in said) / n for k in (0, 1))
        chance = pa * pb + (1 - pa) * (1 - pb)
        out[kind] = (both, sum(a or b for a, b in said), (observed - chance) / (1 - chance))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sheet", choices=PARTS, help="print a part's annotation sheet and stop")
    parser.add_argument("--agreement", action="store_true", help="print the annotators' agreement and stop")
    parser.add_argument("--data-dir")
    parser.add_argument("--quick", type=Path, default=Path("runs/quick"))
    parser.add_argument("--default", type=Path, default=Path("runs/multi30k-en-fr-1207a"))
    args = parser.parse_args()
    if args.agreement:
        for kind, (both, either, kappa) in agreement().items():
            print(f"{kind}: both {both}, either {either}, kappa {kappa:.2f}")
        return
    if args.sheet:
        print(sheet(args.sheet), end="")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    keys = ("id", "part", "line", "system", "source", "translation", "reference")
    for part, rows in build({"quick": args.quick, "default": args.default}, args.data_dir).items():
        text = "".join(json.dumps({k: r[k] for k in keys}, ensure_ascii=False) + "\n" for r in rows)
        (OUT / f"{part}.jsonl").write_text(text, encoding="utf-8")
        print(f"{part}: {len(rows)} translations -> {OUT / f'{part}.jsonl'}")


if __name__ == "__main__":
    main()
