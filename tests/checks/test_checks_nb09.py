"""The checks of notebook 09 accept correct answers written in other ways, explain stubs, and rest on an oracle that
agrees with a plain implementation.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py.)
"""

import collections
import random

import pytest

from tests.check_probes import calls_of, hidden_seeds
from tests.stubs import raise_not_implemented
from transformer_course.checks import CheckFailed, NotImplementedYet, nb09, stand_ins

ASSIGNMENT = "09_tokenization"


def count_pairs_with_counter(ids):
    return collections.Counter(zip(ids, ids[1:], strict=False))


def merge_with_a_flag(ids, pair, new_id):
    merged, skip = [], False
    for i, current in enumerate(ids):
        if skip:
            skip = False
        elif i + 1 < len(ids) and current == pair[0] and ids[i + 1] == pair[1]:
            merged.append(new_id)
            skip = True
        else:
            merged.append(current)
    return merged


def train_bpe_with_a_dict_of_merges(text, num_merges):
    """minbpe's style: merges kept as {pair: new id}; a dict keeps the order in which they were learned."""
    ids = list(bytearray(text, "utf-8"))
    merges = {}
    while len(merges) < num_merges and len(ids) > 1:
        counts = collections.Counter(zip(ids, ids[1:], strict=False))
        pair = counts.most_common(1)[0][0]  # the first of the most frequent, as max() gives
        merges[pair] = 256 + len(merges)
        ids = merge_with_a_flag(ids, pair, merges[pair])
    return list(merges)


def encode_by_lowest_rank(text, merges):
    """GPT-2's style: merge the pair present whose merge was learned first, until no learned pair is left."""
    rank = {pair: i for i, pair in enumerate(merges)}
    ids = list(text.encode("utf-8"))
    while len(ids) > 1:
        pair = min(zip(ids, ids[1:], strict=False), key=lambda p: rank.get(p, float("inf")))
        if pair not in rank:
            break
        ids = merge_with_a_flag(ids, pair, 256 + rank[pair])
    return ids


def decode_with_a_bytearray(ids, merges):
    pieces = {i: bytes([i]) for i in range(256)}
    for i, (first, second) in enumerate(merges):
        pieces[256 + i] = pieces[first] + pieces[second]
    out = bytearray()
    for i in ids:
        out += pieces[i]
    return out.decode("utf-8", "replace")


def decode_with_an_incremental_decoder(ids, merges):
    """Bytes fed to the codec one token at a time: it keeps a character's first bytes until the rest arrive."""
    import codecs

    pieces = [bytes([i]) for i in range(256)]
    for first, second in merges:
        pieces.append(pieces[first] + pieces[second])
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return "".join(decoder.decode(pieces[i]) for i in ids) + decoder.decode(b"", final=True)


def test_checks_accept_correct_answers_written_differently():
    for seed in (0, 1, 2):
        nb09.check_count_pairs(count_pairs_with_counter, seed=seed)
        nb09.check_merge(merge_with_a_flag, seed=seed)
        nb09.check_train_bpe(train_bpe_with_a_dict_of_merges, seed=seed)
        nb09.check_encode(encode_by_lowest_rank, seed=seed)
        nb09.check_decode(decode_with_a_bytearray, seed=seed)
        nb09.check_decode(decode_with_an_incremental_decoder, seed=seed)


def test_the_stand_ins_pass_their_checks():
    nb09.check_count_pairs(stand_ins.count_pairs)
    nb09.check_merge(stand_ins.merge)


# What train_bpe and encode below find under these names, as a learner's notebook would: broken on purpose.
def count_pairs(ids):
    raise NotImplementedError()


def merge(ids, pair, new_id):
    return ids


def train_bpe_calling_the_notebooks_functions(text, num_merges):
    ids, merges = list(text.encode()), []
    for i in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        merges.append(max(counts, key=counts.get))
        ids = merge(ids, merges[-1], 256 + i)
    return merges


def encode_calling_merge(text, merges):
    ids = list(text.encode())
    for i, pair in enumerate(merges):
        ids = merge(ids, pair, 256 + i)
    return ids


