"""How good the store's recall is: hit@5 and recall@5 of vector, keyword and hybrid search, on labelled data.

    python -m bench.recall_quality            # 30 people, ~480 facts, ~330 questions (~1 min)
    python -m bench.recall_quality --quick    # 10 people
    GEMINI_BASE_URL=http://127.0.0.1:8765 python -m bench.recall_quality --endpoint   # embed through an endpoint

**The data** is generated here, from a seed, by templates (`CATEGORIES`): 30 people, each with 14-16
facts about themselves drawn from 20 kinds (home, job, pets, food, diet, allergies, instruments,
languages, sports, family, ...), each kind with several phrasings ("Ana lives in Porto." / "Ana is
based in Porto." / "Ana has lived in Porto since 2015."). The questions (11 per person: 8 about one of
the person's facts, 3 about a group of kinds such as "what should I cook for Ana?" -> food, diet and
allergies) come from question templates written as a person would ask in chat: some share words with
the fact ("where does Ana live?" / "is anyone around Porto?"), some share none ("what's Ana's
hometown?", "how does Ana earn a living?"), some are asked by the person ("what should I cook
tonight?" from Ana). The relevant fact ids of a question are the facts of that person of the asked
kinds. So keyword search misses paraphrases and vector search misses some specific ones, by design;
the JSON splits the figures by whether the question shares a content word with a relevant fact.

**The search** is the store's own: facts go in with `Store.add_facts` (embeddings from
all-MiniLM-L6-v2, computed in-process by `bench.local_model.MiniLM`, or by any Gemini-compatible
endpoint with `--endpoint`), and each question is searched within its person only, as recall does:

- vector: `Store.knn` as recall calls it (pool 20 within `RECALL_MAX_DISTANCE` 0.55), first 5;
- keyword: `Store.keyword_search` (FTS5 + per-person BM25), first 5;
- hybrid: `recall.search_people` with limit 5 (the fusion the bot uses; pool 20, distance 0.55);
- and, to separate the distance cut from the fusion, vector and hybrid without the distance limit.

hit@5: a relevant fact is among the first 5. recall@5: the share of the relevant facts among the
first 5 (averaged over questions). Writes bench/results/recall_quality.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import machine, table, write_json
from bot.memory.models import NewFact
from bot.memory.recall import CONTEXT_WEIGHT, KEYWORD_WEIGHT, blend, search_people
from bot.memory.text import fold
from bot.storage import Store
from bot.storage.keywords import search_terms

SCOPE = "guild:616161"
K = 5
POOL = 20
MAX_DISTANCE = 0.55  # the bot's RECALL_MAX_DISTANCE
SINGLE_QUESTIONS = 8
GROUP_QUESTIONS = 3
# Two of these come before every question in the "in conversation" runs: the small talk a question
# arrives after in a real channel. Some share words with facts (train, coffee, lunch, holiday) on purpose.
SMALL_TALK = (
    "ugh the train was late again this morning",
    "anyone watching the match tonight?",
    "lol same",
    "my coffee machine broke, send help",
    "what a week honestly",
    "did you see the new trailer?",
    "it's raining so hard here",
    "brb grabbing lunch",
    "happy friday everyone!",
    "that meme killed me",
    "I need a holiday so badly",
    "the new emoji on this server are great",
    "my cat just knocked over a plant",
    "finally finished that report at work",
    "can't believe it's almost december",
    "who's up for a game later?",
)

NAMES = (
    "Ana Ben Chloe Dev Emi Finn Gus Hana Ines Jonas Kemal Lea Milo Nora Omar Priya Quinn Rosa Sven Tara "
    "Ugo Vera Wes Xia Yusuf Zoe Aiko Bruno Carmen Dario"
).split()


@dataclass(frozen=True)
class Kind:
    values: tuple[Any, ...]
    facts: tuple[str, ...]  # "{n}" the name, "{v}" the value (or "{v[0]}"... for tuples)
    questions: tuple[str, ...]  # asked by someone else about {n}, or by {n} in the second person ("you:")


CITIES = (
    "Porto",
    "Oslo",
    "Ghent",
    "Tartu",
    "Graz",
    "Bergen",
    "Lyon",
    "Cork",
    "Turku",
    "Bilbao",
    "Krakow",
    "Leeds",
)
KINDS: dict[str, Kind] = {
    "home": Kind(
        CITIES,
        ("{n} lives in {v}.", "{n} is based in {v}.", "{n} has lived in {v} since 2015."),
        (
            "where does {n} live?",
            "which city is {n} in these days?",
            "what's {n}'s hometown?",
            "is anyone around {v}?",
            "you: how's the weather where I am, do you know?",
            "recommend a weekend trip near {n}'s place",
        ),
    ),
    "job": Kind(
        (
            "nurse",
            "carpenter",
            "data analyst",
            "pharmacist",
            "sound engineer",
            "translator",
            "baker",
            "architect",
            "pilot",
            "plumber",
        ),
        ("{n} works as a {v}.", "{n} is a {v} by profession.", "{n} has a job as a {v}."),
        (
            "what does {n} do for work?",
            "what's {n}'s job?",
            "how does {n} earn a living?",
            "is {n} a {v}?",
            "you: any career advice for someone like me?",
            "what is {n}'s profession?",
        ),
    ),
    "pet": Kind(
        (
            ("dog", "Rex"),
            ("cat", "Miso"),
            ("rabbit", "Biscuit"),
            ("parrot", "Kiwi"),
            ("tortoise", "Speedy"),
            ("hamster", "Nugget"),
        ),
        ("{n} has a {v[0]} called {v[1]}.", "{n}'s {v[0]} is named {v[1]}.", "{n} owns a {v[0]}, {v[1]}."),
        (
            "does {n} have any pets?",
            "what animal does {n} keep at home?",
            "who is {v[1]}?",
            "what's the name of {n}'s {v[0]}?",
            "you: what should I buy for my pet's birthday?",
        ),
    ),
    "food": Kind(
        ("ramen", "lasagne", "pierogi", "pho", "paella", "dal", "tacos", "bibimbap", "sushi", "moussaka"),
        ("{n}'s favourite food is {v}.", "{n} loves eating {v}.", "{n} could eat {v} every day."),
        (
            "what's {n}'s favourite dish?",
            "what does {n} like to eat?",
            "does {n} like {v}?",
            "which restaurant would {n} enjoy?",
        ),
    ),
    "diet": Kind(
        ("vegetarian", "vegan", "pescatarian"),
        ("{n} is {v}.", "{n} has been {v} for years.", "{n} follows a {v} diet."),
        ("does {n} eat meat?", "is {n} {v}?", "any dietary restrictions for {n}?"),
    ),
    "allergy": Kind(
        ("peanuts", "shellfish", "gluten", "cats", "pollen", "penicillin"),
        ("{n} is allergic to {v}.", "{n} has a {v} allergy.", "{n} reacts badly to {v}."),
        (
            "does {n} have any allergies?",
            "is {v} a problem for {n}?",
            "anything {n} must avoid for health reasons?",
        ),
    ),
    "instrument": Kind(
        ("piano", "cello", "ukulele", "drums", "violin", "bass guitar", "saxophone", "harp"),
        (
            "{n} plays the {v}.",
            "{n} has played the {v} since childhood.",
            "{n} practises the {v} every evening.",
        ),
        (
            "does {n} play any music?",
            "what instrument does {n} play?",
            "is {n} musical?",
            "who could play the {v} at the party?",
        ),
    ),
    "language": Kind(
        ("Japanese", "Finnish", "Portuguese", "Korean", "Polish", "Italian", "Arabic", "Swahili"),
        ("{n} is learning {v}.", "{n} takes {v} lessons.", "{n} studies {v} in the evenings."),
        ("what language is {n} studying?", "does {n} speak {v}?", "is {n} learning anything new?"),
    ),
    "sport": Kind(
        ("climbing", "swimming", "running", "cycling", "rowing", "tennis", "judo", "yoga"),
        ("{n} goes {v} every weekend.", "{n} is really into {v}.", "{n} trains for {v} twice a week."),
        (
            "what does {n} do to stay fit?",
            "is {n} sporty?",
            "does {n} do any {v}?",
            "you: what workout would suit me?",
        ),
    ),
    "family": Kind(
        ("two sisters", "a younger brother", "three kids", "a baby daughter", "twin sons"),
        ("{n} has {v}.", "{n}'s family includes {v}.", "{n} is proud of having {v}."),
        ("does {n} have children or siblings?", "tell me about {n}'s family", "how big is {n}'s family?"),
    ),
    "partner": Kind(
        (
            ("wife", "Sara"),
            ("husband", "Tom"),
            ("partner", "Alex"),
            ("girlfriend", "Mei"),
            ("boyfriend", "Luca"),
        ),
        (
            "{n}'s {v[0]} is called {v[1]}.",
            "{n} is married to {v[1]}.",
            "{n} lives with {v[1]}, their {v[0]}.",
        ),
        (
            "is {n} married?",
            "who is {v[1]}?",
            "what's the name of {n}'s {v[0]}?",
            "is {n} in a relationship?",
        ),
    ),
    "commute": Kind(
        ("cycles", "takes the tram", "drives", "walks", "takes the ferry"),
        ("{n} {v} to work.", "Every morning {n} {v} to the office.", "{n} usually {v} to work."),
        ("how does {n} get to work?", "does {n} own a car?", "what's {n}'s commute like?"),
    ),
    "music": Kind(
        ("jazz", "techno", "opera", "metal", "folk", "k-pop", "reggae"),
        ("{n} loves {v} music.", "{n} mostly listens to {v}.", "{n}'s favourite genre is {v}."),
        ("what music does {n} like?", "which concert would {n} enjoy?", "does {n} like {v}?"),
    ),
    "film": Kind(
        ("Spirited Away", "The Godfather", "Amelie", "Alien", "Paddington 2", "Parasite"),
        (
            "{n}'s favourite film is {v}.",
            "{n} has watched {v} a dozen times.",
            "{n} thinks {v} is the best movie ever.",
        ),
        ("what movie should we watch with {n}?", "what's {n}'s favourite film?", "has {n} seen {v}?"),
    ),
    "birthday": Kind(
        ("January", "March", "May", "July", "September", "November"),
        ("{n}'s birthday is in {v}.", "{n} was born in {v}.", "{n} celebrates their birthday in {v}."),
        ("when is {n}'s birthday?", "when should we plan {n}'s party?", "how old is {n} turning and when?"),
    ),
    "study": Kind(
        ("chemistry", "history", "economics", "philosophy", "civil engineering", "medicine"),
        ("{n} studied {v} at university.", "{n} has a degree in {v}.", "{n} graduated in {v}."),
        ("what did {n} study?", "does {n} have a degree?", "where did {n} go to university and for what?"),
    ),
    "travel": Kind(
        ("Japan", "Peru", "Iceland", "Morocco", "Vietnam", "Canada"),
        (
            "{n} is travelling to {v} in August.",
            "{n} plans a trip to {v} this summer.",
            "{n} booked flights to {v}.",
        ),
        ("does {n} have holiday plans?", "where is {n} going this summer?", "is {n} visiting {v}?"),
    ),
    "hobby": Kind(
        (
            "knits scarves",
            "collects vinyl records",
            "builds model trains",
            "paints watercolours",
            "brews beer",
            "grows bonsai",
        ),
        ("{n} {v} in the evenings.", "{n}'s hobby: {n} {v}.", "In their spare time {n} {v}."),
        ("what are {n}'s hobbies?", "what does {n} do in the evenings?", "any gift idea for {n}?"),
    ),
    "drink": Kind(
        ("green tea", "espresso", "oat milk lattes", "kombucha", "hot chocolate"),
        (
            "{n} drinks {v} every morning.",
            "{n} can't start the day without {v}.",
            "{n}'s usual order is {v}.",
        ),
        (
            "how does {n} take their coffee?",
            "what should I order for {n} at the cafe?",
            "does {n} drink {v}?",
        ),
    ),
    "car": Kind(
        ("an old Volvo", "a red Fiat 500", "an electric Renault", "a camper van"),
        ("{n} drives {v}.", "{n} owns {v}.", "{n} bought {v} last year."),
        ("what car does {n} have?", "can {n} give us a lift?", "does {n} own a vehicle?"),
    ),
}

# Questions about several kinds at once: (template, kinds that are relevant).
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("what should I cook for {n} tonight?", ("food", "diet", "allergy")),
    ("you: what should I cook tonight?", ("food", "diet", "allergy")),
    ("what does {n} do in their free time?", ("hobby", "sport", "instrument")),
    ("you: I'm bored this weekend, any ideas?", ("hobby", "sport", "instrument", "music")),
    ("tell me about {n}'s family", ("family", "partner")),
    ("who does {n} live with?", ("family", "partner", "pet")),
    ("what languages does {n} know?", ("language", "study")),
    ("plan a birthday present for {n}", ("birthday", "hobby", "music", "film")),
    ("where could {n} go on holiday?", ("travel", "home", "language")),
    ("what's {n}'s daily routine like?", ("commute", "drink", "job", "sport")),
)


def render(template: str, name: str, value: Any) -> str:
    return template.format(n=name, v=value)


def dataset(people: int, seed: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(facts, questions): facts carry id, person, kind and text; questions person, text, relevant ids."""
    rng = random.Random(seed)
    facts: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for p, name in enumerate(NAMES[:people]):
        uid = str(9100 + p)
        kinds = rng.sample(sorted(KINDS), rng.randint(14, 16))
        mine: dict[str, list[dict[str, Any]]] = {}
        chosen: dict[str, Any] = {}
        for kind in kinds:
            spec = KINDS[kind]
            value = rng.choice(spec.values)
            chosen[kind] = value
            fact = {
                "id": len(facts),
                "person": uid,
                "name": name,
                "kind": kind,
                "text": render(rng.choice(spec.facts), name, value),
            }
            facts.append(fact)
            mine.setdefault(kind, []).append(fact)
        for kind in rng.sample(kinds, SINGLE_QUESTIONS):
            template = rng.choice(KINDS[kind].questions)
            questions.append(
                _question(uid, name, template, chosen[kind], [f["id"] for f in mine[kind]], (kind,))
            )
        groups = [g for g in GROUPS if any(k in mine for k in g[1])]
        for template, group in rng.sample(groups, min(GROUP_QUESTIONS, len(groups))):
            relevant = [f["id"] for k in group for f in mine.get(k, [])]
            questions.append(_question(uid, name, template, None, relevant, group))
    talk = random.Random(seed + 1)  # its own generator: the facts and questions stay as they were
    for q in questions:
        q["lead"] = talk.sample(SMALL_TALK, 2)
    return facts, questions


