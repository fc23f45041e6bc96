"""Wrong answers to notebook 09: counting and merging pairs, training BPE, encoding and decoding."""

# Later exercises call earlier ones by name, as they do in the notebook; these stand for those names.
from transformer_course.checks.stand_ins import count_pairs, merge
from wrong_answers import wrong_answer

ASSIGNMENT = "09_tokenization"

# Exercise 1: count_pairs ---------------------------------------------------------------------------------


@wrong_answer("count_pairs", message="you counted overlapping occurrences once")
def count_pairs_skipping_overlaps(ids):
    counts = {}
    last_counted = {}
    for i in range(len(ids) - 1):
        pair = (ids[i], ids[i + 1])
        if last_counted.get(pair) == i - 1:  # the same pair just before: one occurrence, not two
            continue
        counts[pair] = counts.get(pair, 0) + 1
        last_counted[pair] = i
    return counts


@wrong_answer("count_pairs", message="the last pair")
def count_pairs_stopping_one_position_early(ids):
    counts = {}
    for i in range(len(ids) - 2):
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong_answer("count_pairs", message="order of their first occurrence")
def count_pairs_sorted(ids):
    counts = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return dict(sorted(counts.items()))


@wrong_answer("count_pairs", message="the first pair")
def count_pairs_starting_at_position_1(ids):
    counts = {}
    for i in range(1, len(ids) - 1):
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong_answer("count_pairs", message="every pair is reversed")
def count_pairs_with_reversed_pairs(ids):
    counts = {}
    for i in range(len(ids) - 1):
        pair = (ids[i + 1], ids[i])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong_answer("count_pairs", message="a pair of a token with itself")
def count_pairs_skipping_a_token_next_to_itself(ids):
    counts = {}
    for a, b in zip(ids, ids[1:]):
        if a != b:  # a token next to itself taken for no pair
            counts[(a, b)] = counts.get((a, b), 0) + 1
    return counts


@wrong_answer("count_pairs", message="you counted every two ids of the list, neighbours or not")
def count_pairs_of_any_two_ids(ids):
    from itertools import combinations

    counts = {}
    for pair in combinations(ids, 2):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


@wrong_answer("count_pairs", message="the last id has no next id")
def count_pairs_reading_past_the_end(ids):
    counts = {}
    for i in range(len(ids)):
        pair = (ids[i], ids[i + 1])  # at the last id, ids[i + 1] does not exist
        counts[pair] = counts.get(pair, 0) + 1
    return counts


# Exercise 2: merge ---------------------------------------------------------------------------------------


@wrong_answer("merge", message="you merged overlapping occurrences")
def merge_overlapping_occurrences(ids, pair, new_id):
    merged = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            merged.append(new_id)
            if i + 2 < len(ids) and (ids[i + 1], ids[i + 2]) == pair:
                i += 1  # the next position starts the pair too: replace it as well
            else:
                i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


@wrong_answer("merge", message="the last id was dropped")
def merge_forgetting_the_last_id(ids, pair, new_id):
    merged = []
    i = 0
    while i < len(ids) - 1:
        if (ids[i], ids[i + 1]) == pair:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


@wrong_answer("merge", message="after a replacement, skip both")
def merge_stepping_one_id_after_a_replacement(ids, pair, new_id):
    merged = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            merged.append(new_id)
            i += 1  # the second id of the pair is visited again
        else:
            merged.append(ids[i])
            i += 1
    return merged


@wrong_answer("merge", message="you found the occurrences scanning from the right")
def merge_scanning_from_the_right(ids, pair, new_id):
    merged = []
    i = len(ids) - 1
    while i >= 0:
        if i >= 1 and (ids[i - 1], ids[i]) == pair:
            merged.append(new_id)
            i -= 2
        else:
            merged.append(ids[i])
            i -= 1
    return merged[::-1]


@wrong_answer("merge", message="The digits of an id were joined with a neighbour's")
def merge_by_replacing_text(ids, pair, new_id):
    text = " ".join(str(i) for i in ids)
    text = text.replace(f"{pair[0]} {pair[1]}", str(new_id))  # "11 2" holds "1 2" too
    return [int(number) for number in text.split()]


