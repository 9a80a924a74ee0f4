"""The attention explorer's pictures in docs/: the served page and an --attention-html file, each
taken in headless Debian chromium (Playwright) with an output or a source piece hovered; and the
search made visible (docs/decoding.md): the alternatives of an output piece, and the beam as a tree.

    python -m scripts.explorer_screenshots --run runs/multi30k-en-fr --out docs
"""

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

from seq2seq.decoding.attention import attention_batch
from seq2seq.decoding.search import DecodeOptions
from seq2seq.runs.load import load_run
from seq2seq.serve.app import create_app
from seq2seq.serve.info import run_info
from seq2seq.serve.server import GracefulServer, listen
from seq2seq.views import explorer


def main() -> None:
    args = parse_args()
    model, tokenizer = load_run(args.run)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"))
        page = browser.new_page(viewport={"width": args.width, "height": 900}, device_scale_factor=1)
        app = create_app(model, tokenizer, run_info(args.run, model, tokenizer), beam=args.beam)
        with serving(app) as url:
            page.goto(url)
            page.fill("#source-input", args.served)
            page.click("#translate-button")
            page.wait_for_selector("#explorer[data-state=ready]")
            page.click(f'#target-strip .piece[data-index="{args.piece}"]')  # pinned: stays lit
            page.mouse.move(0, 0)
            page.screenshot(path=args.out / "explorer.png", full_page=True)
            search_pictures(page, args)
        with tempfile.TemporaryDirectory() as tmp:
            html = Path(tmp) / "explorer.html"
            maps = attention_batch(model, tokenizer, args.file, options=DecodeOptions(beam=args.beam))
            sentences = [explorer.sentence_json(m, line) for line, m in enumerate(maps, start=1)]
            html.write_text(explorer.page(sentences, f"run {Path(args.run).name}"), encoding="utf-8")
            context = browser.new_context(offline=True, viewport={"width": args.width, "height": 900})
            page = context.new_page()
            page.goto(html.as_uri())
            page.wait_for_selector("#explorer[data-state=ready]")
            page.select_option("#sentence-select", "1")
            page.select_option("#panel-cross .head-select", "0")  # one head: sharper than the mean
            page.click(f'#source-strip .piece[data-index="{args.piece}"]')
            page.mouse.move(0, 0)
            page.screenshot(path=args.out / "explorer-file.png", full_page=True)
        browser.close()
    names = "explorer.png, explorer-file.png, decoding-alternatives.png, decoding-beam.png"
    print(f"wrote {names} in {args.out}")


def search_pictures(page, args) -> None:
    """The served page with the beam recorded: the sentence with an output piece's alternatives,
    and the tree, each as a picture of its own part of the page."""
    page.reload()
    page.fill("#source-input", args.served)
    page.check("#beam-toggle")
    page.click("#translate-button")
    page.wait_for_selector("#explorer[data-state=ready]")
    page.hover(f'#target-strip .piece[data-index="{args.piece}"]')
    page.locator("#sentence").screenshot(path=args.out / "decoding-alternatives.png")
    page.locator("#beam-panel").screenshot(path=args.out / "decoding-beam.png")


class serving:
    """The app under uvicorn on a free 127.0.0.1 port, in a thread."""

    def __init__(self, app):
        self.sock = listen("127.0.0.1", 0)
        self.server = GracefulServer(uvicorn.Config(app, log_level="warning"))

    def __enter__(self) -> str:
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *_) -> None:
        self.server.should_exit = True
        self.thread.join()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", default="runs/multi30k-en-fr")
    p.add_argument("--out", type=Path, default=Path("docs"))
    p.add_argument("--served", default="A little girl climbs into a wooden playhouse.")
    p.add_argument(
        "--file",
        nargs="+",
        default=["Two dogs are running through the snow.", "A man in a red shirt is riding a bicycle."],
    )
    p.add_argument("--piece", type=int, default=2, help="the piece hovered (and pinned), from 0")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--width", type=int, default=1280)
    return p.parse_args()


if __name__ == "__main__":
    main()
