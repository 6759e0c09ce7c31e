"""Full-text search of message text, titles and sources (docs/decisions.md, "Search").

What is searchable of a message is its **text** (``text_of``): string content, text
parts and the text inside structured parts (a tool result's blocks, say), and for an
assistant turn the name and arguments of each tool call. Ids, types, images and
signatures are not text. A message's first ``INDEXED_CHARS`` characters are indexed.

The index, one row per message that has text, keyed by the message's id:

- **PostgreSQL**: ``buffers_messagesearch`` (``MessageSearch``), a stripped ``tsvector``
  with a GIN index, the conversation's id (btree) so a search inside one conversation
  reads only its rows, and the message's block (migration 0010), so that such a search
  counts its hits per block and reads message rows of a few blocks only
  (``hits._weighed_hits``). Titles and sources: a GIN index on the conversation's
  ``search_words`` read as a ``tsvector``.
- **SQLite**: an FTS5 table of the same name (rowid = message id, with the conversation's
  id as an indexed column), and ``buffers_conversationsearch`` for titles and sources,
  kept by triggers from the conversation's ``search_words``.

Text becomes words here, the same way for both backends: runs of letters, digits and
combining marks, composed (NFC) and lowercased, each once (``words_of``); the index holds
those words, not the text, so that no database tokenizer (PostgreSQL's reads
``/usr/bin/python`` as one path, and costs more than the rest of an import) decides what
matches. The service writes the index in
the same transaction as every write to a buffer (``index_messages``,
``reindex_messages``); a message's row goes with it when it is deleted (a trigger).
A title's and source's words are made the same way, by ``Conversation.save()``.

A query is words: each must be in the message (or in the title and source); a word of
two characters or more matches the words it begins ("weath" finds "weather"). Anything
that is not a letter or a digit only separates words, so no query can be malformed.

The modules: ``words`` (what is text, and a query's words), ``listing`` (the list's
search), ``hits`` (search inside a conversation), ``index`` (writing the index).
"""

from __future__ import annotations

from .hits import (
    SNIPPET_CHARS,
    Found,
    Hit,
    Snippet,
    found_at,
    hit_indexes,
    hits_page,
    snippet,
    step,
)
from .index import (
    forget_messages,
    index_messages,
    index_stored,
    index_words,
    messages_words,
    rebuild,
    reindex_messages,
)
from .listing import PG_CONVERSATION_DOCUMENT, Matching, first_hits, matching_conversations
from .words import (
    INDEXED_CHARS,
    MAX_QUERY,
    MAX_TERMS,
    MAX_WORD,
    clean,
    message_text,
    terms,
    text_of,
    words_of,
)

__all__ = [
    "INDEXED_CHARS",
    "MAX_QUERY",
    "MAX_TERMS",
    "MAX_WORD",
    "PG_CONVERSATION_DOCUMENT",
    "SNIPPET_CHARS",
    "Found",
    "Hit",
    "Matching",
    "Snippet",
    "clean",
    "first_hits",
    "forget_messages",
    "found_at",
    "hit_indexes",
    "hits_page",
    "index_messages",
    "index_stored",
    "index_words",
    "matching_conversations",
    "message_text",
    "messages_words",
    "rebuild",
    "reindex_messages",
    "snippet",
    "step",
    "terms",
    "text_of",
    "words_of",
]
