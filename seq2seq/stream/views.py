"""What `translate` shows and draws of each line's attention: --show-attention (drawn by the
caller's `terminal`, on stderr for the command), --attention-png pictures and the --attention-html
explorer page."""

from collections.abc import Callable
from pathlib import Path

from seq2seq.errors import FieldError
from seq2seq.files.writing import Outputs, numbered, write_file

PAGE_MB = 50  # an --attention-html page past this many MB gets a notice: browsers grow slow to open it


class Views:
    """--show-attention draws each line's map on stderr at once; --attention-png writes FILE for a
    single line, FILE-<line>.png for each when there are several. Which of the two is known only
    when a second line (or the end) arrives, so the first picture waits. --attention-html writes
    one explorer page holding every line, at the end; each line is kept as its JSON text meanwhile.
    Every file goes through `outputs`, which has claimed FILE already and claims each FILE-<line>.png
    before it is written. `terminal(maps, layer, head)` draws --show-attention's map (None: not
    asked for); `warn` says a notice."""

    def __init__(
        self,
        terminal: Callable | None,
        path: Path | None,
        layer: int | None,
        head: int | None,
        html: Path | None,
        run: Path,
        outputs: Outputs,
        warn: Callable[[str], None],
    ):
        self.terminal, self.warn = terminal, warn
        self.path, self.layer, self.head = path, layer, head
        self.html, self.run, self.outputs = html, run, outputs
        self.pages: list[str] = []
        self.page_size, self.page_told = 0, False
        self.wanted = terminal is not None or path is not None or html is not None
        self.first, self.several = None, False

    @classmethod
    def of(cls, args, run: Path, outputs: Outputs, terminal: Callable, warn: Callable) -> "Views":
        """The views `translate`'s args ask for (`terminal`: how --show-attention draws); --layer
        and --head go with a map drawn, and --attention-png with matplotlib, each said before any
        work."""
        for name, value in (("layer", args.layer), ("head", args.head)):
            if value is not None and not (args.show_attention or args.attention_png):
                raise FieldError((name, "show_attention", "attention_png"), "goes with a map drawn")
        if args.attention_png is not None:
            from seq2seq.views import plots

            plots.require()
        shown = terminal if args.show_attention else None
        return cls(shown, args.attention_png, args.layer, args.head, args.attention_html, run, outputs, warn)

    def show(self, number: int, maps, trust: dict | None = None) -> None:
        """Line `number`'s maps, and on the page its `trust` marks (trust/flags.py's piece_marks)."""
        if self.html is not None:
            self._keep_for_page(number, maps, trust)
        if self.terminal is not None:
            self.terminal(maps, self.layer, self.head)
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

    def _keep_for_page(self, number: int, maps, trust: dict | None) -> None:
        from seq2seq.views.explorer import escaped_json, maps_json

        sentence = maps_json(maps, number)
        if trust is not None:
            sentence["trust"] = trust
        self.pages.append(escaped_json(sentence))
        self.page_size += len(self.pages[-1])
        if self.page_size > PAGE_MB * 1e6 and not self.page_told:
            self.page_told = True
            self.warn(
                f"--attention-html {self.html} passes {PAGE_MB} MB at line {number}: a browser may be slow "
                "to open it; give fewer lines to keep it smaller"
            )

    def _draw(self, number: int | None, maps) -> None:
        """Line `number`'s picture in FILE-<number>.png, or (None) the only line's in FILE."""
        from seq2seq.views import plots

        path = self.path
        if number is not None:
            path = self.outputs.claim("attention_png", numbered(self.path, number))
        write_file(plots.attention_png(maps, self.layer, self.head), path)