def test_train_bpe_and_encode_are_graded_with_correct_count_pairs_and_merge():
    nb09.check_train_bpe(train_bpe_calling_the_notebooks_functions)
    nb09.check_encode(encode_calling_merge)
    assert merge([1, 2], (1, 2), 256) == [1, 2]  # the broken versions are back afterwards


@pytest.mark.parametrize(
    "check", [nb09.check_count_pairs, nb09.check_merge, nb09.check_train_bpe, nb09.check_encode, nb09.check_decode]
)
def test_a_stub_is_reported_as_not_implemented_yet(check):
    with pytest.raises(NotImplementedYet, match="is not implemented yet"):
        check(raise_not_implemented)


def test_a_function_that_changes_its_input_list_is_named():
    def count_pairs_emptying_the_list(ids):
        counts = count_pairs_with_counter(ids)
        ids.clear()
        return counts

    with pytest.raises(CheckFailed, match="changed its input list in place"):
        nb09.check_count_pairs(count_pairs_emptying_the_list)


def test_the_oracle_agrees_with_a_plain_encoding_on_many_random_cases():
    rng = random.Random(0)
    compared = 0
    for _ in range(150):
        merges = nb09.bpe_merges(nb09.random_text(rng, rng.randint(0, 80)), rng.randint(0, 40), units="bytes")
        merges = nb09.without_repeated_tokens(merges)
        oracle = nb09.huggingface_bpe(merges)
        texts = [nb09.random_text(rng, rng.randint(0, 60)), "a" * rng.randint(0, 40), "aaaa ab" * rng.randint(1, 5)]
        for text in texts:
            plain = nb09.bpe_encoded(text, merges, order="learned")
            assert nb09.huggingface_ids(oracle, text) == plain == encode_by_lowest_rank(text, merges), (text, merges)
            compared += 1
    assert compared == 450


def test_runs_of_one_letter_merge_from_the_left_in_the_oracle_too():
    assert nb09.huggingface_ids(nb09.huggingface_bpe([(97, 97)]), "aaa") == [256, 97]
    oracle = nb09.huggingface_bpe([(97, 97), (256, 97)])
    assert nb09.huggingface_ids(oracle, "aaa") == [257]
    assert nb09.huggingface_ids(oracle, "aaaaa") == [256, 257]


def test_merges_that_make_the_same_bytes_are_left_out_of_the_oracle():
    merges = [(97, 98), (98, 99), (256, 99), (97, 257)]  # "abc" twice: "ab" + "c" and "a" + "bc"
    with pytest.raises(ValueError, match="same bytes"):
        nb09.huggingface_bpe(merges)
    assert nb09.without_repeated_tokens(merges) == merges[:3]
    for text in ["abc", "aabcbc", "abcabc"]:  # the check falls back to the plain encoding
        assert nb09._expected_encoding(text, merges, oracle=nb09._oracle(merges)) == encode_by_lowest_rank(text, merges)


def test_the_tie_break_is_first_occurrence():
    assert nb09.bpe_merges("dc ab", 1, units="bytes") == [(100, 99)]
    assert nb09.bpe_merges("aaaa", 5, units="bytes") == [(97, 97), (256, 256)]
    assert nb09.pair_counts([5, 5, 5], overlapping=True) == {(5, 5): 2}
    assert nb09.pair_counts([5, 5, 5, 5], overlapping=False) == {(5, 5): 2}


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb09.check_count_pairs, count_pairs_with_counter),
        (nb09.check_merge, merge_with_a_flag),
        (nb09.check_train_bpe, train_bpe_with_a_dict_of_merges),
        (nb09.check_encode, encode_by_lowest_rank),
        (nb09.check_decode, decode_with_a_bytearray),
    ],
)
def test_the_hidden_tests_seeds_change_the_inputs(check, answer):
    """A hidden test calls the check with another seed: it must try other inputs, not re-run the visible test. The
    first calls are hand cases that every seed shares, so all the calls are compared, not the first."""
    seeds = hidden_seeds(ASSIGNMENT, check.__name__)
    assert seeds, f"the notebook has no hidden test of {check.__name__}"
    visible = calls_of(check, answer, seed=0)
    for seed in seeds:
        assert calls_of(check, answer, seed=seed) != visible, f"seed={seed} makes the same calls as seed=0"


