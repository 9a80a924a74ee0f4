"""Documents in, documents out: plain text with paragraphs, Markdown, HTML and SubRip subtitles
(`formats.py`, `html.py`), cut into sentences (`sentences.py`), translated together and put back
with their structure, their inline markup placed through the alignment (`markup.py`);
`translate.py` is `seq2seq.translate_document`.

May import: `seq2seq.decoding` (the search), `seq2seq.alignment` (the links the markup follows),
and the shared small modules."""