@wrong_answer("merge", message="a list never equals a tuple")
def merge_comparing_a_slice_with_the_tuple(ids, pair, new_id):
    merged = []
    i = 0
    while i < len(ids):
        if ids[i : i + 2] == pair:  # a list, never equal to the tuple
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


@wrong_answer("merge", message="A pair starts only at positions 0 … len(ids) - 2")
def merge_reading_past_the_end(ids, pair, new_id):
    merged = []
    i = 0
    while i < len(ids):
        if ids[i] == pair[0] and ids[i + 1] == pair[1]:  # at the last id, ids[i + 1] does not exist
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


@wrong_answer("merge", message="you replaced where only the first id matched")
def merge_comparing_the_first_id_only(ids, pair, new_id):
    merged = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0]:  # the second id is never compared
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


@wrong_answer("merge", message="you compared the pair reversed")
def merge_comparing_the_reversed_pair(ids, pair, new_id):
    merged = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i + 1], ids[i]) == pair:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


# Exercise 3: train_bpe -----------------------------------------------------------------------------------


@wrong_answer("train_bpe", message="Break ties by first occurrence")
def train_bpe_breaking_ties_by_the_smallest_pair(text, num_merges):
    ids = list(text.encode())
    merges = []
    for i in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -p[0], -p[1]))
        ids = merge(ids, pair, 256 + i)
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="Break ties by first occurrence")
def train_bpe_breaking_ties_by_the_last_occurrence(text, num_merges):
    ids = list(text.encode())
    merges = []
    for i in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        best = None
        for pair, count in counts.items():
            if best is None or count >= counts[best]:
                best = pair
        ids = merge(ids, best, 256 + i)
        merges.append(best)
    return merges


@wrong_answer("train_bpe", message="yours start at 255")
def train_bpe_with_ids_from_255(text, num_merges):
    ids = list(text.encode())
    merges = []
    for i in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=counts.get)
        ids = merge(ids, pair, 255 + i)
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="yours start at 257")
def train_bpe_with_ids_from_257(text, num_merges):
    ids = list(text.encode())
    merges = []
    for i in range(1, num_merges + 1):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=counts.get)
        ids = merge(ids, pair, 256 + i)
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="every merge created the same id, 256")
def train_bpe_with_one_new_id(text, num_merges):
    ids = list(text.encode())
    merges = []
    for _ in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=counts.get)
        ids = merge(ids, pair, 256)
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="merge each chosen pair into the sequence before counting again")
def train_bpe_dropping_the_merged_list(text, num_merges):
    ids = list(text.encode())
    merges = []
    for i in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=counts.get)
        merge(ids, pair, 256 + i)  # merge returns a new list, thrown away here
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="you trained on characters")
def train_bpe_on_characters(text, num_merges):
    ids = [ord(character) for character in text]
    merges = []
    for i in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=counts.get)
        ids = merge(ids, pair, 256 + i)
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="stop early when count_pairs returns an empty dict")
def train_bpe_without_stopping(text, num_merges):
    ids = list(text.encode())
    merges = []
    for i in range(num_merges):
        counts = count_pairs(ids)
        pair = max(counts, key=counts.get)
        ids = merge(ids, pair, 256 + i)
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="nor made by a merge so far")
def train_bpe_with_the_next_unused_id(text, num_merges):
    ids = list(text.encode())
    merges = []
    for _ in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=counts.get)
        ids = merge(ids, pair, max(ids) + 1)  # one more than the largest id in the sequence
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="keeps merges from earlier calls")
def train_bpe_with_a_default_list(text, num_merges, merges=[]):
    ids = list(text.encode())
    for i in range(num_merges):
        counts = count_pairs(ids)
        if not counts:
            break
        pair = max(counts, key=counts.get)
        ids = merge(ids, pair, 256 + i)
        merges.append(pair)
    return merges


@wrong_answer("train_bpe", message="as if the pairs were counted once, before any merge")
def train_bpe_counting_once(text, num_merges):
    ids = list(text.encode())
    counts = count_pairs(ids)  # counted once, before any merge
    merges = []
    for i in range(num_merges):
        if not counts:
            break
        pair = max(counts, key=counts.get)
        del counts[pair]
        ids = merge(ids, pair, 256 + i)
        merges.append(pair)
    return merges


