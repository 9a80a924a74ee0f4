"""What `translate` shows and draws of each line's attention: --show-attention on stderr,
--attention-png pictures and the --attention-html explorer page."""

from pathlib import Path

import typer

from seq2seq.cli import display
from seq2seq.files.writing import Outputs, numbered, write_file

PAGE_MB = 50  # an --attention-html page past this many MB gets a notice: browsers grow slow to open it


class Views:
    """--show-attention draws each line's map on stderr at once; --attention-png writes FILE for a
    single line, FILE-<line>.png for each when there are several. Which of the two is known only
    when a second line (or the end) arrives, so the first picture waits. --attention-html writes
    one explorer page holding every line, at the end; each line is kept as its JSON text meanwhile.
    Every file goes through `outputs`, which has claimed FILE already and claims each FILE-<line>.png
    before it is written."""

    def __init__(
        self,
        heatmap: bool,
        path: Path | None,
        layer: int | None,
        head: int | None,
        html: Path | None,
        run: Path,
        outputs: Outputs,
    ):
        self.heatmap, self.path, self.layer, self.head = heatmap, path, layer, head
        self.html, self.run, self.outputs = html, run, outputs
        self.pages: list[str] = []
        self.page_size, self.page_told = 0, False
        self.wanted = heatmap or path is not None or html is not None
        self.first, self.several = None, False

    @classmethod
    def of(cls, args, run: Path, outputs: Outputs) -> "Views":
        """The views `translate`'s args ask for; --layer and --head go with a map drawn, and
        --attention-png with matplotlib, each said before any work."""
        for name, value in (("--layer", args.layer), ("--head", args.head)):
            if value is not None and not (args.show_attention or args.attention_png):
                raise typer.BadParameter("goes with --show-attention or --attention-png", param_hint=name)
        if args.attention_png is not None:
            from seq2seq.views import plots

            plots.require()
        return cls(
            args.show_attention, args.attention_png, args.layer, args.head, args.attention_html, run, outputs
        )

    def show(self, number: int, maps) -> None:
        if self.html is not None:
            self._keep_for_page(number, maps)
        if self.heatmap:
            display.attention_heatmap(maps, self.layer, self.head)
        if self.path is None:
            return
        if self.first is None:
            self.first = (number, maps)
            return
        if not self.several:
            self.several = True
            self._draw(*self.first)
        self._draw(number, maps)

    def finish(self) -> None:
        if self.first is not None and not self.several:
            self._draw(None, self.first[1])
        if self.html is not None:
            from seq2seq.views.explorer import page

            write_file(page(self.pages, f"run {Path(self.run).name}").encode("utf-8"), self.html)

    def _keep_for_page(self, number: int, maps) -> None:
        from seq2seq.views.explorer import sentence_json

        self.pages.append(sentence_json(maps, number))
        self.page_size += len(self.pages[-1])
        if self.page_size > PAGE_MB * 1e6 and not self.page_told:
            self.page_told = True
            display.warn(
                f"--attention-html {self.html} passes {PAGE_MB} MB at line {number}: a browser may be slow "
                "to open it; give fewer lines to keep it smaller"
            )

    def _draw(self, number: int | None, maps) -> None:
        """Line `number`'s picture in FILE-<number>.png, or (None) the only line's in FILE."""
        from seq2seq.views import plots

        path = self.path
        if number is not None:
            path = self.outputs.claim("--attention-png", numbered(self.path, number))
        write_file(plots.attention_png(maps, self.layer, self.head), path)
