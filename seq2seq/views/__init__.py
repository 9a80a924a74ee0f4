"""What a person looks at, drawn from one `AttentionMaps` (weights + piece labels) or the metrics
rows: the terminal heatmap (`heatmap.py`), PNG pictures and learning curves (`plots.py`), and the
interactive attention explorer (`explorer.py` with its page `explorer.html`, `.js`, `.css`: plain
files, no framework, no CDN), served by `seq2seq serve` and written whole by `translate
--attention-html`. The CLI and the server only choose a view and hand it the maps; nothing here
prints.

May import: `seq2seq.decoding.attention` (the maps), `seq2seq.atomic`, `seq2seq.errors`."""