# Exercise 4: encode --------------------------------------------------------------------------------------


@wrong_answer("encode", message="another order than the one in which they were learned")
def encode_most_frequent_pair_first(text, merges):
    ids = list(text.encode())
    while True:
        counts = count_pairs(ids)
        known = [pair for pair in counts if pair in merges]
        if not known:
            return ids
        pair = max(known, key=counts.get)
        ids = merge(ids, pair, 256 + merges.index(pair))


@wrong_answer("encode", message="from the last learned to the first")
def encode_in_reverse_order(text, merges):
    ids = list(text.encode())
    for i in reversed(range(len(merges))):
        ids = merge(ids, merges[i], 256 + i)
    return ids


@wrong_answer("encode", message="occurs in the text's bytes before any merge")
def encode_with_pairs_present_at_the_start(text, merges):
    ids = list(text.encode())
    present = count_pairs(ids)  # counted once, before any merge
    for i, pair in enumerate(merges):
        if pair in present:
            ids = merge(ids, pair, 256 + i)
    return ids


@wrong_answer("encode", message="you gave a pair that is no merge the rank 0")
def encode_ranking_unknown_pairs_0(text, merges):
    ids = list(text.encode())
    rank = {pair: i for i, pair in enumerate(merges)}
    while len(ids) >= 2:
        counts = count_pairs(ids)
        pair = min(counts, key=lambda p: rank.get(p, 0))
        if pair not in rank:
            break
        ids = merge(ids, pair, 256 + rank[pair])
    return ids


@wrong_answer("encode", message="you replaced every learned pair in one scan from the left")
def encode_in_one_pass(text, merges):
    ids = list(text.encode())
    rank = {pair: i for i, pair in enumerate(merges)}
    merged, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) in rank:
            merged.append(256 + rank[(ids[i], ids[i + 1])])
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


@wrong_answer("encode", message="you started from the characters")
def encode_characters(text, merges):
    ids = [ord(character) for character in text]
    for i, pair in enumerate(merges):
        ids = merge(ids, pair, 256 + i)
    return ids


@wrong_answer("encode", message="the merges were not applied one after another, in learned order")
def encode_by_sorted_pairs(text, merges):
    ids = list(text.encode())
    for pair in sorted(merges):
        ids = merge(ids, pair, 256 + merges.index(pair))
    return ids


@wrong_answer("encode", message="you took the longest known token at each position")
def encode_by_longest_match(text, merges):
    vocab = {bytes([b]): b for b in range(256)}
    pieces = [bytes([b]) for b in range(256)]
    for i, (first, second) in enumerate(merges):
        pieces.append(pieces[first] + pieces[second])
        vocab[pieces[-1]] = 256 + i
    data = text.encode()
    ids = []
    start = 0
    while start < len(data):
        end = len(data)
        while data[start:end] not in vocab:  # the longest known token that starts here
            end -= 1
        ids.append(vocab[data[start:end]])
        start = end
    return ids


@wrong_answer("encode", message="each merge started again from the text's bytes")
def encode_merging_into_the_bytes_each_time(text, merges):
    ids = list(text.encode())
    result = ids
    for i, pair in enumerate(merges):
        result = merge(ids, pair, 256 + i)  # ids never changes: each merge starts from the bytes
    return result


@wrong_answer("encode", message="you stopped at the first merge whose pair is absent")
def encode_stopping_at_an_absent_pair(text, merges):
    ids = list(text.encode())
    for i, pair in enumerate(merges):
        if pair not in count_pairs(ids):
            break
        ids = merge(ids, pair, 256 + i)
    return ids


@wrong_answer("encode", message="only the first merge was applied")
def encode_returning_inside_the_loop(text, merges):
    ids = list(text.encode())
    for i, pair in enumerate(merges):
        ids = merge(ids, pair, 256 + i)
        return ids
    return ids


@wrong_answer("encode", message="the last merge of the list was never applied")
def encode_stopping_one_merge_short(text, merges):
    ids = list(text.encode())
    for i in range(len(merges) - 1):
        ids = merge(ids, merges[i], 256 + i)
    return ids


