"""The pretrained encoder that notebook 13 loads: its weights file loads into the notebook's model, which then
computes what Hugging Face's BertForMaskedLM computes from the same file, the segment embedding included."""

import os

import torch

from transformer_course.checks import stand_ins
from transformer_course.pretrained import WEIGHTS, load_pretrained, pretrained_sizes

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import BertConfig, BertForMaskedLM


def test_the_notebooks_model_computes_what_bert_computes_from_the_file():
    saved = torch.load(WEIGHTS)
    bert = BertForMaskedLM(BertConfig.from_dict(saved["config"]))
    bert.load_state_dict({name: tensor.float() for name, tensor in saved["state_dict"].items()}, strict=False)
    sizes = pretrained_sizes()
    model = load_pretrained(stand_ins.EncoderForMaskedLM(*sizes.values()))
    ids = torch.randint(5, sizes["vocab_size"], (2, 20))
    padding_mask = torch.ones(2, 20, dtype=torch.bool)
    padding_mask[1, 12:] = False
    with torch.no_grad():
        expected = bert.eval()(input_ids=ids, attention_mask=padding_mask.long()).logits
        assert torch.allclose(model(ids, padding_mask)[padding_mask], expected[padding_mask], atol=1e-4)


def test_the_segment_embedding_is_not_zero_so_the_folding_is_tested():
    segment = torch.load(WEIGHTS)["state_dict"]["bert.embeddings.token_type_embeddings.weight"]
    assert segment.float().abs().max() > 1e-3
