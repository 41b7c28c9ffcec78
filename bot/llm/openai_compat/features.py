"""What an OpenAI-compatible endpoint is taken to support, and the ways down when it refuses something.

Each feature is assumed until the endpoint refuses it (a 400 naming it) or the settings switch it off;
then the bot goes on without it, said once in the log. JSON answers have a ladder rather than a switch:
the response schema (`json_schema`), JSON mode with the schema (`json_object` with `schema`, which
llama-cpp-python's server turns into a grammar), JSON mode, then the schema in the instruction. An
endpoint that takes `response_format` but ignores it is noticed from its answers: after a few in a row
the schema goes in the instruction too, and after many answers there response_format alone is tried again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import openai

log = logging.getLogger(__name__)

JSON_MODES = ("schema", "object_schema", "object", "prompt")  # the ways down, in order
SCHEMA_INSTRUCTION = "Answer with one JSON object only, no other text, matching this JSON Schema:\n{schema}"
# How many answers in a row must ignore response_format before the schema goes into the instruction, and
# after how many answers with it there response_format alone is tried again (an endpoint's model or
# server may change under the same URL).
IGNORED_EVIDENCE = 3
STEP_UP_AFTER = 100
_REFUSING_WORDS = {
    "tools": ("tool", "function"),
    "images": ("image", "vision", "multimodal", "image_url"),
    "response_format": ("response_format", "json_schema", "json_object", "structured output"),
    "stream_options": ("stream_options", "include_usage"),
}


@dataclass
class Features:
    """What the endpoint is taken to support, from the settings and what it has refused so far."""

    tools: bool = True
    images: bool = True
    json_mode: str = "schema"  # one of JSON_MODES
    json_fallback: bool = True  # step down the JSON modes on a refusal (OPENAI_JSON=auto)
    schema_in_prompt: bool = False  # also when the endpoint ignores response_format
    ignored_in_a_row: int = 0  # answers that ignored response_format, since the last that followed it
    answers_since_step_down: int = 0  # JSON answers since the schema went into the instruction
    stream_usage: bool = True
    send_dimensions: bool = False
    images_answered: bool = False  # an image went through once: a later failure is not about images

    # ---- JSON answers -----------------------------------------------------------------------------------

    def json_instruction(self, system: str, schema_text: str) -> str:
        """The system instruction, with the schema written out unless the endpoint holds the answer to
        it (a schema it takes costs no prompt tokens: 262 of 1,705 for a selection on a local model)."""
        if self.json_mode in ("schema", "object_schema") and not self.schema_in_prompt:
            return system
        return "\n\n".join(p for p in (system, SCHEMA_INSTRUCTION.format(schema=schema_text)) if p)

    def step_down(self, exc: openai.APIStatusError, *, mode: str, provider: str) -> bool:
        """After an error of a JSON request asked in `mode`: the next JSON mode when the endpoint refuses
        that mode's response_format (said in the log); False when it is another error or there is no way
        down. From the mode asked in, not the current one: concurrent requests refused alike step once."""
        if not (self.json_fallback and mode != "prompt" and refuses(exc, "response_format")):
            return False
        self.json_mode = JSON_MODES[JSON_MODES.index(mode) + 1]
        log.warning(
            "%s refuses response_format %s (%s); asking with %s instead",
            provider,
            mode,
            error_message(exc),
            self.json_mode,
        )
        return True

    def note_ignored_format(self, error: Exception, *, provider: str, model: str) -> None:
        """An answer asked for in a JSON mode that is not JSON at all, or any answer off the schema in
        JSON mode with the schema (an endpoint may take the `schema` key and ignore it): the schema goes
        in the instruction from now on."""
        ignored = "invalid JSON" in str(error) or self.json_mode == "object_schema"
        if not ignored or self.schema_in_prompt or self.json_mode == "prompt":
            return
        self.ignored_in_a_row += 1
        if self.ignored_in_a_row < IGNORED_EVIDENCE:  # one odd answer is no evidence of an endpoint
            return
        self.schema_in_prompt = True
        self.answers_since_step_down = 0
        log.warning(
            "%s seems to ignore response_format (%s answered without JSON %d times in a row); the schema "
            "now goes in the instruction, and response_format alone is tried again after %d answers",
            provider,
            model,
            self.ignored_in_a_row,
            STEP_UP_AFTER,
        )

    def note_followed_format(self, *, provider: str) -> None:
        """A JSON answer read well: the endpoint followed response_format (the evidence against it starts
        over), or, while the schema is in the instruction, one more answer towards trying without it."""
        if not self.schema_in_prompt:
            self.ignored_in_a_row = 0
            return
        self.answers_since_step_down += 1
        if self.answers_since_step_down >= STEP_UP_AFTER:
            self.schema_in_prompt = False
            self.ignored_in_a_row = 0
            log.info("%s: trying response_format without the schema in the instruction again", provider)

    # ---- the chat ---------------------------------------------------------------------------------------

    def drop_refused(
        self, exc: openai.BadRequestError, *, tools: bool, images: bool, provider: str, model: str
    ) -> str | None:
        """Switch off the feature a 400 names (tools, images, usage in the stream); None when none.
        `tools`, `images`: whether the request had them."""
        if tools and names(exc, "tools"):
            self.tools, name = False, "tools"
        elif self.images and images and names(exc, "images"):
            self.images, name = False, "images"
        elif self.stream_usage and names(exc, "stream_options"):
            self.stream_usage, name = False, "stream_options"
        else:
            return None
        log.warning(
            "%s (%s) refuses %s (%s): the bot goes on without them",
            provider,
            model,
            name,
            error_message(exc),
        )
        return name

    def drop_images(self, why: str, *, provider: str, model: str) -> bool:
        """A request with an image got an empty stream from an endpoint that has never answered one: a
        text-only model's chat template fails so in llama-cpp-python's server (the error comes after the
        stream's headers). Images go for good, said once; False when the image cannot be the cause."""
        if self.images_answered or not self.images:
            return False
        self.images = False
        log.warning(
            "%s (%s) failed a request with an image (%s): the bot goes on without images",
            provider,
            model,
            why,
        )
        return True


def response_format(mode: str, name: str, schema_text: str) -> dict[str, Any] | None:
    """A JSON request's `response_format` in `mode`; None when the schema is only in the instruction."""
    if mode == "schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": json.loads(schema_text)}}
    if mode == "object_schema":
        return {"type": "json_object", "schema": json.loads(schema_text)}
    if mode == "object":
        return {"type": "json_object"}
    return None


def error_message(exc: openai.APIStatusError) -> str:
    """The error's own words, from its body ({"error": {"message": ...}}) when it has one."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(exc.message)


def refuses(exc: openai.APIStatusError, feature: str) -> bool:
    """Whether an error is the endpoint refusing `feature`: a 400 or 422 naming it, or a 500 naming it
    (llama-cpp-python's server answers its request validation errors with a 500)."""
    return exc.status_code in (400, 422, 500) and names(exc, feature)


def names(exc: openai.APIStatusError, feature: str) -> bool:
    """Whether a 400 is about `feature` (its words in the error's message)."""
    text = f"{error_message(exc)} {json.dumps(exc.body) if exc.body is not None else ''}".lower()
    return any(word in text for word in _REFUSING_WORDS[feature])