def _question(
    uid: str, name: str, template: str, value: Any, relevant: list[int], kinds: tuple[str, ...]
) -> dict[str, Any]:
    asked_by_person = template.startswith("you:")
    text = template.removeprefix("you:").strip()
    return {
        "person": uid,
        "text": render(text, name, value) if value is not None else text.format(n=name),
        "relevant": relevant,
        "kinds": list(kinds),
        "asked_by_person": asked_by_person,
    }


def shares_word(question: str, texts: list[str], name: str) -> bool:
    """Whether the question has a keyword-search term (not the person's name) that a relevant fact contains."""
    terms = search_terms(question, ignore=[name])
    words = {w for t in texts for w in re.findall(r"\w+", fold(t))}
    return any(w.startswith(t) for t in terms for w in words)


# ---- embedding -----------------------------------------------------------------------------------------------


async def embed_all(texts: list[str], task: str, endpoint: bool) -> list[list[float]]:
    if endpoint:
        from bot.llm.gemini import GeminiClient

        client = GeminiClient(
            api_key=os.environ.get("GEMINI_API_KEY") or "local",
            base_url=os.environ.get("GEMINI_BASE_URL", ""),
            chat_model="-",
            memory_model="-",
            embedding_model=os.environ.get("EMBEDDING_MODEL", "gemini-embedding-001"),
            embedding_dimensions=int(os.environ.get("EMBEDDING_DIMENSIONS", "768")),
            timeout_seconds=0,
        )
        try:
            return await client.embed(texts, "document" if task == "document" else "query")
        finally:
            await client.aclose()
    from bench.local_model import MiniLM

    return MiniLM().embed(texts)


