"""`seq2seq translate` steered: --prefix / --prefix-file, --sample and its cuts, --beam-trace; and
every bad value of them refused in one line, exit 2, nothing written."""

import json

import pytest

from seq2seq.decoding.trace import replay
from seq2seq.runs.load import load_run

LINES = ["a dog runs", "two men sit on a bench", "the cat"]


def nbest(out: str) -> list[tuple[int, str, float]]:
    rows = [line.split(" ||| ") for line in out.splitlines()]
    return [(int(i), text, float(score)) for i, text, score in rows]


def assert_same_samples(got: list[tuple[int, str, float]], want: list[tuple[int, str, float]]) -> None:
    """The same draws; their scores equal up to the last printed digit, which a padded batch's
    kernels may round the other way."""
    assert [row[:2] for row in got] == [row[:2] for row in want]
    assert [row[2] for row in got] == pytest.approx([row[2] for row in want], abs=2e-4)


def test_every_translation_starts_with_the_prefix(cli, tiny_run):
    run, _ = tiny_run
    for search in (["--greedy"], ["--beam", "3"]):
        result = cli("translate", "--run", run, *search, "--prefix", "un chien", *LINES)
        assert result.code == 0, result.err
        assert [line.startswith("un chien") for line in result.out.splitlines()] == [True] * 3


def test_a_prefix_file_gives_each_line_its_own(cli, tiny_run, tmp_path):
    run, _ = tiny_run
    (tmp_path / "in.txt").write_text("\n".join(LINES) + "\n")
    (tmp_path / "prefixes.txt").write_text("un chat\n\ndeux\n")
    prefixes = ["--prefix-file", tmp_path / "prefixes.txt"]
    result = cli("translate", "--run", run, "--input", tmp_path / "in.txt", *prefixes)
    assert result.code == 0, result.err
    out = result.out.splitlines()
    assert out[0].startswith("un chat") and out[2].startswith("deux") and len(out) == 3
    free = cli("translate", "--run", run, LINES[1]).out.splitlines()
    assert out[1] == free[0]  # an empty prefix line: the line is translated freely


def test_seeded_samples_repeat_batched_or_alone(cli, tiny_run):
    run, _ = tiny_run
    args = ["translate", "--run", run, "--sample", "--num-samples", "3"]
    args += ["--seed", "5", "--temperature", "1.3"]
    first = cli(*args, *LINES)
    assert first.code == 0, first.err
    rows = nbest(first.out)
    assert [i for i, _, _ in rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert_same_samples(nbest(cli(*args, "--batch-size", "1", *LINES).out), rows)
    alone = [(1, text, score) for _, text, score in nbest(cli(*args, LINES[1]).out)]
    assert_same_samples(alone, rows[3:6])
    other = cli(*args[:-4], "--seed", "6", "--temperature", "1.3", *LINES)
    assert other.out != first.out


def test_the_beam_trace_replays_to_the_printed_nbest(cli, tiny_run, tmp_path):
    run, _ = tiny_run
    trace = tmp_path / "beam.jsonl"
    result = cli("translate", "--run", run, "--beam", "3", "--nbest", "3", "--beam-trace", trace, *LINES, "")
    assert result.code == 0, result.err
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3, 4] and records[3]["nodes"] == []
    _, tokenizer = load_run(run)
    printed = nbest(result.out)
    for number, record in enumerate(records[:3]):
        replayed = replay(record["nodes"], 3)
        assert tokenizer.decode([t for t, _ in replayed]) == [t for i, t, _ in printed if i == number]
        assert [round(s, 4) for _, s in replayed] == [s for i, _, s in printed if i == number]
        assert all(("piece" in n) != (n["state"] == "root") for n in record["nodes"])


@pytest.mark.parametrize(
    "args, words",
    [
        (["--sample", "--beam", "4"], "beam"),
        (["--sample", "--temperature", "0"], "temperature"),
        (["--sample", "--temperature", "nan"], "temperature"),
        (["--sample", "--temperature", "1e-300"], "float32"),
        (["--sample", "--temperature", "1e39"], "float32"),
        (["--sample", "--top-p", "1e-300"], "float32"),
        (["--sample", "--top-p", "1.5"], "top-p"),
        (["--sample", "--top-p", "0"], "top-p"),
        (["--sample", "--top-k", "0"], "top-k"),
        (["--sample", "--epsilon", "1"], "epsilon"),
        (["--sample", "--num-samples", "65"], "num-samples"),
        (["--sample", "--beam-trace", "{tmp}/t.jsonl"], "--beam-trace"),
        (["--prefix", "a", "--prefix-file", "{tmp}/p.txt"], "--prefix"),
        (["--prefix-file", "{tmp}/p.txt"], "lines"),
        (["--prefix", "un chien court vite", "--max-len", "2"], "max-len"),
        (["--prefix", "\u4e2d\u6587"], "no piece"),
    ],
)
def test_bad_steering_is_one_line_and_exit_2_and_nothing_written(cli, tiny_run, tmp_path, args, words):
    run, _ = tiny_run
    (tmp_path / "p.txt").write_text("un\ndeux\n")  # two prefixes, three lines
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = cli("translate", "--run", run, *args, "--output", tmp_path / "out.txt", *LINES)
    assert result.code == 2, (result.out, result.err)
    assert words in result.err and "Traceback" not in result.err
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "t.jsonl").exists()


def test_an_explorer_page_holds_the_alternatives_the_prefix_and_the_beam(cli, tiny_run, tmp_path):
    run, _ = tiny_run
    page, trace = tmp_path / "page.html", tmp_path / "beam.jsonl"
    args = ["--attention-html", page, "--beam-trace", trace, "--prefix", "un", "--beam", "2"]
    result = cli("translate", "--run", run, *args, *LINES[:2])
    assert result.code == 0, result.err
    html = page.read_text()
    start = html.index('id="maps-data">') + len('id="maps-data">')
    data = json.loads(html[start : html.index("</script>", start)])
    for sentence in data["sentences"]:
        assert len(sentence["alternatives"]) == len(sentence["target"]) and sentence["forced"] == 1
        assert len(sentence["alternatives"][0]["top"]) == 5
        assert sentence["beam"]["nodes"][0]["pieces"] == ["\u2581un"]
