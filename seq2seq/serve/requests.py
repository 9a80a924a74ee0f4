"""The server's request and answer bodies (pydantic models): the decoding fields are generated from
DecodeOptions, the one declaration of each decoding option (those it marks `served`)."""

from dataclasses import fields
from typing import Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from seq2seq.decoding.alternatives import MAX_ALTERNATIVES
from seq2seq.decoding.options import GREEDY_HELP, SERVED, DecodeOptions
from seq2seq.fields import option_default
from seq2seq.request.request import CASES, FORMATS, TranslationRequest


def decode_field(f, hint) -> tuple:
    """The request field of a DecodeOptions field: its type, default and help, its range in the
    schema; a value out of range is refused by DecodeOptions.check, in the one line the command
    line says too."""
    low, high = f.metadata.get("range", (None, None))
    default = option_default(f)
    bounds = {k: v for k, v in (("minimum", low), ("maximum", high)) if v is not None}
    extra = {"allow_inf_nan": False} if hint is float else {}
    hint = hint | None if default is None else hint
    return hint, Field(default, description=f.metadata["help"], json_schema_extra=bounds or None, **extra)


def decode_fields(names: tuple[str, ...]) -> dict:
    hints = get_type_hints(DecodeOptions)
    return {f.name: decode_field(f, hints[f.name]) for f in fields(DecodeOptions) if f.name in names}


def request_field(name: str):
    """The body field of a TranslationRequest option (request/request.py declares it)."""
    f = next(f for f in fields(TranslationRequest) if f.name == name)
    return Field(f.default, description=f.metadata["help"])


STRICT = ConfigDict(extra="forbid", strict=True)
# How to decode: every served DecodeOptions field but the n-best, which only /translate takes; the
# defaults are `seq2seq translate`'s (the beam is the server's --beam)
DecodeFields = create_model(
    "DecodeFields",
    __config__=STRICT,
    greedy=(bool, Field(False, description=GREEDY_HELP)),
    **decode_fields(tuple(name for name in SERVED if name != "nbest")),
)


class TranslateRequest(DecodeFields):
    text: str | list[str] = Field(description="One sentence, or a list of them (one line each).")
    prefix: str | list[str] | None = Field(
        None, description="The text each translation starts with: one for all, or one a line (as text)."
    )
    nbest: int = decode_fields(("nbest",))["nbest"][1]
    constraints: list[str] | list[list[str]] | None = Field(
        None, description="Terms every translation must hold (beam search), or one list of terms a line."
    )
    avoid: list[str] | None = Field(None, description="Terms no translation may hold (beam search).")
    confidence: bool = Field(False, description="Also how far to trust each translation, as /check answers.")
    case: Literal[CASES] = request_field("case")
    avoid_exact: bool = request_field("avoid_exact")
    format: Literal[FORMATS] = Field(
        "lines",
        description="lines: a translation a line of `text`; text (paragraphs), markdown, html or srt: "
        "`text` is one document, translated whole with its structure (as `seq2seq translate --format`).",
    )


class AttentionRequest(DecodeFields):
    text: str = Field(description="One sentence.")
    translation: str | None = Field(
        None, description="A translation to explain (forced) instead of the model's."
    )
    prefix: str | None = Field(None, description="The text the model's translation starts with.")
    alternatives: int = Field(
        5, ge=0, le=MAX_ALTERNATIVES, description="The most likely pieces listed at each output position."
    )
    beam_trace: bool = Field(False, description="Also the beam search as a tree (kept, finished, pruned).")
    case: Literal[CASES] = request_field("case")


class CheckRequest(BaseModel):
    model_config = STRICT

    source: str | list[str] = Field(description="One sentence, or a list of them (one line each).")
    translation: str | list[str] = Field(description="Their translations (anyone's), one a source.")


class Hypothesis(BaseModel):
    text: str
    score: float


class TranslateResponse(BaseModel):
    # lines
    translations: list[str] | None = None
    scores: list[float] | None = None  # the best hypothesis' score: log-probability / length penalty
    nbest: list[list[Hypothesis]] | None = None
    truncated: int | None = None  # lines longer than the model's longest source, cut to it
    # a document (`format` other than lines)
    document: str | None = None  # the document translated, its structure kept
    sentences: int | None = None  # translated
    notices: list[str] | None = None  # tags kept at a sentence's end, sentences translated in parts
    confidence: list[dict] | None = None  # asked for: each best translation's trust (as /check's)