@wrong_answer("encode", message="you encoded each word (each part between spaces) on its own")
def encode_word_by_word(text, merges):
    ids = []
    for n, word in enumerate(text.split(" ")):
        if n:
            ids.append(32)  # the space between words
        word_ids = list(word.encode())
        for i, pair in enumerate(merges):
            word_ids = merge(word_ids, pair, 256 + i)
        ids += word_ids
    return ids


@wrong_answer("encode", message="the pair present whose merge was learned last")
def encode_by_the_highest_rank_first(text, merges):
    rank = {pair: i for i, pair in enumerate(merges)}
    ids = list(text.encode())
    while True:
        present = [pair for pair in count_pairs(ids) if pair in rank]
        if not present:
            return ids
        pair = max(present, key=rank.get)  # the merge learned last
        ids = merge(ids, pair, 256 + rank[pair])


# Exercise 5: decode --------------------------------------------------------------------------------------


@wrong_answer("decode", message="you decoded each token on its own")
def decode_token_by_token(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)


@wrong_answer("decode", message='errors="replace"')
def decode_without_replacing_errors(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return b"".join(vocab[i] for i in ids).decode("utf-8")


@wrong_answer("decode", message='you decoded with errors="ignore"')
def decode_ignoring_errors(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="ignore")


@wrong_answer("decode", message="you decoded the bytes as Latin-1")
def decode_as_latin_1(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return b"".join(vocab[i] for i in ids).decode("latin-1")


@wrong_answer("decode", message="Ids 256 and above are merged tokens")
def decode_bytes_only(ids, merges):
    vocab = {b: bytes([b]) for b in range(256)}
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong_answer("decode", message="the merged ids (256 and above) were left out")
def decode_skipping_merged_ids(ids, merges):
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


@wrong_answer("decode", message="you wrote one '\ufffd' for each byte that is not part of a valid character")
def decode_replacing_each_invalid_byte(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    data = b"".join(vocab[i] for i in ids)
    text = ""
    i = 0
    while i < len(data):
        for length in (1, 2, 3, 4):  # a UTF-8 character is 1 to 4 bytes
            try:
                text += data[i : i + length].decode("utf-8")
                i += length
                break
            except UnicodeDecodeError:
                pass
        else:
            text += "\ufffd"  # no character starts here: replace this byte
            i += 1
    return text


@wrong_answer("decode", message="With no ids to read, the crash came from the merges")
def decode_with_merges_of_bytes_only(ids, merges):
    vocab = {b: bytes([b]) for b in range(256)}
    for i, (first, second) in enumerate(merges):
        vocab[256 + i] = bytes([first, second])  # fails once a part is a merged id, 256 or above
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong_answer("decode", message="Build the bytes of each merged token in the order of the merges")
def decode_with_ids_from_257(ids, merges):
    vocab = {b: bytes([b]) for b in range(256)}
    for i, (first, second) in enumerate(merges, 1):
        vocab[256 + i] = vocab[first] + vocab[second]
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong_answer("decode", message="str() of bytes gives the way they are written in code")
def decode_with_str(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return str(b"".join(vocab[i] for i in ids))


@wrong_answer("decode", message="the valid characters around them were lost too")
def decode_replacing_the_whole_text(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    try:
        return b"".join(vocab[i] for i in ids).decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd"


@wrong_answer("decode", message='you decoded with errors="backslashreplace"')
def decode_with_backslashes(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="backslashreplace")


@wrong_answer("decode", message="the two parts of a merged token were joined in the wrong order")
def decode_with_the_parts_swapped(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[second] + vocab[first])
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong_answer("decode", message="bytes(...) makes bytes from ints")
def decode_with_bytes_of_byte_strings(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return bytes(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong_answer("decode", message="you joined the tokens' bytes with b' ' between them")
def decode_joining_with_spaces(ids, merges):
    vocab = [bytes([b]) for b in range(256)]
    for first, second in merges:
        vocab.append(vocab[first] + vocab[second])
    return b" ".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@wrong_answer("decode", message="a merged token whose parts are merged tokens too was left out")
def decode_merged_tokens_one_level_deep(ids, merges):
    data = b""
    for i in ids:
        if i < 256:
            data += bytes([i])
        else:
            first, second = merges[i - 256]
            if first < 256 and second < 256:  # a token made of merged tokens is skipped
                data += bytes([first, second])
    return data.decode("utf-8", errors="replace")
