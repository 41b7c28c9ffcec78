"""The pure parts of bench/local_server_memory.py and bench/local_bot.py: reading a process's resident
memory from /proc/PID/status, naming a run by its cache arguments, the requests' shapes, and judging the
bot's replies by keywords."""

from __future__ import annotations

import os

import pytest

from bench.local_bot import (
    FAILED_REPLY,
    PEOPLE,
    QUESTIONS,
    Question,
    conversation,
    judge,
    reply_to,
    words_in,
)
from bench.local_server_memory import (
    MIB,
    label_for,
    memory_request,
    perf_entries,
    process_rss,
    requests_for,
    status_bytes,
)

STATUS = """Name:\tpython
Umask:\t0022
State:\tS (sleeping)
VmPeak:\t 9012344 kB
VmSize:\t 7741552 kB
VmHWM:\t 4312000 kB
VmRSS:\t 4230952 kB
RssAnon:\t 3100000 kB
Threads:\t5
"""


def test_status_fields_are_read_in_bytes() -> None:
    assert status_bytes(STATUS) == 4230952 * 1024
    assert status_bytes(STATUS, "VmHWM") == 4312000 * 1024
    assert status_bytes(STATUS, "RssAnon") == 3100000 * 1024  # not taken for VmRSS: whole names only


def test_a_missing_field_is_zero() -> None:
    assert status_bytes("Name:\tkthreadd\nState:\tS\n") == 0  # a kernel thread has no VmRSS
    assert status_bytes("") == 0
    assert status_bytes("VmRSS:\n") == 0


def test_this_process_has_a_resident_size() -> None:
    assert 10 * MIB < process_rss(os.getpid()) < 64 * 1024 * MIB


def test_a_finished_process_reads_as_zero() -> None:
    assert process_rss(2**22 + 12345) == 0  # above the kernel's pid_max default: never a live pid


@pytest.mark.parametrize(
    ("args", "label"),
    [
        ([], "no_cache"),
        (["--cache", "false"], "no_cache"),
        (["--cache", "true"], "cache_default"),
        (["--cache", "true", "--cache_size", "1073741824"], "cache_1024mib"),
        (["--cache", "true", "--cache_type", "disk", "--cache_size", "268435456"], "cache_disk_256mib"),
        (["--cache", "false", "--logits_all", "false"], "no_cache_logits_all_false"),
        (
            ["--cache", "true", "--cache_size", "268435456", "--logits_all", "false"],
            "cache_256mib_logits_all_false",
        ),
    ],
)
def test_a_run_is_named_by_its_cache_arguments(args: list[str], label: str) -> None:
    assert label_for(args) == label


SERVER_LOG = """INFO:     127.0.0.1:36932 - "POST /v1/chat/completions HTTP/1.1" 200 OK
llama_perf_context_print:        load time =    1200.00 ms
llama_perf_context_print: prompt eval time =  209029.62 ms /  1742 tokens (  119.99 ms per token,     8.33 tokens per second)
llama_perf_context_print:        eval time =   41710.00 ms /    59 runs   (  706.95 ms per token,     1.41 tokens per second)
llama_perf_context_print:       total time =  254144.51 ms /  1801 tokens
Llama._create_completion: cache hit
Llama.generate: 353 prefix-match hit, remaining 1278 prompt tokens to eval
llama_perf_context_print: prompt eval time =  120112.13 ms /  1278 tokens (   93.98 ms per token,    10.64 tokens per second)
llama_perf_context_print:        eval time =    9825.10 ms /    15 runs   (  655.01 ms per token,     1.53 tokens per second)
Llama._create_completion: cache miss
Llama.generate: 3 prefix-match hit, remaining 1742 prompt tokens to eval
llama_perf_context_print: prompt eval time =  255837.98 ms /  1742 tokens (  146.86 ms per token,     6.81 tokens per second)
"""


def test_the_server_log_gives_each_completion_s_tokens_and_seconds_in_order() -> None:
    assert perf_entries(SERVER_LOG) == [
        {
            "cache": None,
            "reused_tokens": 0,
            "evaluated_tokens": 1742,
            "prompt_eval_seconds": 209.03,
            "output_tokens": 59,
            "generate_seconds": 41.71,
        },
        {
            "cache": "hit",
            "reused_tokens": 353,
            "evaluated_tokens": 1278,
            "prompt_eval_seconds": 120.11,
            "output_tokens": 15,
            "generate_seconds": 9.83,
        },
        {"cache": "miss", "reused_tokens": 3, "evaluated_tokens": 1742, "prompt_eval_seconds": 255.84},
    ]


