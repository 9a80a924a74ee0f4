"""Do documents survive real files? Every file of a corpus nobody here wrote is read and written
back with an identity translator (documents/translate.py's `round_trip`: each sentence translated
as itself, each word aligned to itself) and compared byte for byte with the file.

The corpus (`corpus`), built from what a Debian machine with this project's packages installed
holds, sorted by path and taken every k-th file so that many packages are in it:
- markdown: the `*.md` files under the Python installation (READMEs, changelogs, docs shipped in
  packages) and the Markdown long descriptions in installed packages' METADATA;
- html: `*.html`/`*.htm` files under /usr/share/doc and the Python installation;
- text: READMEs, licences and `*.txt` files under /usr/share/doc and /usr/share/common-licenses;
- srt: every `*.srt` file on the disk outside /tmp (chardet's test files: UTF-8 with a BOM,
  UTF-16 and UTF-32 with BOMs, ISO-8859-9), read in the encoding its BOM names or chardet's
  directory names.
A file is taken if it is at most 300 kB and decodes (UTF-8, or the encoding of its BOM); the
manifest (`--manifest FILE`) lists each with its SHA-256, to name the corpus a figure is for.

Through a model (`--run RUN`): the first `--files` files of each format that hold at most 400
sentences, translated greedily by the run as `seq2seq translate` does; kept: the structure read
back from the output is the input's (HTML: every tag, comment and declaration, block tags in
order; Markdown: markdown-it's block tokens; SubRip: the cues' indices and timings; text: the
paragraphs), and the sentences whose translation is empty, and the blocks left untranslated, are
counted.

Scaling (`--scaling`): each format's files joined into one document of about 250,000 characters
and that document four times over, each read and written back the same way (the least of 3), with
the cyclic collector running and paused (its passes grow with every live object of the process).

    python -m scripts.round_trip [--per-format 120] [--manifest corpus.tsv] [--show 5] [--scaling] [--figure]
"""

import argparse
import codecs
import email.parser
import gc
import hashlib
import sys
import sysconfig
import time
from pathlib import Path

from scripts import figures
from scripts.common import cpu
from seq2seq.documents.translate import prepared, round_trip
from seq2seq.errors import Seq2SeqError

