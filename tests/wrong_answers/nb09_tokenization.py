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


@wrong_answer("encode", message="another order than the one in which they were learned")
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