def test_requests_alternate_and_every_prompt_differs() -> None:
    sent = list(requests_for(1, 12))
    assert [kind for kind, _ in sent] == ["chat", "memory"] * 6
    prompts = ["\n".join(m["content"] for m in body["messages"]) for _, body in sent]
    assert len(set(prompts)) == 12
    chats = [body for kind, body in sent if kind == "chat"]
    assert all(body["stream"] and body["max_tokens"] == 100 for body in chats)
    # one channel's system prompt (persona and its facts) is the same each time it is asked
    assert chats[0]["messages"][0] == chats[3]["messages"][0] != chats[1]["messages"][0]
    assert list(requests_for(1, 12)) == sent  # seeded: two runs send the same requests


def test_a_memory_request_asks_for_ids_of_fifty_lines() -> None:
    body = memory_request(1, 0)
    chat = body["messages"][1]["content"]
    assert "m50 " in chat and "m51 " not in chat
    assert body["response_format"]["type"] == "json_object" and body["max_tokens"] == 60


def test_keywords_are_whole_words_in_any_case() -> None:
    assert words_in("Ben is a CARPENTER in Lyon.", ("carpenter", "Lyon", "Oslo")) == ["carpenter", "Lyon"]
    assert words_in("a category of dogs", ("cat", "dog")) == []


def ask(target: str, asks: str) -> Question:
    return Question("Ana", target, asks, "?")


def test_a_right_reply_names_the_asked_fact_and_nobody_elses() -> None:
    verdict = judge("Ben works as a carpenter, mostly building kitchen cabinets.", ask("Ben", "work"))
    assert verdict == {
        "arrived": True,
        "failed_notice": False,
        "right": True,
        "right_words": ["carpenter", "cabinets"],
        "others": [],
        "clean": True,
    }


def test_the_target_s_other_facts_are_no_mix_up() -> None:
    verdict = judge("Chloe lives in Oslo with her dog Pixel.", ask("Chloe", "city"))
    assert verdict["clean"] and verdict["right_words"] == ["Oslo"]


def test_another_person_s_fact_is_a_mix_up_even_beside_the_right_one() -> None:
    verdict = judge("Ben is a carpenter; he lives in Porto with his cat Miso.", ask("Ben", "work"))
    assert verdict["right"] and not verdict["clean"]
    assert verdict["others"] == ["Miso", "Porto", "cat"]


def test_a_wrong_answer_is_not_right() -> None:
    verdict = judge("Ben is a nurse at the hospital.", ask("Ben", "work"))
    assert not verdict["right"] and verdict["others"] == ["hospital", "nurse"]


def test_the_failure_notice_and_silence_are_no_reply() -> None:
    notice = judge(FAILED_REPLY + " Please try again in a moment.", ask("Ben", "work"))
    assert notice["failed_notice"] and not notice["arrived"] and not notice["right"]
    assert not judge(None, ask("Ben", "work"))["arrived"]
    assert not judge("   ", ask("Ben", "work"))["arrived"]


def test_each_question_asks_about_another_person_s_stated_fact() -> None:
    askers = [q.asker for q in QUESTIONS]
    assert sorted(askers) == sorted(p.name for p in PEOPLE)
    for question in QUESTIONS:
        assert question.asker != question.target
        target = next(p for p in PEOPLE if p.name == question.target)
        stated = " ".join(target.statements)
        assert words_in(stated, target.keywords[question.asks])
    # nobody's keywords are in another person's statements, or a mix-up could not be told
    for person in PEOPLE:
        others = " ".join(s for p in PEOPLE if p is not person for s in p.statements)
        assert not [w for ks in person.keywords.values() for w in words_in(others, ks)]


def test_the_conversation_has_every_statement_once() -> None:
    lines = conversation()
    for person in PEOPLE:
        assert [text for who, text in lines if text in person.statements and who == person.name] == list(
            person.statements
        )


def test_a_reply_is_the_message_answering_the_question_and_the_parts_after_it() -> None:
    messages = [
        {"id": "1", "content": "earlier", "message_reference": {"message_id": "7"}},
        {"id": "2", "content": "part one", "message_reference": {"message_id": "9"}},
        {"id": "3", "content": "part two"},
        {"id": "4", "content": "next answer", "message_reference": {"message_id": "11"}},
    ]
    assert [m["id"] for m in reply_to(messages, 9)] == ["2", "3"]
    assert reply_to(messages, 5) == []
