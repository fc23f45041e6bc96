"""Checks for notebook 09, byte-pair encoding.

Oracles: hand cases whose answers are known (``aaa`` holds the pair (a, a) twice and merges into [X, a]); pair
counts recounted by a plain loop over positions; every learned merge recounted at its own step by that loop; the
Hugging Face ``tokenizers`` library's BPE model, built from the same merges, for encoding; Python's own UTF-8 codec
(``str.encode``, ``bytes.decode`` with ``errors="replace"``) for the bytes.

The plain loops below answer exercises of this notebook, so they are marked ``@oracle``: a student release holds
their recorded results, not their code (``recordings.py``). Their keyword-only argument names the variant (often a
mistake) to reproduce.
"""

import collections
import copy
import itertools
import random
from collections.abc import Callable

from tokenizers import Tokenizer, models

from . import CheckFailed, call_learner, earlier_exercises_replaced, learner_facing, passed
from .recordings import oracle

FIRST_NEW_ID = 256  # merge i creates id 256 + i: ids 0 … 255 are the bytes
# Pieces of the checks' random texts: 1- to 4-byte characters, a combining accent, runs of one letter, common words.
PIECES = ("a", "a", "b", "ab", " ", " ", "the ", "ing", "é", "€", "🙂", "漢字", "e\u0301", "aaaa", "\n")


@oracle
def pair_counts(ids: list[int], *, overlapping: bool) -> dict[tuple[int, int], int]:
    """Each adjacent pair and its count, in the order of first occurrence, by a loop over positions.

    overlapping=False reproduces a mistake: an occurrence that overlaps the one counted just before it (the second
    (a, a) in aaa) is skipped.
    """
    if overlapping:  # every position counts: one pass in C, keys in the order they first arrive
        return dict(collections.Counter(itertools.pairwise(ids)))
    counts, last_counted = collections.Counter(), {}  # a Counter keeps its keys in the order they arrive
    for position in range(len(ids) - 1):
        pair = (ids[position], ids[position + 1])
        if last_counted.get(pair, -2) < position - 1:
            counts[pair] += 1
            last_counted[pair] = position
    return dict(counts)


@oracle
def _merged(
    ids: list[int],
    pair: tuple[int, int],
    *,
    new_id: int,
    scanned_from: str = "left",
    step_after: int = 2,
    matching: str = "pair",
) -> list[int]:
    """ids with each occurrence of pair, found from the left without overlaps, replaced by new_id.

    scanned_from="right" reproduces a mistake: the occurrences are found from the right, so that in a run the id
    left over is the first one, [a, a, a] becoming [a, X]. step_after=1 reproduces another: after a replacement
    the scan moves on by one id, so the pair's second id is kept as well, [a, b] becoming [X, b].
    scanned_from="text" reproduces a third: the ids are written as text, numbers between spaces, and the pair's
    text replaced by new_id's, so that digits of two ids can be joined, [11, 2] with (1, 2) becoming [1X].
    matching="first id" reproduces a fourth: wherever pair's first id is followed by any id, both are replaced.
    matching="overlapping" a fifth: every position where pair starts becomes new_id, overlapping occurrences
    included, and an id that only ends an occurrence is dropped, [a, a, a] becoming [X, X]."""
    if matching == "overlapping":
        starts = [tuple(ids[position : position + 2]) == pair for position in range(len(ids))]
        return [
            new_id if starts[position] else ids[position]
            for position in range(len(ids))
            if starts[position] or not (position > 0 and starts[position - 1])
        ]
    if scanned_from == "text":
        written = " ".join(map(str, ids)).replace(f"{pair[0]} {pair[1]}", str(new_id))
        return [int(number) for number in written.split()]
    if scanned_from == "right":
        return _merged(ids[::-1], pair[::-1], new_id=new_id)[::-1]
    out, position, last = [], 0, len(ids) - 1
    if matching == "pair" and step_after == 2:  # the right merge, which BPE's oracles run thousands of times
        first, second = pair
        while position <= last:
            if ids[position] == first and position < last and ids[position + 1] == second:
                out.append(new_id)
                position += 2
            else:
                out.append(ids[position])
                position += 1
        return out
    while position < len(ids):
        found = ids[position : position + 2]
        if tuple(found) == pair or (matching == "first id" and len(found) == 2 and found[0] == pair[0]):
            out.append(new_id)
            position += step_after
        else:
            out.append(ids[position])
            position += 1
    return out


def _most_frequent(counts: dict[tuple[int, int], int]) -> tuple[int, int]:
    """The most frequent pair; among equally frequent ones, the first inserted (counts are in sequence order):
    ``max`` keeps the first of equal maxima."""
    return max(counts, key=counts.__getitem__)


@oracle
def bpe_merges(text: str, num_merges: int, *, units: str, new_ids: str = "counting") -> list[tuple[int, int]]:
    """The merges BPE learns from text, merge i creating id 256 + i. units="bytes" starts from the UTF-8 bytes;
    units="characters" reproduces a mistake, starting from the characters' code points. new_ids reproduces two
    more: "constant" (every merge creates id 256) and "unused" (the merged sequence is thrown away, so the same
    pair comes back at every step)."""
    ids = list(text.encode("utf-8")) if units == "bytes" else [ord(character) for character in text]
    merges = []
    while len(merges) < num_merges and len(ids) > 1:
        pair = _most_frequent(pair_counts(ids, overlapping=True))
        merged = _merged(ids, pair, new_id=FIRST_NEW_ID + (len(merges) if new_ids == "counting" else 0))
        ids = ids if new_ids == "unused" else merged
        merges.append(pair)
    return merges


