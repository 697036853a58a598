"""The reference decoder: what the product's JVM decoder (jvm/, jobs/flow/functions.py) must
do to each landed line, written plainly in Python. Not on any run path; the tests hold the
JVM decoder to it line by line (tests/integration/test_jvm_decoder.py) and its properties are
tested here (tests/unit/test_poison_properties.py).

    decode.py       batches of lines -> fields, or the reason a line cannot be used
    line_reader.py  one line the careful way: its reason, or what it rescued
    depth.py        how deeply a line nests, found without recursing
"""
