"""What does a tagged page cost in memory over its text alone? Tags are placed through the
alignment of each sentence with its translation, whose attention maps are read 32 sentences at a
time and dropped (documents/translate.py); this measures that the maps are not all held at once.

Construction: the first 1,000 English sentences of test_2016_flickr, each a paragraph: as an HTML
page (`<p>`, the sentence's second word in `<b>`, its last in `<i>`) and as a text document of the
same paragraphs. Each is translated (greedy) by `seq2seq.translate_document` in a process of its
own; the figure is the peak resident memory of that process above what it held once the run was
loaded (`ru_maxrss` against /proc/self/statm), the median of 3 alternated rounds.

    python -m scripts.bench_document_memory --run runs/quick --data-dir DIR [--figure]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

from scripts import figures
from scripts.common import cpu

COLUMNS = ["document", "paragraphs", "tags", "peak above the loaded run (MB)", "over the text alone"]


def documents(data_dir: str, count: int = 1000) -> dict[str, str]:
    from seq2seq.data.corpus import load_pairs

    pairs = load_pairs("multi30k", "test_2016_flickr", "en", "fr", data_dir)
    sentences = [s.strip() for s, _ in pairs][:count]
    tagged = []
    for sentence in sentences:
        words = sentence.split()
        if len(words) > 2:
            words[1], words[-1] = f"<b>{words[1]}</b>", f"<i>{words[-1]}</i>"
        tagged.append(f"<p>{' '.join(words)}</p>\n")
    return {"html": "".join(tagged), "text": "\n\n".join(sentences) + "\n"}


def worker(run: str, data_dir: str, format: str) -> None:
    """In its own process: the run loaded, then one document translated; prints the peak above."""
    from seq2seq.decoding.options import DecodeOptions
    from seq2seq.request.translator import translate_document
    from seq2seq.runs.load import load_run

    text = documents(data_dir)[format]
    model, tokenizer = load_run(run, "cpu", packed=True)
    with open("/proc/self/statm") as statm:
        loaded = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    done = translate_document(model, tokenizer, text, format, DecodeOptions(beam=1))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"above": (peak - loaded) / 1e6, "tags": done.tags, "sentences": done.sentences}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--figure", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.run, args.data_dir, args.worker)
    commit = figures.clean_commit(figures.DEPENDS["document-memory"]) if args.figure else None
    seen: dict[str, list[dict]] = {"text": [], "html": []}
    for _ in range(args.rounds):
        for format in seen:
            command = [sys.executable, "-m", "scripts.bench_document_memory", "--run", args.run,
                       "--data-dir", args.data_dir, "--worker", format]  # fmt: skip
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            seen[format].append(json.loads(out.strip().splitlines()[-1]))
    text = statistics.median(r["above"] for r in seen["text"])
    rows = []
    for format, label in (("text", "the text alone"), ("html", "the tagged HTML page")):
        above = statistics.median(r["above"] for r in seen[format])
        rows.append([label, "1000", str(seen[format][0]["tags"]), f"{above:.1f}", f"{above / text:.2f}"])
        print(" | ".join(rows[-1]))
    print(cpu())
    if args.figure:
        note = (
            f"{args.run}: test_2016_flickr's first 1,000 English sentences, a paragraph each; greedy; "
            f"the peak resident memory of the translating process above the loaded run, the median "
            f"of {args.rounds} alternated rounds."
        )
        figures.record("document-memory", COLUMNS, rows, note, commit)


if __name__ == "__main__":
    main()