@oracle
def bpe_encoded(text: str, merges: list[tuple[int, int]], *, order: str, units: str = "bytes") -> list[int]:
    """text's ids: its UTF-8 bytes, then each merge applied once over the whole sequence, in the given order:
    "learned" (right), "reversed", "by count" (the pair most frequent in this text first) or "highest rank first"
    (the pair present learned last, again and again): mistakes. More mistakes: "present at the start" applies in
    learned order only the merges whose pair occurs in the bytes themselves; "single pass" replaces, in one scan from
    the left, every pair that is a learned merge; "longest match" applies no merge at all but takes, from left to
    right, the longest token whose bytes start there (of tokens with the same bytes, the one learned first).
    "restarting" applies each merge to the text's bytes, not to the result of the merge before, so that only the
    last merge is kept; "stopping at an absent pair" applies them in learned order but stops at the first merge whose
    pair does not occur in the sequence at its turn; "word by word" encodes each part of the text between spaces on
    its own and joins them with a space's byte, so that no token holds a space and its neighbour; "unknown pairs
    ranked 0" merges again and again the lowest-ranked pair present, giving a pair that is no merge the rank 0, and
    stops as soon as such a pair comes first (it ties with merge 0 and occurs first). units="characters"
    starts from the code points instead."""
    if order == "word by word":
        words = [bpe_encoded(word, merges, order="learned", units=units) for word in text.split(" ")]
        return [*itertools.chain.from_iterable(word + [ord(" ")] for word in words)][:-1]
    ids = list(text.encode("utf-8")) if units == "bytes" else [ord(character) for character in text]
    ranked = list(enumerate(merges))
    if order == "restarting":
        return _merged(ids, merges[-1], new_id=FIRST_NEW_ID + len(merges) - 1) if merges else ids
    if order == "stopping at an absent pair":
        for rank, pair in ranked:
            if pair not in pair_counts(ids, overlapping=True):
                break
            ids = _merged(ids, pair, new_id=FIRST_NEW_ID + rank)
        return ids
    if order == "present at the start":
        present = pair_counts(ids, overlapping=True)
        ranked = [(rank, pair) for rank, pair in ranked if pair in present]
    if order == "single pass":
        rank_of = {pair: rank for rank, pair in reversed(ranked)}  # of repeated merges, the first learned
        out, position = [], 0
        while position < len(ids):
            pair = tuple(ids[position : position + 2])
            if pair in rank_of:
                out.append(FIRST_NEW_ID + rank_of[pair])
                position += 2
            else:
                out.append(ids[position])
                position += 1
        return out
    if order == "longest match":
        table = token_bytes(merges)
        id_of = {}
        for token_id, data in enumerate(table):
            id_of.setdefault(data, token_id)
        longest = max(map(len, table))
        data, found, start = text.encode("utf-8"), [], 0
        while start < len(data):
            size = next(size for size in range(longest, 0, -1) if data[start : start + size] in id_of)
            found.append(id_of[data[start : start + size]])
            start += size
        return found
    if order == "unknown pairs ranked 0":
        rank_of = {pair: rank for rank, pair in ranked}
        while len(ids) >= 2:
            pair = min(pair_counts(ids, overlapping=True), key=lambda pair: rank_of.get(pair, 0))
            if pair not in rank_of:
                return ids
            ids = _merged(ids, pair, new_id=FIRST_NEW_ID + rank_of[pair])
        return ids
    if order in ("by count", "highest rank first"):
        rank_of = {pair: rank for rank, pair in ranked}
        while known := {pair: n for pair, n in pair_counts(ids, overlapping=True).items() if pair in rank_of}:
            pair = _most_frequent(known) if order == "by count" else max(known, key=rank_of.get)
            ids = _merged(ids, pair, new_id=FIRST_NEW_ID + rank_of[pair])
        return ids
    for rank, pair in reversed(ranked) if order == "reversed" else ranked:
        ids = _merged(ids, pair, new_id=FIRST_NEW_ID + rank)
    return ids


@oracle
def bpe_encoded_by_prefix(text: str, merges: list[tuple[int, int]]) -> list[list[int]]:
    """text's ids with only the first k merges applied, in learned order, for every k from 0 to len(merges): the
    mistake of a loop over the merges that ends early (a return inside it, a range one short)."""
    ids = list(text.encode("utf-8"))
    found = [ids]
    for rank, pair in enumerate(merges):
        ids = _merged(ids, pair, new_id=FIRST_NEW_ID + rank)
        found.append(ids)
    return found


@oracle
def token_bytes(merges: list[tuple[int, int]]) -> list[bytes]:
    """The bytes of every id: 256 single bytes, then each merged token as the bytes of its pair."""
    table = [bytes([byte]) for byte in range(256)]
    for left, right in merges:
        table.append(table[left] + table[right])
    return table


def as_characters(data: bytes) -> str:
    """One printable character per byte, chr(0x100 + b): none is whitespace, and none is changed by tokenizers."""
    return "".join(chr(0x100 + byte) for byte in data)


def huggingface_bpe(merges: list[tuple[int, int]]) -> Tokenizer:
    """The tokenizers library's BPE model with these merges and nothing around it (no normalizer, no
    pre-tokenizer). Its vocabulary maps each token's characters (as_characters of its bytes) to its id.

    Raises ValueError if two merges make the same bytes (BPE can learn "ab" + "c" and "a" + "bc"): one vocabulary
    entry cannot stand for two ids.
    """
    strings = [as_characters(data) for data in token_bytes(merges)]
    vocabulary = {string: token_id for token_id, string in enumerate(strings)}
    if len(vocabulary) < len(strings):
        raise ValueError("two merges make the same bytes")
    pairs = [(strings[first], strings[second]) for first, second in merges]
    return Tokenizer(models.BPE(vocabulary, pairs))


def huggingface_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    """The ids that the tokenizers library's BPE model gives text, read as UTF-8 bytes."""
    return tokenizer.encode(as_characters(text.encode())).ids