def test_the_ids_the_notebook_quotes_are_those_of_the_tokenizers_library():
    """Notebook 09 compares the learner's encoder with ids written out in a cell (no oracle is there to call): they
    are the library's for the merges learned from the notebook's example."""
    import ast

    import nbformat

    from autograder.repository import SOLUTIONS

    notebook = nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    (cell,) = [cell for cell in notebook.cells if "tokenizers_ids = {" in cell.source]
    quoted = ast.literal_eval(cell.source.split("tokenizers_ids = ", 1)[1].split("\n}", 1)[0] + "\n}")
    merges = nb09.bpe_merges("banana bandana", 4, units="bytes")
    tokenizer = nb09.huggingface_bpe(merges)
    assert quoted == {text: nb09.huggingface_ids(tokenizer, text) for text in quoted}


def test_the_mistakes_the_checks_name_are_what_they_say():
    """The variants the diagnoses compare with: a merge scanned from the right, a greedy longest match, and one
    replacement character per invalid byte (where bytes.decode writes one per cut-short character)."""
    assert nb09._merged([5, 5, 5], (5, 5), new_id=9, scanned_from="right") == [5, 9]
    assert nb09._merged([1, 2, 5, 5, 5, 1, 2], (1, 2), new_id=9, scanned_from="right") == [9, 5, 5, 5, 9]
    merges = [(97, 97), (256, 97)]  # "aa", then "aaa"
    assert nb09.bpe_encoded("aaaaa", merges, order="learned") == [256, 257]  # aa | aaa
    assert nb09.bpe_encoded("aaaaa", merges, order="longest match") == [257, 256]  # aaa | aa
    assert nb09.bpe_encoded("ba🙂", merges, order="longest match") == list("ba🙂".encode())
    assert b"\xe2\x82".decode(errors="replace") == "\ufffd"  # one for the cut-short '€', not two
    # As text, "11 2" and "1 21" hold "1 2".
    assert nb09._merged([11, 2, 1, 21, 1, 2], (1, 2), new_id=9, scanned_from="text") == [19, 91, 9]
    assert nb09._merged([12, 1, 2], (1, 2), new_id=9, scanned_from="text") == [12, 9]  # digits apart: no harm
    assert nb09.bpe_encoded("aaaaa", merges, order="restarting") == [97] * 5  # (256, 97) is not in the bytes
    assert nb09.bpe_encoded("aaab", [(97, 97), (98, 99), (256, 97)], order="stopping at an absent pair") == [
        256,
        97,
        98,
    ]


def test_a_count_mistake_is_named_only_where_one_mistake_explains_it():
    """With [a, a, a], leaving out the first pair, the last pair, or an overlapping occurrence give the same dict:
    the check names the mistake on a case that tells them apart."""

    def count_pairs_from_position_1(ids):
        return collections.Counter(zip(ids[1:], ids[2:], strict=False))

    with pytest.raises(CheckFailed, match=r"the first pair \(300, 7\), at position 0, was not counted"):
        nb09.check_count_pairs(count_pairs_from_position_1)
    with pytest.raises(CheckFailed, match=r"the only pair \(7, 300\) is missing"):
        nb09._diagnose_counts({}, {(7, 300): 1}, [7, 300], "count_pairs([7, 300])")


def test_a_crash_while_building_the_table_is_not_blamed_on_the_ids():
    def decode_reading_merges_one_level_deep(ids, merges):
        table = {i: bytes([i]) for i in range(256)}
        for i, pair in enumerate(merges):
            table[256 + i] = bytes(pair)
        return b"".join(table[i] for i in ids).decode(errors="replace")

    with pytest.raises(CheckFailed, match="With no ids to read, the crash came from the merges") as failure:
        nb09.check_decode(decode_reading_merges_one_level_deep)
    assert "merges[i]'s two ids" in str(failure.value)


