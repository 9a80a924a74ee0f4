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

    python -m scripts.round_trip [--per-format 120] [--manifest corpus.tsv] [--show 5]
"""

import argparse
import codecs
import email.parser
import hashlib
import sys
import sysconfig
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-format", type=int, default=120)
    parser.add_argument("--manifest", type=Path)
    parser.add_argument("--show", type=int, default=5, help="Failures shown a format.")
    args = parser.parse_args()
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
        print(
            f"{format:9} {len(found):4d} files  {size / 1e6:6.2f} M chars  identical {kept:4d}  "
            f"differ {len(lost):3d}  refused {len(refused):3d}  {seconds:6.1f} s  sentences {sentences:6d} "
            f"({read / max(size, 1):4.0%} of the characters)  blocks left untranslated {left}"
        )
    print(f"all       {total:4d} files  identical {same:4d} ({same / max(total, 1):.1%})")


if __name__ == "__main__":
    main()