def without_repeated_tokens(merges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The merges before the first one that makes bytes an earlier token already has."""
    seen = set(token_bytes([]))
    table = token_bytes(merges)
    for rank in range(len(merges)):
        if table[FIRST_NEW_ID + rank] in seen:
            return merges[:rank]
        seen.add(table[FIRST_NEW_ID + rank])
    return merges


def random_text(rng: random.Random, pieces: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(pieces))


def _call(function: Callable, *args, call: str):
    """call_learner, and fail if the learner's function changed a list it was given."""
    before = copy.deepcopy(args)
    result = call_learner(function, *args, call=call)
    if args != before:
        raise CheckFailed(
            f"{call} changed its input list in place; build a new list and leave the caller's as it was (the "
            "same list is used again after the call)."
        )
    return result


def _shown(value, limit: int = 60) -> str:
    """A value as it reads in a message, shortened when long."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 5]} …{text[-4:]} (length {len(value)})"


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _first_difference(got: list, expected: list) -> str:
    for position, (mine, theirs) in enumerate(zip(got, expected, strict=False)):
        if mine != theirs:
            return f"first difference at position {position}: expected {theirs}, got {mine}"
    return f"expected {len(expected)} ids, got {len(got)}"


def _expect_ids(result, call: str) -> list[int]:
    if not isinstance(result, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in result):
        raise CheckFailed(f"{call} must return a list of ints, got {_shown(result)}.")
    return result


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_count_pairs(count_pairs: Callable, seed: int = 0) -> None:
    """Check hand cases (runs of one id, pairs at the ends, empty and one-element lists), then random lists against
    a recount by a loop over positions; the dict must list pairs in the order of their first occurrence."""
    a, b, c = 7, 300, 42
    cases = [[], [a], [a, b], [a, a, a], [a, a, a, a], [a, b, c, a, b], [b, a, a, b]]
    rng = random.Random(seed)
    cases += [[rng.choice((a, b, c, 0, 255)) for _ in range(rng.randint(2, 40))] for _ in range(20)]
    answered = []  # (counts, expected, ids, call) of every case
    for ids in cases:
        call = f"count_pairs({_shown(ids)})"
        try:
            counts = _call(count_pairs, ids, call=call)
        except CheckFailed as failure:
            if isinstance(failure.__cause__, IndexError) and len(ids) > 0:
                raise CheckFailed(
                    f"{failure}\nA pair starts only at positions 0 … len(ids) - 2: the last id has no next id, so no "
                    "pair starts there."
                ) from failure.__cause__
            raise
        if not isinstance(counts, dict):
            raise CheckFailed(f"{call} must return a dict {{(a, b): count}}, got {type(counts).__name__}.")
        counts = {pair: count for pair, count in counts.items() if count != 0}
        if not all(isinstance(pair, tuple) and len(pair) == 2 for pair in counts):
            raise CheckFailed(f"{call}: every key must be a tuple (a, b) of two ids, got {_shown(list(counts))}.")
        answered.append((counts, pair_counts(ids, overlapping=True), ids, call))
    wrong = [case for case in answered if case[0] != case[1]]
    if wrong:
        _name_count_mistake(answered)
        _diagnose_counts(*wrong[0])
    for counts, expected, _ids, call in answered:  # the counts are right everywhere: now their order
        if list(counts) != list(expected):
            raise CheckFailed(
                f"{call}: the counts are right but the pairs are not in the order of their first occurrence "
                f"({list(expected)}). Insert each pair when you first meet it, scanning from the left: "
                "train_bpe's tie-break relies on that order."
            )
    passed("count_pairs", "every adjacent pair counted at every position, overlapping occurrences included")


def _count_mistakes(expected: dict, ids: list[int]) -> dict[str, dict]:
    """What each known mistake gives on ids, by name."""
    return {
        "overlaps": pair_counts(ids, overlapping=False),
        "last": pair_counts(ids[:-1], overlapping=True),
        "first": pair_counts(ids[1:], overlapping=True),
        "same ids": {pair: count for pair, count in expected.items() if pair[0] != pair[1]},
        "reversed": {(second, first): count for (first, second), count in expected.items()},
        "any two": dict(collections.Counter(itertools.combinations(ids, 2))),
    }


def _name_count_mistake(answered: list[tuple[dict, dict, list[int], str]]) -> None:
    """Fail naming the mistake if exactly one known mistake gives the learner's counts on every case; return
    otherwise. The message quotes the first wrong case that no other known mistake explains as well (with two ids,
    leaving out the first pair or the last one gives the same dict)."""
    mistakes = [(case, _count_mistakes(case[1], case[2])) for case in answered]
    matching = [name for name in mistakes[0][1] if all(case[0] == theirs[name] for case, theirs in mistakes)]
    if len(matching) != 1:
        return
    (mistake,) = matching
    wrong = [(case, theirs) for case, theirs in mistakes if case[0] != case[1]]
    telling = [case for case, theirs in wrong if [name for name in theirs if theirs[name] == case[0]] == matching]
    counts, expected, ids, call = (telling or [wrong[0][0]])[0]
    if mistake == "overlaps":
        raise CheckFailed(
            f"{call} gave {counts}: you counted overlapping occurrences once. Count the pair at every position: "
            f"[a, a, a] holds (a, a) twice, at positions 0 and 1 (expected {expected})."
        )
    if mistake in ("last", "first"):
        pair, start = (ids[-2:], len(ids) - 2) if mistake == "last" else (ids[:2], 0)
        raise CheckFailed(
            f"{call} gave {counts}: the {mistake} pair {tuple(pair)}, at position {start}, was not counted; pairs "
            f"start at every position 0 … len(ids) - 2 (expected {expected})."
        )
    if mistake == "same ids":
        pair = next(pair for pair in expected if pair[0] == pair[1])
        raise CheckFailed(
            f"{call} gave {counts}: a pair of a token with itself, such as {pair}, was not counted. It is a pair like "
            f"any other: [a, a, a] holds (a, a) twice, and BPE often merges such pairs (expected {expected})."
        )
    if mistake == "reversed":
        raise CheckFailed(
            f"{call} gave {counts}: every pair is reversed, (ids[i + 1], ids[i]). A pair is written in the order of "
            f"the text, the id on the left first (expected {expected})."
        )
    raise CheckFailed(
        f"{call} gave {counts}: you counted every two ids of the list, neighbours or not. Count only adjacent "
        f"pairs, an id with the one right after it (expected {expected})."
    )


def _diagnose_counts(counts: dict, expected: dict, ids: list[int], call: str) -> None:
    if len(ids) == 2 and not counts:
        raise CheckFailed(
            f"{call} gave {{}}: the only pair {tuple(ids)} is missing; a list of n ids holds n - 1 pairs, starting "
            "at every position 0 … len(ids) - 2."
        )
    wrong = next(pair for pair in (*expected, *counts) if counts.get(pair, 0) != expected.get(pair, 0))
    raise CheckFailed(
        f"{call}: the pair {wrong} occurs {expected.get(wrong, 0)} time(s), your dict says {counts.get(wrong, 0)} "
        f"(expected {expected})."
    )


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_merge(merge: Callable, seed: int = 0) -> None:
    """Check hand cases (runs, pairs at both ends, an absent pair, empty and one-element lists), then random lists
    against the definition: occurrences found from the left, without overlaps. Some lists hold ids whose digits run
    into each other's (11 and 2 hold "1 2" when written as text; ids of one to three digits drawn with the seed), so
    that ids must be compared as numbers."""
    a, b, c, new = 7, 300, 42, 512
    cases = [
        ([a, b], (a, b)),
        ([a, a, a], (a, a)),
        ([a, a, a, a], (a, a)),
        ([a, b, c, a, b], (a, b)),
        ([c, a, b], (a, b)),
        ([a, c, b], (a, b)),
        ([b, a], (a, b)),
        ([], (a, b)),
        ([a], (a, b)),
    ]
    rng = random.Random(seed)
    for _ in range(20):
        ids = [rng.choice((a, b, c)) for _ in range(rng.randint(2, 30))]
        cases.append((ids, rng.choice(list(pair_counts(ids, overlapping=True)) + [(c, c)])))
    # Ids whose digits run into each other's: read as text, "11 2" holds "1 2".
    cases.append(([11, 2, 1, 21, 1, 2], (1, 2)))
    for _ in range(10):
        ids = [rng.choice((1, 2, 11, 12, 21)) for _ in range(rng.randint(2, 20))]
        cases.append((ids, rng.choice([(1, 2), (2, 1), (1, 1), (2, 2)])))
    # Ids of one to three digits, drawn with the seed: among them ids whose digits end in those of the pair's first id
    # or start with those of its second (read as text, "112 3" holds "12 3"), and one such pair of neighbours.
    for _ in range(6):
        first, second = rng.randint(1, 99), rng.randint(1, 49)
        ending, starting = int(f"{rng.randint(1, 3)}{first}"), int(f"{second}{rng.randint(0, 9)}")
        pool = (first, second, ending, starting, rng.randint(1, 255))
        ids = [rng.choice(pool) for _ in range(rng.randint(3, 16))]
        cut = rng.randint(0, len(ids))
        cases.append((ids[:cut] + [ending, second] + ids[cut:], (first, second)))
    answered = []  # (result, expected, ids, pair, call) of every case
    for ids, pair in cases:
        call = f"merge({_shown(ids)}, {pair}, {new})"
        try:
            result = _call(merge, ids, pair, new, call=call)
        except CheckFailed as failure:
            if isinstance(failure.__cause__, IndexError) and len(ids) > 0:
                raise CheckFailed(
                    f"{failure}\nA pair starts only at positions 0 … len(ids) - 2: at the last id there is no next "
                    "id to read, so that id is copied as it is."
                ) from failure.__cause__
            raise
        answered.append((_expect_ids(result, call), _merged(ids, pair, new_id=new), ids, pair, call))
    wrong = [case for case in answered if case[0] != case[1]]
    if wrong:
        _name_merge_mistake(answered, new)
        _diagnose_merge(*wrong[0][:4], new, wrong[0][4])
    passed("merge", "each occurrence replaced, from the left, without overlaps; the list given stays as it was")


def _merge_mistakes(expected: list[int], ids: list[int], pair: tuple, new: int) -> dict[str, list[int]]:
    """What each known mistake gives on this case, by name."""
    return {
        "text": _merged(ids, pair, new_id=new, scanned_from="text"),
        "unchanged": list(ids),
        "reversed": _merged(ids, pair[::-1], new_id=new),
        "first id": _merged(ids, pair, new_id=new, matching="first id"),
        "right": _merged(ids, pair, new_id=new, scanned_from="right"),
        "overlapping": _merged(ids, pair, new_id=new, matching="overlapping"),
        # The loop stops before the last position, so a last id that no pair used up is never copied.
        "last dropped": expected if expected[-1:] == [new] else expected[:-1],
        "step one": _merged(ids, pair, new_id=new, step_after=1),
    }


def _name_merge_mistake(answered: list[tuple], new: int) -> None:
    """Fail naming the mistake if exactly one known mistake gives the learner's result on every case; return
    otherwise. The message quotes the first wrong case that no other known mistake explains as well."""
    mistakes = [(case, _merge_mistakes(case[1], case[2], case[3], new)) for case in answered]
    matching = [name for name in mistakes[0][1] if all(case[0] == theirs[name] for case, theirs in mistakes)]
    if len(matching) != 1:
        return
    (mistake,) = matching
    wrong = [(case, theirs) for case, theirs in mistakes if case[0] != case[1]]
    telling = [case for case, theirs in wrong if [name for name in theirs if theirs[name] == case[0]] == matching]
    result, expected, ids, pair, call = (telling or [wrong[0][0]])[0]
    gave, expected_text = f"{call} gave {_shown(result)}", f"expected {_shown(expected)}"
    if mistake == "text":
        _joined_digits(result, expected, ids, new, call)
    if mistake == "unchanged":
        raise CheckFailed(
            f"{call} gave the list unchanged, though {pair} occurs in it, and so did every call: no occurrence was "
            "ever replaced, so your comparison of the ids at a position with the pair is never true. Compare like "
            f"with like: a list never equals a tuple, [1, 2] == (1, 2) is False ({expected_text})."
        )
    if mistake == "reversed":
        raise CheckFailed(
            f"{gave}: you compared the pair reversed, (ids[i + 1], ids[i]), so {pair[::-1]} was replaced instead of "
            f"{pair}. The pair's first id is the one on the left ({expected_text})."
        )
    if mistake == "first id":
        raise CheckFailed(
            f"{gave}: you replaced where only the first id matched. An occurrence of {pair} is {pair[0]} followed by "
            f"{pair[1]}: compare both ids ({expected_text})."
        )
    if mistake == "right":
        raise CheckFailed(
            f"{gave}: you found the occurrences scanning from the right. Where occurrences overlap, in a run such as "
            f"[a, a, a], the one found first from the left is replaced: [X, a], not [a, X] ({expected_text}). Scan "
            "from the start of the list."
        )
    if mistake == "overlapping":
        raise CheckFailed(
            f"{gave}: you merged overlapping occurrences. Once a pair is replaced, both its ids are used up: "
            f"[a, a, a] becomes [X, a], not [X, X] ({expected_text})."
        )
    if mistake == "last dropped":
        raise CheckFailed(f"{gave}: the last id was dropped ({expected_text}).")
    raise CheckFailed(
        f"{gave}: after a replacement you moved on by one id, so the pair's second id stayed in the list. The new "
        f"id stands for both ids: after a replacement, skip both ({expected_text})."
    )


def _joined_digits(result: list[int], expected: list[int], ids: list[int], new: int, call: str) -> None:
    """Fail naming ids compared as text: the pair's digits found across two ids, which joins theirs."""
    strange = [i for i in result if i != new and i not in ids]  # ids that come from nowhere
    raise CheckFailed(
        f"{call} gave {_shown(result)}: "
        + (f"the id {strange[0]} is neither an id of the list nor {new}. " if strange else "")
        + "The digits of an id were joined with a "
        f'neighbour\'s: written as text, "11 2" holds "1 2". Compare the ids as numbers, position by position '
        f"(expected {_shown(expected)})."
    )


def _diagnose_merge(result: list[int], expected: list[int], ids: list[int], pair: tuple, new: int, call: str) -> None:
    """What this case shows, where no known mistake explains every case."""
    if result == _merged(ids, pair, new_id=new, scanned_from="text"):
        _joined_digits(result, expected, ids, new, call)
    if result == ids and pair in pair_counts(ids, overlapping=True):
        raise CheckFailed(
            f"{call} gave the list unchanged, though {pair} occurs in it: no occurrence was replaced (expected "
            f"{_shown(expected)})."
        )
    if result.count(new) > expected.count(new):
        raise CheckFailed(
            f"{call} gave {_shown(result)}: {new} appears {_times(result.count(new))}, but {pair} occurs "
            f"{_times(expected.count(new))} when occurrences are found from the left without overlaps: ids that are "
            f"not such an occurrence were replaced (expected {_shown(expected)})."
        )
    if result.count(new) < expected.count(new):
        where = "at the end" if expected[-1] == new else "at the start" if expected[0] == new else "in the middle"
        raise CheckFailed(
            f"{call} gave {_shown(result)}: an occurrence {where} of the list was not replaced (expected "
            f"{_shown(expected)})."
        )
    raise CheckFailed(f"{call} gave {_shown(result)}, expected {_shown(expected)}.")


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_train_bpe(train_bpe: Callable, seed: int = 0) -> None:
    """Replay the learner's merges from the text's bytes: at every step the merge must be the most frequent pair,
    recounted by a loop over positions, with ties going to the pair that occurs first, and merge i creates
    256 + i. Uses correct count_pairs and merge, so that only train_bpe is graded."""
    rng = random.Random(seed)
    cases = [("", 3), ("a", 2), ("ab", 5), ("aaaa", 5), ("dc ab", 1), ("the cat, the hat", 4)]
    cases += [(random_text(rng, rng.randint(60, 120)), 30) for _ in range(3)]
    with earlier_exercises_replaced(train_bpe, "count_pairs", "merge"):
        for text, num_merges in cases:
            call = f"train_bpe({_shown(text)}, {num_merges})"
            expected = bpe_merges(text, num_merges, units="bytes")
            try:
                merges = _expect_merges(_call(train_bpe, text, num_merges, call=call), call)
            except CheckFailed as failure:
                if len(expected) < num_merges and failure.__cause__ is not None:  # a crash, where pairs run out
                    raise CheckFailed(
                        f"{failure}\nAfter {len(expected)} merges no pair is left: stop early when count_pairs "
                        "returns an empty dict."
                    ) from failure.__cause__
                raise
            if merges != expected:
                merges = copy.deepcopy(merges)  # a list kept between calls would change under the next one
                again = _expect_merges(_call(train_bpe, text, num_merges, call=call), call)
                if again != merges:
                    raise CheckFailed(
                        f"{call} returned {_shown(merges)}, then {_shown(again)} when called again with the same "
                        "text: your train_bpe keeps merges from earlier calls. A default value such as merges=[] is "
                        "made once, when the function is defined, and every call shares it (as it would share a "
                        "global list): create the list inside the function."
                    )
                _diagnose_training(merges, text, num_merges, call)
    passed("train_bpe", "every merge is the most frequent pair at its step (ties: first occurrence), ids from 256")


def _expect_merges(result, call: str) -> list[tuple[int, int]]:
    if not isinstance(result, list) or not all(
        isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(i, int) for i in pair) for pair in result
    ):
        raise CheckFailed(f"{call} must return a list of pairs (a, b), each a tuple of two ints; got {_shown(result)}.")
    return result


