"""Every number a page shows comes from a figure file (scripts/figures.py: a table or a transcript,
stamped with the code it measured), unless it is a constant: a count of ten or less, an HTTP
status, a year, a number the package itself declares (a default or a limit, as a literal of its
source), a version, or one of CONSTANTS below with its reason. A measured number typed into prose
fails here; it belongs in a figure, or with its history in docs/log.md."""

import re
from pathlib import Path

from scripts import figures

ROOT = Path(__file__).resolve().parent.parent
PAGES = [p for p in figures.pages(ROOT) if p.name != "log.md"]
NUMBER = re.compile(r"(?<![\w.\-/:])\d[\d,]*(?:\.\d+)*(?![\w])")  # 29,000  0.02  4.57.6
HIDDEN = (
    figures.BLOCK,  # figure files' tables and transcripts
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"`[^`\n]*`"),  # inline code: an option, a path, a command as typed
    re.compile(r"^\s*(\$ )?(seq2seq|python|torchrun|curl|pip|SEQ2SEQ_\w+=)\b.*$", re.M),  # commands
)
CONSTANTS = {
    "29,000": "Multi30k's training split (data.md), as are the next",
    "1,014": "Multi30k's validation split",
    "1,000": "Multi30k's test_2016 and test_2017 flickr splits",
    "461": "Multi30k's test_2017_mscoco split",
    "28999": "Multi30k's training pairs less the one the length filter drops (data.md's example)",
    "2,900": "a tenth of the training split (translate.md: the cased copies)",
    "52.4": "opus-mt-tc-big-en-fr's test_2016 BLEU, from its model card (a cited figure)",
    "52.8": "its test_2017 BLEU, from the same card",
    "127.0.0.1": "the loopback address",
    "29400": "torchrun's rendezvous port",
    "0644": "file modes (reliability.md)",
    "0666": "file modes",
    "022": "the usual umask",
    "1.2": "float32's smallest normal (1.2e-38) and",
    "3.4": "its largest (3.4e38)",
    "101": "the alignment gold's test half starts at line 101",
    "211": "the COCO captions left for testing after 200 for training and 50 for validation",
    "131,072": "the server's max_work, 1 << 17 in serve/limits.py",
    "4,000": "1 / (lr x weight decay) at the default peak rate and decay (training.md)",
}


def declared() -> set[str]:
    """Every number literal of the package's source: its defaults and limits."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "seq2seq").rglob("*.py"))
    return {n.replace("_", "") for n in re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d+)?", source)}


def allowed(number: str, before: str, known: set[str]) -> bool:
    """Whether `number` is a constant (`before`: its line up to it)."""
    plain = number.replace(",", "")
    if plain.isdigit() and (int(plain) <= 10 or 1990 <= int(plain) <= 2030 or 400 <= int(plain) <= 504):
        return True  # a count, a year, an HTTP status
    if number in CONSTANTS or plain in known or re.fullmatch(r"\d+\.\d+\.\d+", number):
        return True  # a constant, or a version
    return bool(re.fullmatch(r"\d+\.\d+", number) and re.search(r"\b(Python|transformers)\b", before))


def typed(page: Path, known: set[str]) -> list[str]:
    """The numbers of `page` that are no constant, each with its line."""
    text = page.read_text(encoding="utf-8").replace("\\\n", " \\\n")  # a command's own lines
    text = re.sub(r"^((\$ )?(seq2seq|python|torchrun)\b[^\n]*\\)\n", lambda m: m[1] + " ", text, flags=re.M)
    for pattern in HIDDEN:
        text = pattern.sub(lambda m: "\n" * m.group().count("\n"), text)
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in NUMBER.finditer(line):
            number = m.group().rstrip(".,")
            if not allowed(number, line[: m.start()], known):
                found.append(f"{page.name}:{n}: {number} in {line.strip()[:100]!r}")
    return found


def test_no_page_types_a_measured_number():
    known = declared()
    found = [line for page in PAGES for line in typed(page, known)]
    assert not found, "numbers typed into pages (put them in a figure or the log):\n" + "\n".join(found)


def test_a_typed_figure_is_caught_and_a_constant_is_not(tmp_path):
    page = tmp_path / "probe.md"
    page.write_text(
        "Scores 61.37 BLEU on Python 3.11 with `--beam 12`, 2 threads, 422 and 29,000 pairs.\n\n"
        "```text\n$ seq2seq evaluate --max-len 256\nBLEU 58.12 after 6,906 steps\n```\n"
    )
    found = [f.split(": ")[1].split(" in ")[0] for f in typed(page, declared())]
    assert found == ["61.37", "58.12", "6,906"]