# ---- evaluation ----------------------------------------------------------------------------------------------

METHODS = (
    ("vector", "vector (pool 20, distance <= cut)"),
    ("keyword", "keyword (FTS5 + BM25, name left out)"),
    ("hybrid", "hybrid (recall.search_people)"),
    ("vector_nolimit", "vector, no distance limit"),
    ("hybrid_nolimit", "hybrid, no distance limit"),
    ("vector_joined", "in conversation: vector, turns joined"),
    ("hybrid_joined", "in conversation: hybrid, turns joined"),
    ("vector_led", "in conversation: vector, message-led"),
    ("hybrid_led", "in conversation: hybrid, message-led (the bot)"),
)


@dataclass(frozen=True)
class Query:
    """One question's searches: alone, and after two lines of small talk (joined as the bot used to, or
    led by the question as the bot does now: `recall.blend`, the question's words first)."""

    text: str
    vector: list[float]
    joined_text: str
    joined_vector: list[float]
    led_vector: list[float]


def search(store: Store, uid: str, name: str, q: Query, cut: float, weight: float) -> dict[str, list[int]]:
    """The first K fact ids by each method."""

    def hybrid(vector: list[float], text: str, distance: float) -> list[int]:
        ranked = search_people(
            store,
            SCOPE,
            [uid],
            vector,
            text,
            limit=K,
            max_distance=distance,
            pool=POOL,
            names={uid: name},
            keyword_weight=weight,
        )
        return [s.fact.id for s in ranked[uid]]

    def vector(v: list[float], distance: float | None) -> list[int]:
        return [f.id for f, _ in store.knn(SCOPE, uid, v, POOL, distance)[:K]]

    led_text = q.text + "\n" + q.joined_text.removesuffix(q.text)
    return {
        "vector": vector(q.vector, cut),
        "keyword": [f.id for f in store.keyword_search(SCOPE, uid, q.text, K, ignore=[name])],
        "hybrid": hybrid(q.vector, q.text, cut),
        "vector_nolimit": vector(q.vector, None),
        "hybrid_nolimit": hybrid(q.vector, q.text, 2.0),
        "vector_joined": vector(q.joined_vector, cut),
        "hybrid_joined": hybrid(q.joined_vector, q.joined_text, cut),
        "vector_led": vector(q.led_vector, cut),
        "hybrid_led": hybrid(q.led_vector, led_text, cut),
    }