def _diagnose_training(merges: list[tuple[int, int]], text: str, num_merges: int, call: str) -> None:
    if merges == bpe_merges(text, num_merges, units="characters"):
        raise CheckFailed(
            f"{call}: you trained on characters (ord of each one). Start from the UTF-8 bytes, "
            "list(text.encode()): ids 0 … 255 are bytes, and a character such as 'é' is two of them."
        )
    if merges == bpe_merges(text, num_merges, units="bytes", new_ids="constant"):
        raise CheckFailed(
            f"{call} returned {_shown(merges)}: every merge created the same id, 256, so later merges joined tokens "
            "that stand for different bytes under one id. Merge i creates a new id of its own, 256 + i."
        )
    if len(merges) > 1 and merges == bpe_merges(text, num_merges, units="bytes", new_ids="unused"):
        raise CheckFailed(
            f"{call} returned {_shown(merges)}: the same pair at every step, because the sequence never changed. "
            "merge returns a new list: keep it (assign it back to your ids) and merge each chosen pair into the "
            "sequence before counting again."
        )
    first_counts = pair_counts(list(text.encode("utf-8")), overlapping=True)
    counted_once = sorted(first_counts, key=first_counts.get, reverse=True)[:num_merges]  # ties: first occurrence
    if merges == counted_once:
        raise CheckFailed(
            f"{call} returned {_shown(merges)}: the pairs of the text's bytes, the most frequent first, as if the "
            "pairs were counted once, before any merge. Each merge changes the counts (its pair is gone, and pairs "
            "that hold the new id appear): count the pairs again on the merged sequence before choosing the next."
        )
    expected = bpe_merges(text, num_merges, units="bytes")
    ids = list(text.encode("utf-8"))
    for step, best in enumerate(expected):
        counts = pair_counts(ids, overlapping=True)
        if step >= len(merges):
            returned = "1 merge, but after it" if len(merges) == 1 else f"{len(merges)} merges, but after them"
            raise CheckFailed(
                f"{call} returned {returned} the sequence still holds pairs ({best} occurs {_times(counts[best])}). "
                "Count the pairs again on the merged sequence after each merge, and stop before num_merges only "
                "when no pair is left."
            )
        _expect_step(merges[step], best, counts, ids, step, call, text=text)
        ids = _merged(ids, best, new_id=FIRST_NEW_ID + step)
    raise CheckFailed(
        f"{call} returned {len(merges)} merges; expected {len(expected)}: "
        + ("at most num_merges." if len(expected) == num_merges else "after those, no pair is left to merge.")
    )


