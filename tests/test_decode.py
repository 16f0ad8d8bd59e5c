"""The decode loop's KV store on its own: one tensor for every layer or a tensor per layer, the same reads."""

import pytest
import torch

from tts_engine.backends.decode import KVStore, bucket


def _like(heads_per_layer, dim=4, width=3):
    return [(torch.randn(2, h, width, dim), torch.randn(2, h, width, dim)) for h in heads_per_layer]


@pytest.mark.parametrize("heads", [(2, 2, 2), (2, 1, 2)], ids=["one tensor", "a tensor per layer"])
@pytest.mark.parametrize("static", [False, True])
def test_store_writes_reads_and_moves_rows_alike_in_either_layout(heads, static):
    like = _like(heads)
    store = KVStore.allocate(like, rows=4, columns=6, static=static)
    assert (store.kv is not None) == (len(set(heads)) == 1)
    store.use(4, 6)
    for step in range(3):  # three columns, every layer, every row a distinct value
        store.write_index.fill_(store.length)
        for layer, h in enumerate(heads):
            new = torch.full((4, h, 1, 4), float(step)) + torch.arange(4.0)[:, None, None, None] * 10 + layer * 100
            keys, values = store.update(new, -new, layer)
            assert keys.shape[2] == (6 if static else step + 1)
        store.advance()
    columns = torch.tensor([0, 2])
    for layer, (k, v) in enumerate(store.row_layers(3, columns)):
        assert k[:, :, 0].tolist() == [[30.0 + layer * 100, 32.0 + layer * 100]] * heads[layer]
        assert torch.equal(v, -k)
    store.move(torch.tensor([3]), torch.tensor([0]))  # row 3 fills slot 0
    assert [torch.equal(a[0], b[0]) for a, b in zip(store.row_layers(0, columns), store.row_layers(3, columns))] == [
        True
    ] * len(heads)


def test_static_buckets_are_powers_of_two_of_at_least_two():
    assert [bucket(n) for n in (1, 2, 3, 4, 5, 100, 128, 129)] == [2, 2, 4, 4, 8, 128, 128, 256]