def evaluate(
    facts: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    fact_vectors: list[list[float]],
    queries: list[Query],
    *,
    cut: float,
    weight: float,
) -> dict[str, Any]:
    """Every question searched by every method, in a store of its own (in a temporary directory)."""
    with tempfile.TemporaryDirectory(prefix="recall-quality-") as tmp:
        return _evaluate(facts, questions, fact_vectors, queries, Path(tmp), cut=cut, weight=weight)


def _evaluate(
    facts: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    fact_vectors: list[list[float]],
    queries: list[Query],
    workdir: Path,
    *,
    cut: float,
    weight: float,
) -> dict[str, Any]:
    dimensions = len(fact_vectors[0])
    store = Store.open(workdir / "recall.sqlite3", embedding_model="bench-embedder", dimensions=dimensions)
    new = [
        NewFact(SCOPE, f["person"], f["name"], f["text"], [], embedding=v)
        for f, v in zip(facts, fact_vectors, strict=True)
    ]
    store_ids = store.add_facts(new)
    to_label = dict(zip(store_ids, (f["id"] for f in facts), strict=True))
    by_id = {f["id"]: f for f in facts}
    per_question = []
    started = time.perf_counter()
    for q, query in zip(questions, queries, strict=True):
        relevant = set(q["relevant"])
        name = by_id[q["relevant"][0]]["name"]
        found = {
            m: [to_label[i] for i in ids]
            for m, ids in search(store, q["person"], name, query, cut, weight).items()
        }
        per_question.append(
            {
                **q,
                "shares_word": shares_word(q["text"], [by_id[i]["text"] for i in relevant], name),
                "found": found,
                "hit": {m: bool(relevant & set(ids)) for m, ids in found.items()},
                "recall": {m: len(relevant & set(ids)) / len(relevant) for m, ids in found.items()},
            }
        )
    seconds = time.perf_counter() - started
    store.close()
    return {"questions": per_question, "search_seconds": round(seconds, 2)}