def test_a_mistake_is_named_only_where_it_explains_every_case():
    """A known mistake that gives the learner's result on one case, but not on the others, is not named: encoding
    with a loop that returns after merge 0 once matched "only the merges present in the bytes" on one case."""

    def encode_with_only_merge_0(text, merges):
        ids = list(text.encode())
        return merge_with_a_flag(ids, merges[0], 256) if merges else ids

    with pytest.raises(CheckFailed, match="only the first merge was applied") as failure:
        nb09.check_encode(encode_with_only_merge_0)
    assert "before any merge" not in str(failure.value)

    def encode_retraining_on_the_text(text, merges):  # no known mistake: the message says only what it sees
        ids = list(text.encode())
        for i, pair in enumerate(nb09.bpe_merges(text, len(merges), units="bytes")):
            ids = merge_with_a_flag(ids, pair, 256 + i)
        return ids

    with pytest.raises(CheckFailed, match="your ids do not spell the text's UTF-8 bytes") as failure:
        nb09.check_encode(encode_retraining_on_the_text)
    assert not any(message in str(failure.value) for message in nb09.ORDER_MISTAKES.values())


def test_the_order_of_the_pairs_is_checked_only_once_every_count_is_right():
    """Reversed pairs give the expected dict on [b, a, a, b], in another order: the earlier [a, b] shows the
    mistake itself."""

    def count_reversed_pairs(ids):
        return collections.Counter(zip(ids[1:], ids, strict=False))

    with pytest.raises(CheckFailed, match="every pair is reversed") as failure:
        nb09.check_count_pairs(count_reversed_pairs)
    assert "order of their first occurrence" not in str(failure.value)


def test_a_merge_that_replaces_too_much_is_called_overlapping_only_when_it_is():
    assert nb09._merged([5, 5, 5], (5, 5), new_id=9, matching="overlapping") == [9, 9]
    assert nb09._merged([5, 5, 5, 5], (5, 5), new_id=9, matching="overlapping") == [9, 9, 9]
    assert nb09._merged([7, 42, 300], (7, 300), new_id=9, matching="first id") == [9, 300]
    with pytest.raises(CheckFailed, match="ids that are not such an occurrence were replaced") as failure:
        nb09._diagnose_merge([9, 300], [7, 42, 300], [7, 42, 300], (7, 300), 9, "merge([7, 42, 300], (7, 300), 9)")
    assert "overlapping" not in str(failure.value)


def test_the_variants_encode_as_their_names_say():
    merges = [(97, 97), (256, 97), (97, 32)]  # "aa", "aaa", "a "
    assert nb09.bpe_encoded_by_prefix("aaa a", merges) == [
        [97, 97, 97, 32, 97],
        [256, 97, 32, 97],
        [257, 32, 97],
        [257, 32, 97],
    ]
    assert nb09.bpe_encoded("a aa", merges, order="word by word") == [97, 32, 256]
    assert nb09.bpe_encoded("a aa", merges, order="learned") == [258, 256]
    assert nb09.bpe_encoded("aab", [(97, 97), (97, 98)], order="highest rank first") == [97, 257]
    # (256, 256) is no merge: ranked 0, it comes before (256, 97), rank 1, and the loop stops.
    assert nb09.bpe_encoded("aaaaa", [(97, 97), (256, 97)], order="unknown pairs ranked 0") == [256, 256, 97]
    assert nb09.bpe_encoded("baa", [(97, 97)], order="unknown pairs ranked 0") == [98, 97, 97]  # (98, 97) first


def test_a_train_bpe_that_keeps_its_merges_between_calls_is_named():
    learned = []  # a global list, filled by every call

    def train_bpe_with_a_global_list(text, num_merges):
        learned.extend(train_bpe_with_a_dict_of_merges(text, num_merges))
        return learned

    with pytest.raises(CheckFailed, match="keeps merges from earlier calls"):
        nb09.check_train_bpe(train_bpe_with_a_global_list)
