"""From the round-7 hostile review: role guessing reads about 16 MiB of packed records, and a first
record past that was the whole sample: its roles (a template instruction, no answer field) were
guessed for every record, where a list of the same records guessed instruction,input and output."""
from auditor.io.table import Packer
from auditor.roles import resolve_roles


def test_one_huge_first_record_does_not_decide_the_roles_alone():
    big = {"instruction": "Summarise the text below.", "input": "word " * 3_600_000}     # 18 MB
    rest = [{"instruction": f"Task {i}: do thing {i * 7} now", "input": f"input number {i}", "output": f"out {i}"}
            for i in range(300)]
    packer = Packer()
    packer.add([big] + rest)
    packed = resolve_roles(packer.rows())
    listed = resolve_roles([big] + rest)
    assert (listed.text, listed.answer) == ("instruction,input", "output")
    assert (packed.text, packed.answer) == (listed.text, listed.answer)