def sweep(
    facts: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    fact_vectors: list[list[float]],
    queries: list[Query],
    args: argparse.Namespace,
) -> list[tuple[float, float, list[str]]]:
    """hit@5 / recall@5 at other distance cuts and keyword weights, to choose them for an embedding model."""
    out = []
    for cut in (0.45, 0.55, 0.65, 0.75, 0.85):
        for weight in (0.0, 0.15, 0.3, 0.6):
            rows = evaluate(facts, questions, fact_vectors, queries, cut=cut, weight=weight)["questions"]
            s = summary(rows)
            cells = [
                f"{s[m]['hit@5']:.1f} / {s[m]['recall@5']:.1f}"
                for m in ("vector", "hybrid", "vector_led", "hybrid_led")
            ]
            out.append((cut, weight, cells))
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for method, _ in METHODS:
        n = len(rows) or 1
        out[method] = {
            "hit@5": round(100 * sum(r["hit"][method] for r in rows) / n, 1),
            "recall@5": round(100 * sum(r["recall"][method] for r in rows) / n, 1),
            "questions": len(rows),
        }
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    facts, questions = dataset(args.people)
    print(
        f"{len(facts)} facts of {args.people} people, {len(questions)} questions; embedding ...", flush=True
    )
    started = time.perf_counter()
    fact_vectors = await embed_all([f["text"] for f in facts], "document", args.endpoint)
    joined = ["\n".join([*q["lead"], q["text"]]) for q in questions]
    vectors = await embed_all(
        [q["text"] for q in questions] + joined + ["\n".join(q["lead"]) for q in questions],
        "query",
        args.endpoint,
    )
    n = len(questions)
    queries = [
        Query(
            q["text"],
            vectors[i],
            joined[i],
            vectors[n + i],
            blend(vectors[i], vectors[2 * n + i], args.context_weight),
        )
        for i, q in enumerate(questions)
    ]
    embed_seconds = time.perf_counter() - started
    result = evaluate(
        facts, questions, fact_vectors, queries, cut=args.max_distance, weight=args.keyword_weight
    )
    rows = result["questions"]
    return {
        "people": args.people,
        "facts": len(facts),
        "questions_count": len(questions),
        "embedder": os.environ.get("GEMINI_BASE_URL", "endpoint")
        if args.endpoint
        else "all-MiniLM-L6-v2 (bench.local_model.MiniLM, in-process)",
        "dimensions": len(fact_vectors[0]),
        "max_distance": args.max_distance,
        "keyword_weight": args.keyword_weight,
        "context_weight": args.context_weight,
        "embed_seconds": round(embed_seconds, 1),
        "search_seconds": result["search_seconds"],
        "all": summary(rows),
        "single_fact": summary([r for r in rows if len(r["kinds"]) == 1]),
        "group": summary([r for r in rows if len(r["kinds"]) > 1]),
        "shares_word": summary([r for r in rows if r["shares_word"]]),
        "no_shared_word": summary([r for r in rows if not r["shares_word"]]),
        "asked_by_person": summary([r for r in rows if r["asked_by_person"]]),
        "fusion_lost": sum(r["hit"]["vector"] and not r["hit"]["hybrid"] for r in rows),
        "fusion_gained": sum(r["hit"]["hybrid"] and not r["hit"]["vector"] for r in rows),
        "sweep": sweep(facts, questions, fact_vectors, queries, args) if args.sweep else None,
        "facts_list": facts,
        "questions": rows,
    }


