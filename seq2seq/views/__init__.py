"""What a person looks at, drawn from one `AttentionMaps` (weights + piece labels) or the metrics
rows: the terminal heatmap (`heatmap.py`), PNG pictures and learning curves (`plots.py`). The CLI
only chooses a view and hands it the maps; nothing here prints.

May import: `seq2seq.decoding.attention` (the maps), `seq2seq.atomic`, `seq2seq.errors`."""
