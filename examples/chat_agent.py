"""A minimal chat agent with long-term memory: engramdb builds the context before every turn and
stores the turn after it.

Each turn: `db.context(question, ...)` gives the memory block (what the store knows that bears on
the question, the session's latest turns, the facts' validity) under a token budget; the block and
the question go to an OpenAI-compatible chat endpoint; the question and the reply are stored as
the session's next turns, so the next question (in this run or a later one) can draw on them.

The reply comes from `$OPENAI_BASE_URL/chat/completions` (default https://api.openai.com/v1) when
`OPENAI_API_KEY` or `OPENAI_BASE_URL` is set (a local server needs no key), model `$OPENAI_MODEL`
(default gpt-4o-mini); plain urllib, no SDK. With neither set it runs offline: it prints the
prompt it would send and stores the question alone.

    python examples/chat_agent.py --path ./chat-memory --namespace maya --session s1
    python examples/chat_agent.py --script turns.txt      # one message a line, no prompt

Type /quit (or end the input) to stop.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import engramdb

SYSTEM = ("You are a helpful assistant with a long-term memory. The memory block below holds what you "
          "know from earlier conversations, each fact with the dates it holds; use it when it bears on "
          "the question, and say so when it does not answer it.")
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def build_messages(context_text: str, question: str) -> list[dict[str, str]]:
    """The chat messages for one turn: the system instructions with the memory block, then the question."""
    system = f"{SYSTEM}\n\n<memory>\n{context_text.strip() or '(nothing stored yet)'}\n</memory>"
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def complete(messages: list[dict[str, str]], *, base_url: str, api_key: str | None, model: str,
             timeout: float = 120.0) -> str:
    """Ask an OpenAI-compatible `/chat/completions` endpoint for a reply; returns its text."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    body = json.dumps({"model": model, "messages": messages}).encode()
    request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.load(response)
    return str(answer["choices"][0]["message"]["content"])


def remember(db: engramdb.Store, messages: list[dict[str, str]], *, namespace: str, session: str) -> list[str]:
    """Store a turn's messages as the session's next memories (seq assigned in order, one fsync)."""
    return db.add_messages(messages, namespace=namespace, session_id=session)


def print_prompt(messages: list[dict[str, str]]) -> None:
    """Show the prompt that would be sent (the offline mode)."""
    print("--- prompt (offline: set OPENAI_API_KEY or OPENAI_BASE_URL to send it) ---")
    for m in messages:
        print(f"[{m['role']}]\n{m['content']}")
    print("--- end of prompt ---")


def questions(script: Path | None) -> Iterator[str]:
    """The user's messages: the script's non-blank lines (lines starting with # are comments), else stdin."""
    if script is not None:
        lines: Iterable[str] = script.read_text(encoding="utf-8").splitlines()
        yield from (s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#"))
        return
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            return
        if line == "/quit":
            return
        if line:
            yield line


def chat(db: engramdb.Store, turns: Iterable[str], *, namespace: str, session: str, max_tokens: int,
         endpoint: dict[str, Any] | None) -> int:
    """Run the loop over `turns`; returns the number of turns answered or shown."""
    n = 0
    for n, question in enumerate(turns, 1):
        ctx = db.context(question, namespace=namespace, session_id=session, max_tokens=max_tokens)
        messages = build_messages(ctx.text, question)
        print(f"=== turn {n} ({len(ctx.items)} memories, {ctx.stats['tokens']} tokens of context) ===")
        turn = [{"role": "user", "content": question}]
        if endpoint is None:
            print_prompt(messages)
        else:
            try:
                reply = complete(messages, **endpoint)
            except (urllib.error.URLError, OSError, KeyError, ValueError) as e:  # keep the question anyway
                print(f"(no reply: {e})", file=sys.stderr)
            else:
                print(f"assistant> {reply}")
                turn.append({"role": "assistant", "content": reply})
        remember(db, turn, namespace=namespace, session=session)
    return n


def endpoint_from_env() -> dict[str, Any] | None:
    """The chat endpoint the environment names, or None (offline) when it names none."""
    key, base = os.environ.get("OPENAI_API_KEY"), os.environ.get("OPENAI_BASE_URL")
    if not key and not base:
        return None
    return {"base_url": base or DEFAULT_BASE_URL, "api_key": key,
            "model": os.environ.get("OPENAI_MODEL", "gpt-4o-mini")}


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, open the store and chat until the input ends."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", default="chat-memory", help="store folder (made on first use; default ./chat-memory)")
    ap.add_argument("--namespace", default="default", help="whose memory: one namespace per user or agent")
    ap.add_argument("--session", default="chat", help="session id: the turns of one conversation")
    ap.add_argument("--max-tokens", type=int, default=1000, help="the memory block's token budget (>= 50)")
    ap.add_argument("--script", type=Path, help="read the user's messages from this file, one a line")
    args = ap.parse_args(argv)
    with engramdb.open(args.path) as db:
        chat(db, questions(args.script), namespace=args.namespace, session=args.session,
             max_tokens=args.max_tokens, endpoint=endpoint_from_env())
    return 0


if __name__ == "__main__":
    sys.exit(main())