def report(r: dict[str, Any]) -> None:
    print(
        f"\n{r['questions_count']} questions over {r['facts']} facts of {r['people']} people; embeddings: {r['embedder']} ({r['dimensions']} dims)"
    )
    parts = ("all", "single_fact", "group", "shares_word", "no_shared_word")
    headers = ["method", *(f"{p} hit/recall@5 (n={r[p]['vector']['questions']})" for p in parts)]
    rows = [
        [label, *(f"{r[p][m]['hit@5']:.1f} / {r[p][m]['recall@5']:.1f}" for p in parts)]
        for m, label in METHODS
    ]
    print(table(headers, rows))
    print(f"questions the hybrid lost against vector: {r['fusion_lost']}, gained: {r['fusion_gained']}")
    if r["sweep"]:
        print("\nsweep (hit@5 / recall@5, all questions, in conversation and alone):")
        print(
            table(
                ["cut", "keyword weight", "vector", "hybrid", "vector, conv.", "hybrid, conv. (bot)"],
                [[f"{c:.2f}", f"{w:.2f}", *cells] for c, w, cells in r["sweep"]],
            )
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 people")
    parser.add_argument("--people", type=int, default=30)
    parser.add_argument("--endpoint", action="store_true", help="embed through GEMINI_BASE_URL (or Gemini)")
    parser.add_argument("--max-distance", type=float, default=MAX_DISTANCE, help="RECALL_MAX_DISTANCE")
    parser.add_argument("--keyword-weight", type=float, default=KEYWORD_WEIGHT, help="RECALL_KEYWORD_WEIGHT")
    parser.add_argument("--context-weight", type=float, default=CONTEXT_WEIGHT, help="RECALL_CONTEXT_WEIGHT")
    parser.add_argument(
        "--sweep", action="store_true", help="also try other distance cuts and keyword weights"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.people = 10
    args.people = min(args.people, len(NAMES))
    result = asyncio.run(main_async(args))
    report(result)
    print(
        f"\nwrote {write_json('recall_quality', {'benchmark': 'recall_quality', 'machine': machine(), **result}, partial=args.quick or args.people != 30)}"
    )


if __name__ == "__main__":
    main()