def _expect_step(pair: tuple, best: tuple, counts: dict, ids: list[int], step: int, call: str, *, text: str) -> None:
    if pair == best:
        return
    applied = {0: "", 1: " (with merge 0 applied)"}.get(step, f" (with merges 0 … {step - 1} applied)")
    where = f"{call}, merge {step}{applied}"
    for offset, start in ((1, 255), (-1, 257)):
        if tuple(i + offset if i >= start else i for i in pair) == best:
            raise CheckFailed(
                f"{where}: you merged {pair}, the right pair with the wrong ids: new ids start at 256, merge i "
                f"creates id 256 + i (yours start at {start}); expected {best}."
            )
    if counts.get(pair) == counts[best]:
        raise CheckFailed(
            f"{where}: {pair} and {best} both occur {_times(counts[best])}, and {best} occurs first in the sequence. "
            "Break ties by first occurrence (not by the smallest pair, nor by the last occurrence): look up which of "
            "equal items max returns, and in which order a dict keeps its keys."
        )
    made = range(FIRST_NEW_ID, FIRST_NEW_ID + step)  # the ids that merges 0 … step - 1 created
    unknown = [i for i in pair if i not in ids and i not in text.encode("utf-8") and i not in made]
    if unknown:
        created = (
            f"merges 0 … {step - 1} created {made[0]} … {made[-1]}"
            if step > 1
            else ("merge 0 created 256" if step == 1 else "no merge has created an id yet")
        )
        raise CheckFailed(
            f"{where}: {pair} holds {unknown[0]}, which is neither in the sequence at that step nor made by a merge so "
            f"far ({created}); expected {best}. Merge i creates id 256 + i, whatever ids the sequence holds: did "
            "your merges create other ids?"
        )
    if pair not in counts:
        raise CheckFailed(
            f"{where}: {pair} does not occur in the sequence at that step; expected {best}, which occurs "
            f"{_times(counts[best])}. Merge each chosen pair into the sequence before counting again."
        )
    once = pair_counts(ids, overlapping=False)
    hint = (
        " Overlapping occurrences count too: (a, a) occurs twice in a, a, a."
        if once.get(pair) == max(once.values())
        else ""
    )
    raise CheckFailed(
        f"{where}: {pair} occurs {_times(counts[pair])}, but {best} occurs {_times(counts[best])}: merge the most "
        f"frequent pair.{hint}"
    )


