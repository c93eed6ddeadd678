import random

from bson import ObjectId

from enginebench.stores.keys import decode_key, encode_key, prefix_successor


def test_integer_order_matches_bytes_order():
    values = [-(2**63), -5, -1, 0, 1, 2, 255, 256, 2**40, 2**63 - 1]
    encoded = [encode_key((v,)) for v in values]
    assert encoded == sorted(encoded)


def test_tuple_order_matches_bytes_order():
    rng = random.Random(7)
    tuples = [(rng.randint(-50, 50), rng.choice([b"", b"a", b"a\x00", b"ab", b"\x00", b"b"]), rng.random() - 0.5)
              for _ in range(500)]
    by_bytes = sorted(tuples, key=encode_key)
    assert by_bytes == sorted(tuples)


def test_descending_field_reverses_order():
    values = [(1, b"x"), (1, b"xy"), (2, b""), (3, b"\x00\x01")]
    keys = [encode_key(v, (1, -1)) for v in values]
    assert sorted(range(4), key=lambda i: keys[i]) == [1, 0, 2, 3]


def test_round_trip():
    oid = ObjectId()
    value = (123456789, -7, b"da\x00ta", "text", oid, 2.5, None, True)
    assert decode_key(encode_key(value)) == value


def test_prefix_successor_bounds_every_extension():
    prefix = encode_key((5, 7))
    succ = prefix_successor(prefix)
    for extra in (b"", b"\x00", b"\xff" * 4, encode_key((2**62,))):
        assert prefix <= prefix + extra < succ
    assert prefix_successor(b"\xff\xff") is None
