"""What every export starts with: where it may be written (never over the run it comes from), and
the run itself, a Transformer (the engines have no class for our RNN)."""

from pathlib import Path

from seq2seq.errors import Seq2SeqError
from seq2seq.runs.load import load_run


def check_output(run_dir: Path, output_dir: Path, force: bool, read: str = "the run") -> Path:
    """Refuse an existing `output_dir` without `force`, and always one that is, holds or lies in the
    run (or what else is `read`: the Marian folder an import reads): replacing it would delete the
    run (or the export would land inside it)."""
    output_dir, run = Path(output_dir), Path(run_dir).resolve()
    # where the export lands (a link named OUT is replaced, not followed) and what OUT names
    for target in (output_dir.parent.resolve() / output_dir.name, output_dir.resolve()):
        if target == run or run in target.parents or target in run.parents:
            raise Seq2SeqError(
                f"{output_dir} is, holds or lies inside {read} {run_dir}; choose another folder"
            )
    if (output_dir.exists() or output_dir.is_symlink()) and not force:
        raise Seq2SeqError(f"{output_dir} already exists; pass --force to replace it")
    return output_dir


def transformer_run(run_dir: Path, output_dir: Path, force: bool, engine: str):
    """(model, tokenizer, output_dir) of a run that `engine` can take, once the output is allowed."""
    output_dir = check_output(run_dir, output_dir, force)
    model, tokenizer = load_run(run_dir)
    if model.cfg.arch != "transformer":
        raise Seq2SeqError(
            f"{run_dir} is an {model.cfg.arch} run; {engine} export supports Transformers only"
        )
    return model, tokenizer, output_dir