# Exercise 4 ---------------------------------------------------------------------------------------------


@learner_facing
def check_encode(encode: Callable, seed: int = 0) -> None:
    """Compare with the tokenizers library's BPE model built from the same merges, on hand cases and random texts
    (emoji, combining accents, CJK, runs of one letter). Uses correct count_pairs and merge."""
    rng = random.Random(seed)
    runs = [(97, 97), (256, 97), (256, 256)]  # aa, aaa, aaaa
    ab_bc = [(97, 98), (98, 99)]  # "bc" is more frequent than "ab" in "abcbcbc", but learned later
    cases = [("", runs), ("héllo", []), ("aaaaa", runs[:2]), ("aaaaaaa", runs), ("ab", [(98, 97)]), ("abcbcbc", ab_bc)]
    # Where the ways of applying merges in another order give different ids, so that a message can tell them apart:
    # "c" + "bb" is merged only after "bb" exists; in "bcaaad" the pair met first is not always the first learned.
    cases += [("cbbb", [(98, 98), (99, 256), (99, 98)]), ("bcaaad", [(97, 100), (99, 97), (98, 257), (97, 97)])]
    for _ in range(3):
        merges = bpe_merges(random_text(rng, 100), 30, units="bytes")
        cases += [(random_text(rng, rng.randint(5, 80)), merges) for _ in range(4)]
        cases.append(("".join(rng.choice("abc ") for _ in range(rng.randint(10, 60))), merges))  # other frequencies
        cases += [("a" * rng.randint(2, 20), merges), (" the " * rng.randint(1, 5), merges)]
    with earlier_exercises_replaced(encode, "count_pairs", "merge"):
        oracles = {}  # one tokenizers model per list of merges
        answered = []  # (ids, expected, text, merges, call) of every case
        for text, merges in cases:
            call = f"encode({_shown(text)}, merges={_shown(merges)})"
            ids = _expect_ids(_call(encode, text, merges, call=call), call)
            oracle = oracles.setdefault(tuple(merges), _oracle(merges))
            answered.append((ids, _expected_encoding(text, merges, oracle=oracle), text, merges, call))
    wrong = [case for case in answered if case[0] != case[1]]
    if wrong:
        _name_encoding_mistake(answered)
        _diagnose_encoding(*wrong[0])
    passed("encode", "the same ids as the tokenizers library's BPE with the same merges")


def _oracle(merges: list[tuple[int, int]]) -> Tokenizer | None:
    """The tokenizers library's BPE model for these merges, or None where two merges make the same bytes (which
    it cannot represent)."""
    return huggingface_bpe(merges) if without_repeated_tokens(merges) == merges else None


def _expected_encoding(text: str, merges: list[tuple[int, int]], *, oracle: Tokenizer | None) -> list[int]:
    """The oracle's ids; without one, the plain encoding, which the tests show agrees with it everywhere else."""
    if oracle is not None:
        return huggingface_ids(oracle, text)
    return bpe_encoded(text, merges, order="learned")


# Mistakes in applying the merges: bpe_encoded's order, and what the message says of it.
ORDER_MISTAKES = {
    "reversed": "you applied the merges from the last learned to the first. A later merge joins tokens that earlier "
    "merges create, so apply them in learned order, lowest rank (id) first",
    "present at the start": "you applied only the merges whose pair occurs in the text's bytes before any merge. "
    "A merge whose pair appears only after earlier merges, such as (256, 97) once (a, a) became 256, was skipped: "
    "look for each merge's pair in the sequence as it is at that merge's turn",
    "single pass": "you replaced every learned pair in one scan from the left. A pair that an earlier merge "
    "creates appears only after that merge has run over the whole text: apply merge 0 over the whole text, then "
    "merge 1, and so on",
    "restarting": "each merge started again from the text's bytes, so only the last merge's work was kept. Apply "
    "each merge to the result of the merge before it",
    "stopping at an absent pair": "you stopped at the first merge whose pair is absent from the sequence, but a later "
    "merge can still apply: its pair may be made of bytes, or of tokens made earlier, that this text holds. Go "
    "through the whole list of merges",
    "by count": "your ids spell the right bytes, but the merges were applied in another order than the one in which "
    "they were learned, the pair most frequent in this text first. The order learned on the training text decides: "
    "apply merge 0 first, then merge 1, …, or repeatedly the lowest-ranked pair present",
    "highest rank first": "you merged again and again the pair present whose merge was learned last (the highest "
    "rank). A later merge joins tokens that earlier merges create: take the lowest-ranked pair present, the merge "
    "learned first, or apply merge 0 over the whole text, then merge 1, and so on",
    "unknown pairs ranked 0": "you gave a pair that is no merge the rank 0 (rank.get(pair, 0), say), the rank of "
    "the first merge: it ranks below every other merge, so the lowest-ranked pair present is often a pair that is no "
    "merge, and your loop stops there while learned merges are still present. A pair that is no merge "
    "must rank after every merge: give it the rank infinity (float('inf')), so that the loop stops only when no "
    "pair present is a merge",
    "word by word": "you encoded each word (each part between spaces) on its own, so that no token joins a space with "
    "its neighbours. This notebook's BPE runs over the whole text, spaces included, and its merges can join a space "
    "with a letter (GPT-2's tokenizer does split the text into words first, with a regular expression, but that is "
    "another tokenizer)",
}