PYTHON = Path(sysconfig.get_paths()["purelib"]).parent.parent  # .../lib/python3.x -> .../lib
LIMIT = 300_000
BOMS = [(codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig")]
BOMS += [(codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")]


def decoded(data: bytes, path: Path) -> str | None:
    for bom, encoding in BOMS:
        if data.startswith(bom):
            return data.decode(encoding)
    if "iso-8859-9" in str(path):  # chardet's test file names its encoding by its directory
        return data.decode("iso-8859-9")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def files(roots: list[Path], suffixes: tuple[str, ...], names: tuple[str, ...] = ()) -> list[Path]:
    found = set()
    for root in roots:
        if root.exists():
            found |= {
                p for p in root.rglob("*")
                if (p.suffix.lower() in suffixes or (p.name.startswith(names) and names)) and p.is_file()
                and "/tmp/" not in str(p) and p.stat().st_size <= LIMIT
            }  # fmt: skip
    return sorted(found)


def spread(paths: list, count: int) -> list:
    """`count` of `paths`, every k-th: many packages rather than the first one's files."""
    step = max(1, len(paths) // count)
    return paths[::step][:count]


def metadata_readmes() -> list[tuple[str, str]]:
    """(name, text) of the Markdown long descriptions in installed packages' METADATA."""
    out = []
    for meta in sorted(PYTHON.rglob("*.dist-info/METADATA")):
        message = email.parser.Parser().parsestr(meta.read_text(encoding="utf-8", errors="strict"))
        if "markdown" in (message.get("Description-Content-Type") or "") and message.get_payload():
            out.append((str(meta), message.get_payload()))
    return out


def corpus(per_format: int) -> dict[str, list[tuple[str, str]]]:
    """format -> [(name, text)]."""
    docs = [Path("/usr/share/doc"), PYTHON]
    paths = {
        "markdown": spread(files([PYTHON], (".md", ".markdown")), per_format // 2),
        "html": spread(files(docs, (".html", ".htm")), per_format),
        "text": spread(files([Path("/usr/share/doc"), Path("/usr/share/common-licenses")], (".txt",),
                             ("README", "copyright", "GPL", "LGPL", "Apache", "MPL", "BSD")), per_format),
        "srt": files([Path("/usr"), Path("/opt"), Path("/root"), Path("/work/.library")], (".srt",)),
    }  # fmt: skip
    out: dict[str, list[tuple[str, str]]] = {}
    for format, found in paths.items():
        texts = [(str(p), decoded(p.read_bytes(), p)) for p in found]
        out[format] = [(name, text) for name, text in texts if text is not None]
    out["markdown"] += spread(metadata_readmes(), per_format - len(out["markdown"]))
    return out


def first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def structure(text: str, format: str) -> list:
    """What must survive a translation: the skeleton of a document of `format`."""
    if format == "html":
        from html.parser import HTMLParser

        class Tags(HTMLParser):
            def __init__(self):
                super().__init__(convert_charrefs=True)
                self.tags = []

            def handle_starttag(self, tag, attrs):
                self.tags.append(("<", tag, tuple(attrs)))

            def handle_endtag(self, tag):
                self.tags.append(("/", tag))

            def handle_comment(self, data):
                self.tags.append(("!--", data))

        reader = Tags()
        reader.feed(text)
        reader.close()
        return sorted(map(repr, reader.tags))  # inline tags may move: the multiset is kept
    if format == "markdown":
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
        return [(t.type, t.tag, t.level) for t in md.parse(text) if t.type != "inline"]
    if format == "srt":
        import srt

        return [(c.index, c.start, c.end) for c in srt.parse(text)]
    from seq2seq.documents.formats import PARAGRAPH

    return [len(PARAGRAPH.findall(text))]


def through_model(run: Path, docs: dict[str, list[tuple[str, str]]], files: int) -> list[list[str]]:
    """Per format: files translated, files whose structure is kept, sentences, empty translations,
    blocks left untranslated, seconds."""
    from seq2seq.decoding.options import DecodeOptions
    from seq2seq.request.translator import translate_document
    from seq2seq.runs.load import load_run

    model, tokenizer = load_run(run, "cpu", packed=True)
    rows = []
    for format, found in docs.items():
        done = kept = sentences = empty = left = 0
        start = time.perf_counter()
        for name, text in found:
            if done == files or len(prepared(text, format).sentences) > 400:
                continue
            out = translate_document(model, tokenizer, text, format, DecodeOptions(beam=1))
            done += 1
            same = structure(out.text, format) == structure(text, format)
            kept += same
            if not same:
                print(f"  {format} {name}: structure changed", file=sys.stderr)
            sentences += out.sentences
            empty += sum(not t.strip() for t in out.result.best)
            left += len(out.left)
        seconds = time.perf_counter() - start
        rows.append([format, str(done), str(kept), f"{sentences:,}", str(empty), str(left), f"{seconds:.0f}"])
    return rows


def scaling(docs: dict[str, list[tuple[str, str]]], size: int = 250_000) -> list[list[str]]:
    """Per format: the seconds of a document and of it four times over, and their ratio, with the
    collector running and paused."""
    rows = []
    for format, found in docs.items():
        joined, at = [], 0
        for _, text in found:
            if at >= size:
                break
            joined.append(text if text.endswith("\n") else text + "\n")
            at += len(joined[-1])
        one = "\n".join(joined)  # a blank line between files: a paragraph, a block, a cue apart
        row = [format, f"{len(one):,}"]
        for paused in (False, True):
            times = [_least("\n".join([one] * k), format, paused) for k in (1, 4)]
            row += [f"{times[0]:.3f} / {times[1]:.3f}", f"{times[1] / times[0]:.2f}"]
        rows.append(row)
    return rows


def _least(text: str, format: str, paused: bool) -> float:
    best = float("inf")
    for _ in range(3):
        if paused:
            gc.disable()
        start = time.perf_counter()
        try:
            round_trip(text, format)
        finally:
            best = min(best, time.perf_counter() - start)
            gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-format", type=int, default=120)
    parser.add_argument("--manifest", type=Path)
    parser.add_argument("--show", type=int, default=5, help="Failures shown a format.")
    parser.add_argument("--scaling", action="store_true", help="Time each format at 1x and 4x.")
    parser.add_argument("--run", type=Path, help="Translate files through this run too.")
    parser.add_argument("--files", type=int, default=10, help="With --run: files a format.")
    parser.add_argument("--figure", action="store_true", help="Write docs/figures/ (clean tree).")
    args = parser.parse_args()
    commit = figures.clean_commit(figures.DEPENDS["round-trip"]) if args.figure else None
    docs = corpus(args.per_format)
    if args.manifest is not None:
        rows = [
            f"{format}\t{hashlib.sha256(text.encode()).hexdigest()}\t{name}"
            for format, found in docs.items()
            for name, text in found
        ]
        args.manifest.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    print(f"# identity round trip, {cpu()}")
    total = same = 0
    rows = []
    for format, found in docs.items():
        lost, refused, shown, seconds, sentences, left, read = [], [], 0, 0.0, 0, 0, 0
        for name, text in found:
            start = time.perf_counter()
            try:
                back = round_trip(text, format)
            except Seq2SeqError as e:
                refused.append((name, str(e)))
                continue
            finally:
                seconds += time.perf_counter() - start
            cut = prepared(text, format)
            sentences, left = sentences + len(cut.sentences), left + len(cut.layout.left)
            read += sum(len(s) for s in cut.sentences)
            if back != text:
                lost.append(name)
                if shown < args.show:
                    at = first_difference(text, back)
                    print(f"  {format} {name}: differs at {at}: {text[at - 30 : at + 30]!r} -> "
                          f"{back[at - 30 : at + 30]!r}", file=sys.stderr)  # fmt: skip
                    shown += 1
        for name, why in refused[: args.show]:
            print(f"  {format} {name}: refused: {why}", file=sys.stderr)
        kept = len(found) - len(lost) - len(refused)
        total, same = total + len(found), same + kept
        size = sum(len(t) for _, t in found)
        rows.append([format, str(len(found)), f"{size:,}", str(kept), str(len(lost)), str(len(refused)),
                     f"{sentences:,}", f"{read / max(size, 1):.0%}", str(left)])  # fmt: skip
        print(
            f"{format:9} {len(found):4d} files  {size / 1e6:6.2f} M chars  identical {kept:4d}  "
            f"differ {len(lost):3d}  refused {len(refused):3d}  {seconds:6.1f} s  sentences {sentences:6d} "
            f"({read / max(size, 1):4.0%} of the characters)  blocks left untranslated {left}"
        )
    print(f"all       {total:4d} files  identical {same:4d} ({same / max(total, 1):.1%})")
    if args.figure:
        columns = ["format", "files", "characters", "identical", "differ", "refused", "sentences",
                   "of the characters", "blocks left untranslated"]  # fmt: skip
        note = (
            "The identity round trip (each sentence translated as itself, each word aligned to itself) "
            "on files nobody here wrote, sorted by path and taken every k-th (scripts/round_trip.py "
            "says which); identical: written back byte for byte; sentences: what a model would be "
            "given, and the share of the file's characters they hold."
        )
        figures.record("round-trip", columns, rows, note, commit)
    if args.run is not None:
        rows = through_model(args.run, docs, args.files)
        print("format | files | structure kept | sentences | empty translations | blocks left | s")
        for row in rows:
            print(" | ".join(row))
    if args.scaling:
        rows = scaling(docs)
        for row in rows:
            print(" | ".join(row))
        if args.figure:
            columns = ["format", "characters (1x)", "seconds 1x / 4x", "4x / 1x",
                       "seconds 1x / 4x, collector paused", "4x / 1x, collector paused"]  # fmt: skip
            note = (
                "Each format's corpus files joined into one document of about 250,000 characters, and "
                "that document four times over, read and written back by the identity round trip; the "
                "least of 3, the cyclic collector running and paused."
            )
            figures.record("document-scaling", columns, rows, note, commit)


if __name__ == "__main__":
    main()
