"""UserModel's own rules: the record a row keeps (and rebuilds from, in another process), the
vocabulary read from the module or given, the source hash, and the module tree's repeated blocks
and collapsed paths."""

import pickle
import shutil

import pytest
from torch import nn

from lmperf.analysis.module_flops import counted_flops
from lmperf.errors import UsageError
from lmperf.model.module_tree import collapse, repeated_blocks_path, repeated_containers
from lmperf.model.user import UserModel, vocab_of
from scratch_model import PARAMS, SCRATCH, forward_flops


def test_record_round_trip_and_pickle_rebuild_the_model():
    model = UserModel.from_factory(SCRATCH, '{"num_layers": 3}')
    assert UserModel.from_record(model.record()) == model
    again = pickle.loads(pickle.dumps(model))  # how a data-parallel rank receives it
    assert again == model and model.record()["arguments"] == {"num_layers": 3}
    built = again.build("cpu")
    assert len(built.layers) == 3 and sum(p.numel() for p in built.parameters()) == model.params


def test_vocabulary_given_or_read():
    assert UserModel.from_factory(SCRATCH).vocab_size == 256  # the LM head's output width (the last nn.Linear's)
    assert UserModel.from_factory(SCRATCH, None, 100).vocab_size == 100  # token ids below 100 still index its table
    with pytest.raises(UsageError, match="vocab 300"):
        UserModel.from_factory(SCRATCH, None, 300)  # wider than its logits


def test_vocab_of_prefers_what_the_module_states():
    head = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10))
    assert vocab_of(head) == 10
    head.vocab_size = 12
    assert vocab_of(head) == 12
    head.config = type("Config", (), {"vocab_size": 14})()
    assert vocab_of(head) == 14


def test_source_hash_follows_the_files_content_not_their_place(tmp_path):
    source = SCRATCH.rsplit(":", 1)[0]
    first, second = tmp_path / "a" / "scratch_lm.py", tmp_path / "b" / "scratch_lm.py"
    for copy in (first, second):
        copy.parent.mkdir()
        shutil.copy(source, copy)
    second.write_text(second.read_text() + "\n# changed\n")
    hashes = [UserModel.from_factory(f"{path}:build").source_hash for path in (source, first, second)]
    assert hashes[0] == hashes[1] != hashes[2]
    assert UserModel.from_factory(f"{first}:build").params == PARAMS


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2)])  # more, smaller
        self.layers = nn.ModuleList([nn.Linear(16, 16), nn.Linear(16, 16)])  # more parameters
        self.parts = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])  # not one class: not repeated


def test_repeated_blocks_and_collapsed_paths():
    model = Mixed()
    assert repeated_blocks_path(model) == "layers"
    assert repeated_containers(model) == ["heads", "layers"]
    assert collapse("layers.1.weight", ["layers"]) == "layers.*.weight"
    assert collapse("layers.1", ["layers"]) == "layers.*"
    assert collapse("parts.0", ["layers"]) == "parts.0"
    assert collapse("layers_extra.1", ["layers"]) == "layers_extra.1"


def test_meta_device_first_then_a_real_sequence():
    """The from-scratch model reads on the meta device; a module needing real values falls back."""

    class NeedsValues(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(20, 4)
            self.head = nn.Linear(4, 20, bias=False)

        def forward(self, tokens):
            assert int(tokens.max()) < 20  # .item() on meta tensors raises
            return self.head(self.embedding(tokens))

    model = UserModel.of(NeedsValues())
    assert (model.vocab_size, model.head, model.params) == (20, "head", 160)
    assert counted_flops(model, 8).where == "cpu" and counted_flops(UserModel.from_factory(SCRATCH), 8).where == "meta"
    assert counted_flops(model, 8).matmul(3, "forward") == 3 * 2 * 8 * 4 * 20  # one head matmul per sequence


def test_compiled_blocks_count_for_the_module_that_calls_them():
    counted = counted_flops(UserModel.from_factory(SCRATCH), 8)
    regions = counted.by_region(2, "forward", ["layers"])
    folded = counted.by_region(2, "forward", ["layers"], compiled_blocks="layers")
    inside = sum(flops for region, flops in regions.items() if region.startswith("layers."))
    assert inside > 0 and not any(region.startswith("layers.") for region in folded)
    assert folded["(model)"] == regions["(model)"] + inside == forward_flops(2, 8) - regions["lm_head"]