def _encoding_mistakes(ids: list[int], text: str, merges: list) -> dict[str, bool]:
    """Which known mistakes give ids on this case, by name ("first k": only merges[:k] were applied)."""
    matching = {"characters": ids == bpe_encoded(text, merges, order="learned", units="characters")}
    matching |= {order: ids == bpe_encoded(text, merges, order=order) for order in ORDER_MISTAKES}
    matching["longest match"] = _is_longest_match(ids, text, merges)
    by_prefix = bpe_encoded_by_prefix(text, merges)
    matching["all but the last"] = ids == by_prefix[max(len(merges) - 1, 0)]
    matching |= {f"first {k}": ids == by_prefix[min(k, len(merges))] for k in range(MOST_MERGES + 1)}
    return matching


MOST_MERGES = 30  # the longest list of merges that check_encode gives


def _name_encoding_mistake(answered: list[tuple]) -> None:
    """Fail naming the mistake if exactly one known mistake gives the learner's ids on every case; return
    otherwise. The message quotes the first wrong case that no other known mistake explains as well."""
    mistakes = [(case, _encoding_mistakes(case[0], case[2], case[3])) for case in answered]
    matching = [name for name in mistakes[0][1] if all(theirs[name] for _case, theirs in mistakes)]
    if len(matching) != 1:
        return
    (mistake,) = matching
    wrong = [(case, theirs) for case, theirs in mistakes if case[0] != case[1]]
    telling = [case for case, theirs in wrong if [name for name in theirs if theirs[name]] == matching]
    ids, expected, text, merges, call = min(telling or [wrong[0][0]], key=lambda case: len(case[4]))  # the shortest
    difference = _first_difference(ids, expected)
    if mistake == "characters":
        raise CheckFailed(
            f"{call}: you started from the characters (ord of each one), not from the UTF-8 bytes. Start from "
            f"list(text.encode()): ids 0 … 255 are bytes ({difference})."
        )
    if mistake == "longest match":
        _diagnose_encoding(ids, expected, text, merges, call)  # which names it
    if mistake == "all but the last":
        raise CheckFailed(
            f"{call}: the last merge of the list was never applied, on this call and every other: the loop over the "
            f"merges stops one merge short. Apply every merge, the last one included ({difference})."
        )
    if mistake.startswith("first "):
        applied = int(mistake.removeprefix("first "))
        raise CheckFailed(
            f"{call}: you applied none of the merges: your ids are the text's bytes. Apply every merge of the list, "
            f"in learned order ({difference})."
            if applied == 0
            else f"{call}: only the first {f'{applied} merges were' if applied > 1 else 'merge was'} applied, on "
            "this call and every other, as if the loop over the merges ended there (a return inside the loop ends "
            f"it, and the function, at once). Apply every merge of the list, in learned order ({difference})."
        )
    raise CheckFailed(f"{call}: {ORDER_MISTAKES[mistake]} ({difference}).")


def _is_longest_match(ids: list[int], text: str, merges: list) -> bool:
    """Whether ids take the longest known token at each position (of tokens with the same bytes, any)."""
    table = token_bytes(merges)
    if not all(0 <= i < len(table) for i in ids) or b"".join(table[i] for i in ids) != text.encode():
        return False
    longest = bpe_encoded(text, merges, order="longest match")
    return [len(table[i]) for i in ids] == [len(table[i]) for i in longest]


def _diagnose_encoding(ids: list[int], expected: list[int], text: str, merges: list, call: str) -> None:
    table = token_bytes(merges)
    if all(0 <= i < len(table) for i in ids) and b"".join(table[i] for i in ids) == text.encode():
        if _is_longest_match(ids, text, merges):  # the same pieces, whichever id
            raise CheckFailed(
                f"{call}: your ids spell the right bytes, but you took the longest known token at each position "
                "(a greedy longest match). BPE does not choose tokens by their length: it applies the merges by rank, "
                "merge 0 over the whole text first, then merge 1, and so on, so a longer token learned later does not "
                f"take bytes that an earlier merge has already joined otherwise ({_first_difference(ids, expected)})."
            )
        raise CheckFailed(
            f"{call}: your ids spell the right bytes, but they are not BPE's encoding: the merges were not applied "
            "one after another, in learned order, each over the whole sequence. The order learned on the training "
            "text decides: apply merge 0 over the whole sequence first, then merge 1, …, or repeatedly the "
            f"lowest-ranked pair present ({_first_difference(ids, expected)})."
        )
    raise CheckFailed(
        f"{call}: your ids do not spell the text's UTF-8 bytes (merge i stands for the bytes of its pair and has id "
        f"256 + i); {_first_difference(ids, expected)}."
    )


# Exercise 5 ---------------------------------------------------------------------------------------------


@learner_facing
def check_decode(decode: Callable, seed: int = 0) -> None:
    """Check the bytes of every id, a character split across tokens, ids that end inside a character
    (errors="replace"), and decode(encode(s)) == s for random Unicode strings and the empty string."""
    rng = random.Random(seed)
    merges = bpe_merges(random_text(rng, 150) + "€🙂€🙂", 40, units="bytes")
    euro = list("€".encode())  # three bytes
    cases = [
        ([], "the empty list"),
        (list(b"caf\xc3\xa9"), "bytes only"),
        (euro, "the three bytes of '€', one token each"),
        (bpe_encoded("the 🙂 the é€", merges, order="learned"), "merged tokens"),
        (euro[:2], "a character cut short"),
        (euro[1:] + euro, "bytes that begin in the middle of a character"),
    ]
    for _ in range(6):
        text = random_text(rng, rng.randint(1, 40))
        cases.append((bpe_encoded(text, merges, order="learned"), "the ids of a random text"))
    for ids, what in cases:
        call = f"decode({_shown(ids)}, merges) ({what})"
        expected = b"".join(token_bytes(merges)[i] for i in ids).decode("utf-8", errors="replace")
        try:
            text = _call(decode, ids, merges, call=call)
        except CheckFailed as failure:
            _explain_decode_crash(failure, ids, merges, call)
            raise
        if not isinstance(text, str):
            raise CheckFailed(f"{call} must return a str, got {type(text).__name__}.")
        if text != expected:
            _diagnose_decoding(text, expected, ids, merges, call)
    passed("decode", "decode(encode(s)) == s for any Unicode text; bytes that end inside a character become '\ufffd'")


