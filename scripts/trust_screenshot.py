"""The explorer's trust marks in docs/scoring.md: `translate --confidence json --attention-html` of
one sentence, opened offline in headless Debian chromium (Playwright), the first word to check
hovered (its title says why), the sentence's strips taken as a picture.

    python -m scripts.trust_screenshot --run runs/multi30k-en-fr-1206c --out docs
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

SENTENCE = "The elderly beekeeper in a white veil inspects a honeycomb beside the orchard."


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True)
    p.add_argument("--out", type=Path, default=Path("docs"))
    p.add_argument("--sentence", default=SENTENCE)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "trust.html"
        command = [sys.executable, "-m", "seq2seq", "translate", "--run", args.run, "--confidence", "json"]
        said = subprocess.run([*command, "--attention-html", str(html), args.sentence],
                              capture_output=True, text=True, check=True)  # fmt: skip
        answer = json.loads(said.stdout)
        unsure = [w["word"] for w in answer["words"] if w["unsure"]]
        print(answer["translation"])
        print(f"flags {answer['flags']}, to check {unsure}, uncovered {answer['uncovered']}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"))
            context = browser.new_context(offline=True, viewport={"width": 1100, "height": 700})
            page = context.new_page()
            page.goto(html.as_uri())
            page.wait_for_selector("#explorer[data-state=ready]")
            marked = page.locator("#target-strip .piece.unsure")
            if marked.count():
                marked.first.hover()
                print(f"hovered: {marked.first.get_attribute('title')}")
            page.locator("#sentence").screenshot(path=args.out / "trust-explorer.png")
            browser.close()
    print(f"wrote {args.out / 'trust-explorer.png'}")


if __name__ == "__main__":
    main()