def _explain_decode_crash(failure: CheckFailed, ids: list[int], merges: list, call: str) -> None:
    if isinstance(failure.__cause__, UnicodeDecodeError):
        raise CheckFailed(
            f"{call} raised UnicodeDecodeError: these bytes end or start inside a character. Decode with "
            "errors=\"replace\", which writes '\ufffd' for them: a model can generate any ids, not only the ids of "
            "valid text."
        ) from failure.__cause__
    if isinstance(failure.__cause__, TypeError) and "'bytes' object cannot be interpreted" in str(failure.__cause__):
        raise CheckFailed(
            f"{failure}\nbytes(...) makes bytes from ints, one int per byte, not from byte strings such as a "
            'token\'s bytes. To join byte strings into one, look up bytes.join (b"".join joins them with nothing '
            "between)."
        ) from failure.__cause__
    table_crash = merges and isinstance(failure.__cause__, ValueError | KeyError | IndexError)
    if any(i >= FIRST_NEW_ID for i in ids) or table_crash:
        if isinstance(failure.__cause__, NotImplementedError | type(None)):
            return
        where = "With no ids to read, the crash came from the merges. " if not ids else ""
        raise CheckFailed(
            f"{failure}\n{where}Ids 256 and above are merged tokens: id 256 + i stands for the bytes of merges[i]'s "
            "two ids, joined, and those ids may be merged tokens too, made by earlier merges. Build the bytes of "
            "each merged token in the order of the merges, so that its two parts are known when it comes."
        ) from failure.__cause__


def _diagnose_decoding(text: str, expected: str, ids: list[int], merges: list, call: str) -> None:
    table = token_bytes(merges)
    joined = b"".join(table[i] for i in ids)
    # One U+FFFD per byte that is not part of a valid character (surrogateescape gives each such byte a code point
    # of its own, U+DC80 + byte, which no valid UTF-8 decodes to).
    per_byte = "".join("\ufffd" if "\udc80" <= c <= "\udcff" else c for c in joined.decode(errors="surrogateescape"))
    if text == per_byte:
        raise CheckFailed(
            f"{call} gave {_shown(text)}: you wrote one '\ufffd' for each byte that is not part of a valid character. "
            "UTF-8 decoding with errors=\"replace\" writes one '\ufffd' for a whole cut-short character (the first "
            "two bytes of '€' are one '\ufffd', not two), and one for each stray byte. Let bytes.decode do it: look "
            f"up its errors argument (expected {_shown(expected)})."
        )
    if text and set(text) == {"\ufffd"} and set(expected) - {"\ufffd"}:
        raise CheckFailed(
            f"{call} gave {_shown(text)}: only some of these bytes are not valid UTF-8, but the valid characters "
            "around them were lost too. Let bytes.decode replace only the bytes that are not part of a valid "
            f"character: look up its errors argument (expected {_shown(expected)})."
        )
    separately = "".join(table[i].decode("utf-8", errors="replace") for i in ids)
    if text == separately:
        raise CheckFailed(
            f"{call} gave {_shown(text)}: you decoded each token on its own, which breaks a character whose bytes "
            f"are split across tokens. Join all the bytes first, then decode once (expected {_shown(expected)})."
        )
    if text == joined.decode("utf-8", errors="ignore"):
        raise CheckFailed(
            f'{call} gave {_shown(text)}: you decoded with errors="ignore", which drops the bytes of a cut-short '
            "character without a trace. Use errors=\"replace\": it writes '\ufffd' in their place, so a reader "
            f"sees that something was there (expected {_shown(expected)})."
        )
    if text == joined.decode("latin-1"):
        raise CheckFailed(
            f"{call} gave {_shown(text)}: you decoded the bytes as Latin-1, one character per byte. The bytes are "
            f"UTF-8, where a character such as 'é' is two bytes: decode them as UTF-8 (expected {_shown(expected)})."
        )
    if text == str(joined):
        raise CheckFailed(
            f"{call} gave {_shown(text)}: str() of bytes gives the way they are written in code, b'…', not the text "
            f"they encode. Decode the bytes as UTF-8 (expected {_shown(expected)})."
        )
    dropped = b"".join(table[i] for i in ids if i < FIRST_NEW_ID).decode("utf-8", errors="replace")
    if text == dropped:
        raise CheckFailed(
            f"{call} gave {_shown(text)}: the merged ids (256 and above) were left out; id 256 + i stands for the "
            f"bytes of merges[i]'s two ids (expected {_shown(expected)})."
        )
    if text == joined.decode("utf-8", errors="backslashreplace"):
        raise CheckFailed(
            f'{call} gave {_shown(text)}: you decoded with errors="backslashreplace", which writes the bytes that are '
            "not part of a valid character as escapes (\\xe2). Use errors=\"replace\": it writes one '\ufffd' for "
            f"them, the character that text uses for something that could not be read (expected {_shown(expected)})."
        )
    swapped = token_bytes([(second, first) for first, second in merges])
    if text == b"".join(swapped[i] for i in ids).decode("utf-8", errors="replace"):
        raise CheckFailed(
            f"{call} gave {_shown(text)}: the two parts of a merged token were joined in the wrong order. Id 256 + i "
            f"is the bytes of merges[i]'s first id, then those of its second (expected {_shown(expected)})."
        )
    for separator in (b" ", b",", b", ", b"\n", b"|"):
        if text == separator.join(table[i] for i in ids).decode("utf-8", errors="replace"):
            raise CheckFailed(
                f"{call} gave {_shown(text)}: you joined the tokens' bytes with {separator!r} between them. The tokens "
                f"are pieces of one text: join their bytes with nothing between (expected {_shown(expected)})."
            )
    one_level = [
        table[i] if i < FIRST_NEW_ID or max(merges[i - FIRST_NEW_ID]) < FIRST_NEW_ID else b""
        for i in ids
        if i < len(table)
    ]
    if text == b"".join(one_level).decode("utf-8", errors="replace"):
        raise CheckFailed(
            f"{call} gave {_shown(text)}: a merged token whose parts are merged tokens too was left out. Id 256 + i "
            "stands for all the bytes of merges[i]'s two ids, which may be merged ids themselves: build the bytes of "
            "each merged token in the order of the merges, so that its two parts are known when it comes "
            f"(expected {_shown(expected)})."
        )
    raise CheckFailed(f"{call} gave {_shown(text)}, expected {_shown(expected)}.")
